import FileRange
// The fault origin of the tests: Tests/Origins/download_origin.py, a separate process that serves a folder and
// injects 500s, resets, truncated bodies, wrong Content-Length, stalls, corrupt TS and 404s at seeded random.
public import Foundation
public import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The fault origin, stopped by closing its stdin.
public final class FaultOrigin {
    let child: ChildProcess
    public let port: Int
    /// The origin's request log: one line per request, its path, status and fault.
    public let log: URL

    /// Starts the origin serving `root` with the script's `arguments` (`--seed`, `--rate`, ...); nil (and a recorded
    /// failure) when python3 is missing or the origin did not start.
    public init?(root: URL, arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        guard let python = ExternalProgram.find("python3", sourceLocation: sourceLocation) else { return nil }
        log = TemporaryFolderRegistry.make(prefix: "origin-", sourceLocation: sourceLocation).appendingPathComponent(
            "origin.log")
        child = try await ChildProcess(
            python, [Self.script.path, "--root", root.path, "--log", log.path] + arguments, standardInput: true)
        let text = await child.lines(1, within: 20).first ?? ""
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
            Issue.record("the fault origin did not start: \(text)", sourceLocation: sourceLocation)
            return nil
        }
        self.port = port
    }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// The fault of each request (third column of the log).
    public var faults: [String] {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            $0.split(separator: " ").dropFirst(2).first.map(String.init)
        }
    }

    /// Stops the origin and returns once it has ended.
    public func stop() async {
        // Closing stdin stops it; then the signals (a child of a test thread may have SIGTERM blocked).
        child.closeInput()
        await child.waitForExit(within: 2)
        await child.stop(grace: 0.5)
    }

    /// Stops the origin from where a task cannot wait (a `defer`, its `deinit`): stdin closed now, then, on a
    /// thread of its own, 2 s for it to end and ``ChildProcess/stop(grace:)``'s signals.
    public func stop() {
        child.closeInput()
        let child = child
        // A thread of its own, not FileRange's pool, which the code under test needs.
        Thread.detachNewThread {
            let deadline = Date().addingTimeInterval(2)
            while child.isRunning, Date() < deadline { usleep(20_000) }
            child.stop(grace: 0.5)
        }
    }

    /// The origin stops with the test; its log goes with the test's temporary folders (the suite using it must be
    /// marked `.temporaryFolders`).
    deinit { stop() }
}

extension FaultOrigin {
    /// The origin's script, found from this file's path (Packages/TestSupport/Sources/TestSupport/ in the repository).
    static var script: URL {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<5 { root = root.deletingLastPathComponent() }
        return root.appendingPathComponent("Tests/Origins/download_origin.py")
    }
}
