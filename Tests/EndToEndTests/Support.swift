import FileRange
// Shared helpers for the end-to-end tests: locating the built tools and the repository, running processes,
// and finding the outside programs (ffprobe, curl, ...) that the tests use as real peers.
import Foundation
import Testing

/// A finished child process.
struct ProcessResult: Sendable {
    var status: Int32
    var stdout: Data
    var stderr: Data

    var out: String { String(decoding: stdout, as: UTF8.self) }
    var err: String { String(decoding: stderr, as: UTF8.self) }
}

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

    /// Runs a program to completion, feeding `input` on stdin; stdout and stderr are collected.
    static func run(
        _ executable: URL, _ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
        currentDirectory: URL? = nil
    ) throws -> ProcessResult {
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
        try process.run()
        // Read both pipes concurrently so that a chatty child never blocks on a full pipe.
        let errBox = Locked<Data?>(nil)
        let errThread = Thread { errBox.withLock { $0 = errPipe.fileHandleForReading.readDataToEndOfFile() } }
        errThread.start()
        if let input { inPipe.fileHandleForWriting.write(input) }
        try? inPipe.fileHandleForWriting.close()
        let out = outPipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while errBox.withLock({ $0 == nil }) { usleep(1000) }
        return ProcessResult(
            status: process.terminationStatus, stdout: out, stderr: errBox.withLock { $0 ?? Data() })
    }
}

extension EndToEnd {
    /// The first line a started process writes to `pipe`, without its line ending (or all it wrote, when it closed
    /// the pipe before a line ending). Blocks until then.
    static func firstLine(of pipe: Pipe) -> String {
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
