import FileRange
import Foundation
import Testing

/// Each test's folder goes with it (TestSupport's temporary folders; a test run used to leave one behind per test).
@Suite(.temporaryFolders) final class FileStreamerTests {
    let folder = URL(fileURLWithPath: TemporaryFolders.make(prefix: "FileStreamerTests-"))

    func makeFile(_ bytes: [UInt8], name: String = "file.bin") throws -> String {
        let path = folder.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func readsAtAbsoluteOffsets() throws {
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let streamer = try FileStreamer(path: makeFile(bytes))
        #expect(try streamer.size() == 10_000)
        #expect(try streamer.read(at: 0, length: 10) == Array(bytes[0..<10]))
        #expect(try streamer.read(at: 9_990, length: 100) == Array(bytes[9_990...]))  // short only at the end
        #expect(try streamer.read(at: 10_000, length: 5) == [])  // at the end: nothing, no error
        #expect(try streamer.read(at: 123, length: 0) == [])
    }

    @Test func errorsCarryContext() throws {
        let streamer = try FileStreamer(path: makeFile([1, 2, 3]))
        let beyond = #expect(throws: FileStreamerError.self) { try streamer.read(at: 4, length: 1) }
        #expect(beyond?.code == .offsetOutOfRange)
        #expect(beyond?.offset == 4 && beyond?.fileSize == 3)
        let missing = #expect(throws: FileStreamerError.self) { try FileStreamer(path: folder.path + "/nope.ts") }
        #expect(missing?.code == .cannotOpen)
        #expect(missing?.errno == .noSuchFile)
        #expect(missing?.path == folder.path + "/nope.ts")
        #expect(missing?.description.contains("ENOENT") == true)
        let directory = #expect(throws: FileStreamerError.self) { try FileStreamer(path: folder.path) }
        #expect(directory?.code == .cannotOpen)
        #expect(directory?.errno == .isDirectory)
        streamer.close()
        streamer.close()
        let closed = #expect(throws: FileStreamerError.self) { try streamer.read(at: 0, length: 1) }
        #expect(closed?.code == .closed)
        #expect(throws: FileStreamerError.self) { try streamer.size() }
    }

    /// `close()` while a call is in flight: the call keeps its descriptor, on its own file, to its end (before, the
    /// descriptor was closed under it, and its number could be given to the next file the process opened); calls
    /// after `close()` throw `closed`; the descriptor is closed when the call ends.
    @Test func closeLetsCallsInFlightFinish() throws {
        let bytes = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let path = try makeFile(bytes)
        let streamer = try FileStreamer(path: path)
        var own = stat()
        #expect(stat(path, &own) == 0)
        let used = try streamer.withFileDescriptor { fd -> Int32 in
            streamer.close()
            let closed = #expect(throws: FileStreamerError.self) { try streamer.read(at: 0, length: 1) }
            #expect(closed?.code == .closed)
            var buffer = [UInt8](repeating: 0, count: 100)
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 100, 4000) }
            #expect(count == 100 && buffer == Array(bytes[4000..<4100]))
            return fd
        }
        // Closed now: the number is free, or already another file's (tests run in parallel).
        var after = stat()
        let stillOurs = fstat(used, &after) == 0 && after.st_ino == own.st_ino && after.st_dev == own.st_dev
        #expect(!stillOurs)
        streamer.close()
    }

    @Test func seesTheFileGrow() throws {
        let path = try makeFile([1, 2, 3])
        let streamer = try FileStreamer(path: path)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([4, 5]))
        try handle.close()
        #expect(try streamer.size() == 5)
        #expect(try streamer.read(at: 3, length: 10) == [4, 5])
    }

    /// A sparse 12 GiB file: reads at the start, the middle, past 4 GiB and 10 GiB, and the very last byte.
    @Test func sparseTwelveGibibyteFile() throws {
        let path = folder.appendingPathComponent("huge.ts").path
        let size: UInt64 = 12 << 30
        let marks: [UInt64] = [0, 4 << 30, (4 << 30) + 1, 6 << 30, 10 << 30, size - 1]
        do {
            #expect(FileManager.default.createFile(atPath: path, contents: nil))
            let handle = try #require(FileHandle(forWritingAtPath: path))
            try handle.truncate(atOffset: size)
            for mark in marks {
                try handle.seek(toOffset: mark)
                try handle.write(contentsOf: Data([UInt8(truncatingIfNeeded: mark >> 28) | 0x80]))
            }
            try handle.close()
        }
        let streamer = try FileStreamer(path: path)
        #expect(try streamer.size() == size)
        for mark in marks {
            #expect(try streamer.read(at: mark, length: 1) == [UInt8(truncatingIfNeeded: mark >> 28) | 0x80], "\(mark)")
        }
        #expect(try streamer.read(at: size - 1, length: 64) == [UInt8(truncatingIfNeeded: (size - 1) >> 28) | 0x80])
        #expect(try streamer.read(at: (10 << 30) + 1, length: 3) == [0, 0, 0])
        let beyond = #expect(throws: FileStreamerError.self) { try streamer.read(at: size + 1, length: 1) }
        #expect(beyond?.fileSize == size)
    }

    /// Many tasks reading different offsets of one streamer at once all get their own bytes.
    @Test func concurrentReadersShareNoPosition() async throws {
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 ^ ($0 >> 8)) }
        let streamer = try FileStreamer(path: makeFile(bytes))
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for task in 0..<16 {
                group.addTask {
                    var ok = true
                    for step in 0..<200 {
                        let offset = (task * 65_537 + step * 4_099) % (bytes.count - 4096)
                        let read = try streamer.read(at: UInt64(offset), length: 4096)
                        ok = ok && read[...] == bytes[offset..<(offset + 4096)]
                    }
                    return ok
                }
            }
            for try await ok in group {
                #expect(ok)
            }
        }
    }

    @Test func errnoNames() {
        #expect(Errno.noSuchFile.name == "ENOENT")
        #expect(Errno.wouldBlock.name == "EAGAIN")
        #expect(Errno(rawValue: 99_999).name == "errno 99999")
        #expect(throws: Errno.noSuchFile) {
            try retryingOnInterrupt { open("/definitely/not/here", O_RDONLY) }
        }
    }
}
