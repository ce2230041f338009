import FileRange
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
    ) async throws -> ProcessResult {
        let (result, timedOut) = try await runWithin(
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
    ) async throws -> (ProcessResult, timedOut: Bool) {
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
        // Awaited, never waited on: Foundation reports the end through Dispatch, whose threads a blocked test holds.
        let ended = Completion()
        process.terminationHandler = { _ in ended.signal() }
        // Spawned off Swift's cooperative threads (see ChildProcess.init).
        try await blocking { try process.run() }
        let outBox = Locked(Data())
        let errBox = Locked(Data())
        var reads: [Completion] = []
        for (pipe, box) in [(outPipe, outBox), (errPipe, errBox)] {
            let read = Completion()
            reads.append(read)
            // A thread of its own per pipe, for as long as the program writes (not pool work, like an event loop).
            Thread.detachNewThread {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                // Closed here: Foundation keeps the read end open otherwise, two descriptors lost per run, and each
                // later spawn (Foundation's `Process.run` closes every descriptor up to the highest open one in the
                // child) takes longer.
                try? pipe.fileHandleForReading.close()
                box.withLock { $0 = data }
                read.signal()
            }
        }
        let writer = inPipe.fileHandleForWriting
        await blocking {
            if let input { writer.write(input) }
            try? writer.close()
        }
        var timedOut = false
        if let timeout, await !ended.wait(within: timeout) {
            timedOut = true
            kill(process.processIdentifier, SIGKILL)
        }
        await ended.wait()
        for read in reads { await read.wait() }
        let result = ProcessResult(
            status: process.terminationStatus, stdout: outBox.withLock { $0 }, stderr: errBox.withLock { $0 })
        return (result, timedOut)
    }

    /// The audio ffmpeg decodes from `file` (its first audio stream, every channel, as 16-bit PCM in a WAV file, the
    /// format its `volumedetect` filter measures in): the sample rate and channel count it decodes to, and the
    /// largest absolute sample value (0 for digital silence). Nil, with a failure recorded, when ffmpeg fails or
    /// decodes no sample.
    public static func decodedAudio(
        _ ffmpeg: URL, _ file: String, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (sampleRate: Int, channels: Int, peak: Int)? {
        let decoded = try await run(
            ffmpeg, ["-v", "error", "-i", file, "-map", "0:a:0", "-acodec", "pcm_s16le", "-f", "wav", "-"],
            timeout: 120, sourceLocation: sourceLocation)
        let wav = [UInt8](decoded.stdout)
        // Seconds of samples in a debug build: off the cooperative threads, which other tests need meanwhile.
        if decoded.status == 0, let found = await blocking({ wavPeak(wav) }) { return found }
        Issue.record("ffmpeg decoded no audio from \(file): \(decoded.err)", sourceLocation: sourceLocation)
        return nil
    }

    /// The sample rate, channel count and peak sample of a 16-bit PCM WAV file; nil without a format and samples.
    static func wavPeak(_ wav: [UInt8]) -> (sampleRate: Int, channels: Int, peak: Int)? {
        func number(_ at: Int, _ width: Int) -> Int {
            (0..<width).reduce(0) { $0 | Int(wav[at + $1]) << (8 * $1) }
        }
        // RIFF, its size, WAVE; then chunks of a four-letter name and a 32-bit size ("fmt ", maybe "LIST", "data").
        var format: (rate: Int, channels: Int)?
        var at = 12
        while wav.count >= 12, at + 8 <= wav.count {
            let name = String(decoding: wav[at..<(at + 4)], as: UTF8.self)
            let size = number(at + 4, 4)
            at += 8
            if name == "fmt ", at + 8 <= wav.count {
                format = (number(at + 4, 4), number(at + 2, 2))
            } else if name == "data", let format {
                var peak = 0
                var i = at
                while i + 1 < wav.count {
                    peak = max(peak, abs(Int(Int16(bitPattern: UInt16(number(i, 2))))))
                    i += 2
                }
                if i > at { return (format.rate, format.channels, peak) }
                return nil
            }
            at += size  // (a piped WAV says 0xFFFFFFFF for "data" only, which is the last chunk)
        }
        return nil
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
