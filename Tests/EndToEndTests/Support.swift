import FileRange
// Shared helpers for the end-to-end tests: locating the built tools and the repository, running processes,
// and finding the outside programs (ffprobe, curl, ...) that the tests use as real peers.
import Foundation
import Testing

enum EndToEnd {
    /// The repository root, found from this file's path.
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The folder that holds the test bundle, where SwiftPM also puts the built executables.
    static var productsDirectory: URL {
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var dir = exe.deletingLastPathComponent()
        // On Darwin the test bundle is <products>/X.xctest/Contents/MacOS/X.
        while dir.pathExtension == "xctest" || dir.lastPathComponent == "MacOS" || dir.lastPathComponent == "Contents" {
            dir = dir.deletingLastPathComponent()
        }
        return dir
    }

    /// The path of a built executable product; records a failure when it was not built.
    static func product(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) -> URL? {
        let url = productsDirectory.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            Issue.record("built product \(name) not found in \(productsDirectory.path)", sourceLocation: sourceLocation)
            return nil
        }
        return url
    }

    /// The path of an outside program on PATH (or /usr/sbin); records a failure when it is missing, since
    /// Scripts/deps.sh installs every program the tests need.
    static func tool(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) -> URL? {
        ExternalProgram.find(name, sourceLocation: sourceLocation)
    }

    /// Runs a program to completion, feeding `input` on stdin; stdout and stderr are collected. With a `timeout`, a
    /// program still running after it is killed and the hang recorded as a failure.
    static func run(
        _ executable: URL, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
        currentDirectory: URL? = nil, timeout: Double? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ProcessResult {
        try await ExternalProgram.run(
            executable, arguments, input: input, environment: environment, currentDirectory: currentDirectory,
            timeout: timeout, sourceLocation: sourceLocation)
    }
}

/// A value made once per test process by work that waits (a fixture ffmpeg encodes), for every test that needs it:
/// the first to ask starts the work, the others await the same result; no thread is held meanwhile (a `static let`
/// made by a blocking call would hold a cooperative thread, and every other test that reached it, until it was made).
final class SharedFixture<Value: Sendable>: Sendable {
    private let make: @Sendable () async -> Value
    private let task = Locked<Task<Value, Never>?>(nil)

    init(_ make: @escaping @Sendable () async -> Value) { self.make = make }

    var value: Value {
        get async {
            let task = task.withLock { task in
                if let task { return task }
                let started = Task { await make() }
                task = started
                return started
            }
            return await task.value
        }
    }
}
