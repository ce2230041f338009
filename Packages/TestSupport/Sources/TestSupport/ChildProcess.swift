import FileRange
// The one owner of the long-running child processes tests start (servers, origins, proxies, players): output
// collected as it comes, lines awaited with a deadline, and the process stopped when the test is done with it —
// by stop(), when the last reference goes, or when the test process exits — so that nothing a test started
// outlives the run. Scripts/test.sh fails when anything does.
public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

public final class ChildProcess: Sendable {
    /// The running program (for its pid, status and termination reason).
    public let process: Process
    private let output = Locked(Data())
    private let errors = Locked(Data())
    private let input: Pipe?
    private let stopSignal: Int32

    /// Starts `executable`. Its stdout and stderr are collected (stderr goes to the test's own stderr instead when
    /// `passStandardError` is set); with `standardInput` its stdin is a pipe that ``write(_:)`` feeds, otherwise
    /// /dev/null. ``stop()`` sends `stopSignal` first (SIGTERM, or SIGINT for a program that treats it as Ctrl-C).
    /// The spawn runs in ``blocking(_:)``: a fork and exec takes a while on a loaded machine (Foundation closes every
    /// descriptor up to the highest open one in the child), which Swift's cooperative threads must not wait for.
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
        currentDirectory: URL? = nil, standardInput: Bool = false, passStandardError: Bool = false,
        stopSignal: Int32 = SIGTERM
    ) async throws {
        let process = Process()
        self.process = process
        process.executableURL = executable
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        input = standardInput ? Pipe() : nil
        process.standardInput = input ?? FileHandle.nullDevice
        let out = Pipe()
        process.standardOutput = out
        let err = passStandardError ? nil : Pipe()
        process.standardError = err ?? FileHandle.standardError
        self.stopSignal = stopSignal
        try await blocking { try process.run() }
        ChildProcesses.started(process.processIdentifier)
        for (pipe, box) in [(out, output), (err, errors)] {
            guard let pipe else { continue }
            Thread.detachNewThread {
                let handle = pipe.fileHandleForReading
                while true {
                    let data = handle.availableData
                    if data.isEmpty { break }
                    box.withLock { $0.append(data) }
                }
                // Foundation leaves the read end open otherwise (see ExternalProgram.runWithin).
                try? handle.close()
            }
        }
    }

    deinit { stop() }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    /// Everything the program wrote on stdout so far.
    public var standardOutput: Data { output.withLock { $0 } }
    public var stdout: String { String(decoding: standardOutput, as: UTF8.self) }
    /// Everything the program wrote on stderr so far.
    public var stderr: String { errors.withLock { String(decoding: $0, as: UTF8.self) } }

    /// The first `count` complete lines of stdout, waiting for them at most `seconds` (fewer when the program ends
    /// or the time runs out first). The task is suspended between two looks, holding no thread.
    public func lines(_ count: Int = 1, within seconds: Double = 20) async -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let text = stdout
            let complete = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            if complete.count >= count || Date() >= deadline || !process.isRunning {
                return complete.prefix(count).map { String($0.hasSuffix("\r") ? $0.dropLast() : $0) }
            }
            await suspend(0.01)
        }
    }

    /// Writes to the program's stdin (started with `standardInput: true`).
    public func write(_ data: Data) {
        input?.fileHandleForWriting.write(data)
    }

    /// Closes the program's stdin (for a program that stops when its input ends).
    public func closeInput() {
        try? input?.fileHandleForWriting.close()
    }

    /// Waits at most `seconds` for the program to end by itself; whether it did. The task is suspended between two
    /// looks, holding no thread.
    @discardableResult public func waitForExit(within seconds: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { await suspend(0.02) }
        return !process.isRunning
    }

    /// Sends `signal` to the program, if it is running.
    public func send(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Stops the program: the stop signal, up to `grace` seconds to exit, then SIGKILL; returns once it has ended.
    /// Calling it again does nothing.
    public func stop(grace: Double = 5) async {
        if process.isRunning {
            send(stopSignal)
            if await !waitForExit(within: grace) {
                send(SIGKILL)
                await waitForExit(within: 10)
            }
        }
        try? input?.fileHandleForWriting.close()
        ChildProcesses.ended(process.processIdentifier)
    }

    /// ``stop(grace:)`` from where a task cannot wait (a `defer`, a `deinit`): the stop signal now, and the grace
    /// period, the SIGKILL and the bookkeeping on a thread of its own; returns at once. A program still
    /// running when the test process exits is killed then.
    public func stop(grace: Double = 5) {
        guard process.isRunning else {
            try? input?.fileHandleForWriting.close()
            ChildProcesses.ended(process.processIdentifier)
            return
        }
        send(stopSignal)
        try? input?.fileHandleForWriting.close()
        let process = process
        // A thread of its own, not FileRange's pool, which the code under test needs.
        Thread.detachNewThread {
            let deadline = Date().addingTimeInterval(grace)
            while process.isRunning, Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            let killed = Date()
            while process.isRunning, Date().timeIntervalSince(killed) < 10 { usleep(10_000) }
            ChildProcesses.ended(process.processIdentifier)
        }
    }
}

/// The children started and not yet stopped, killed when the test process exits normally with some still running
/// (a child held by a static, or a test that never reached its stop).
enum ChildProcesses {
    private static let running = Locked(Set<Int32>())
    private static let installed: Void = { atexit { ChildProcesses.killAll() } }()

    static func started(_ pid: Int32) {
        _ = installed
        running.withLock { _ = $0.insert(pid) }
    }

    static func ended(_ pid: Int32) {
        running.withLock { _ = $0.remove(pid) }
    }

    static func killAll() {
        for pid in running.withLock({ $0 }) { kill(pid, SIGKILL) }
    }
}
