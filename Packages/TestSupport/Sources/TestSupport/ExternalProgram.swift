// The outside programs the tests use as real peers (nginx, ffmpeg, curl, ...): found on PATH or in the sbin
// folders; a missing one is a failure, never a skip, since Scripts/deps.sh installs every one of them. Run to
// completion with both outputs collected.
public import Foundation
public import Testing

public enum ExternalProgram {
    /// The path of `name` on PATH (or /usr/sbin, /sbin); records a failure when it is missing.
    public static func find(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) -> URL? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin"
        for dir in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(dir)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        Issue.record("\(name) is not installed; run Scripts/deps.sh", sourceLocation: sourceLocation)
        return nil
    }

    /// Runs a program to completion, feeding `input` on stdin; stdout and stderr are collected (both read at once,
    /// so a chatty child never blocks on a full pipe). With a `timeout`, a program still running after that many
    /// seconds is killed (SIGKILL) and recorded as a failure: a hang fails the test instead of stalling the suite.
    public static func run(
        _ executable: URL, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
        currentDirectory: URL? = nil, timeout: Double? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> ProcessResult {
        let (result, timedOut) = try runWithin(
            timeout, executable, arguments, input: input, environment: environment, currentDirectory: currentDirectory)
        if let timeout, timedOut {
            Issue.record(
                "\(executable.lastPathComponent) \(arguments.joined(separator: " ")): still running after \(timeout) s",
                sourceLocation: sourceLocation)
        }
        return result
    }

    /// ``run(_:_:input:environment:currentDirectory:timeout:sourceLocation:)`` without recording: whether the
    /// program was killed for running past `timeout` is returned beside its result.
    static func runWithin(
        _ timeout: Double?, _ executable: URL, _ arguments: [String], input: Data?, environment: [String: String]?,
        currentDirectory: URL?
    ) throws -> (ProcessResult, timedOut: Bool) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let outPipe = Pipe()
        let errPipe = Pipe()
        let inPipe = Pipe()
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.standardInput = inPipe
        let ended = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in ended.signal() }
        try process.run()
        let outBox = Locked(Data())
        let errBox = Locked(Data())
        let read = DispatchGroup()
        for (pipe, box) in [(outPipe, outBox), (errPipe, errBox)] {
            read.enter()
            Thread.detachNewThread {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                box.withLock { $0 = data }
                read.leave()
            }
        }
        if let input { inPipe.fileHandleForWriting.write(input) }
        try? inPipe.fileHandleForWriting.close()
        var timedOut = false
        if let timeout, ended.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        read.wait()
        let result = ProcessResult(
            status: process.terminationStatus, stdout: outBox.withLock { $0 }, stderr: errBox.withLock { $0 })
        return (result, timedOut)
    }

    /// The first line a started process writes to `pipe`, without its line ending (or all it wrote, when it closed
    /// the pipe before a line ending). Blocks until then.
    public static func firstLine(of pipe: Pipe) -> String {
        var buffer = Data()
        while !buffer.contains(UInt8(ascii: "\n")) {
            let more = pipe.fileHandleForReading.availableData
            if more.isEmpty { break }
            buffer.append(more)
        }
        let text = String(decoding: buffer, as: UTF8.self)
        return String(text.prefix { $0 != "\n" && $0 != "\r\n" }).trimmingCharacters(in: .whitespaces)
    }
}

/// A finished child process.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: Data

    public init(status: Int32, stdout: Data, stderr: Data) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }

    public var out: String { String(decoding: stdout, as: UTF8.self) }
    public var err: String { String(decoding: stderr, as: UTF8.self) }
}
