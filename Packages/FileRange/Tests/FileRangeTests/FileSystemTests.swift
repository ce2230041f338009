// FileSystem, SequentialFileWriter and the sweep of atomic-write leftovers: the calls every package above the floor
// makes through FileRange instead of making them itself.
import FileRange
import Foundation
import Testing

@Suite(.temporaryFolders) struct FileSystemTests {
    private func temporaryFolder() throws -> String { TemporaryFolders.make(prefix: "FS-") }

    @Test func foldersFilesSizesAndListings() throws {
        let root = try temporaryFolder()
        defer { FileSystem.removeTree(root) }
        try FileSystem.createFolders(root + "/a/b/c")
        try FileSystem.createFolders(root + "/a/b/c")  // already there: not an error
        #expect(FileSystem.exists(root + "/a/b/c"))
        #expect(FileSystem.regularFileSize(root + "/a/b/c") == nil)  // a folder has no file size
        let writer = try SequentialFileWriter(path: root + "/a/file", truncate: true)
        try writer.write(Array("hello ".utf8)[...])
        writer.close()
        let appender = try SequentialFileWriter(path: root + "/a/file", truncate: false)
        try appender.write(Array("world".utf8)[...])
        try appender.sync()
        appender.close()
        appender.close()  // twice is harmless
        #expect(try FileSystem.readFile(root + "/a/file") == Array("hello world".utf8))
        #expect(FileSystem.regularFileSize(root + "/a/file") == 11)
        let cutter = try SequentialFileWriter(path: root + "/a/file", truncate: false)
        try cutter.truncate(to: 5)
        cutter.close()
        #expect(try FileSystem.readFile(root + "/a/file") == Array("hello".utf8))
        #expect(FileSystem.entries(in: root + "/a") == ["b", "file"])
        #expect(FileSystem.entries(in: root + "/missing") == nil)
        try FileSystem.rename(root + "/a/file", to: root + "/a/b/moved")
        #expect(!FileSystem.exists(root + "/a/file"))
        #expect(FileSystem.regularFileSize(root + "/a/b/moved") == 5)
        try FileSystem.sync(root + "/a/b/moved")
        try FileSystem.sync(root + "/a/b")
    }

    @Test func errorsNameTheErrnoAndThePathThatFailed() throws {
        let root = try temporaryFolder()
        defer { FileSystem.removeTree(root) }
        #expect(throws: FileSystemError(.noSuchFile, path: root + "/missing")) {
            try FileSystem.readFile(root + "/missing")
        }
        #expect(throws: FileSystemError(.noSuchFile, path: root + "/x/y")) {
            try FileSystem.rename(root + "/nothing", to: root + "/x/y")
        }
        try Data(repeating: 7, count: 100).write(to: URL(fileURLWithPath: root + "/big"))
        #expect(throws: FileSystemError(.fileTooLarge, path: root + "/big")) {
            try FileSystem.readFile(root + "/big", limit: 99)
        }
        #expect(try FileSystem.readFile(root + "/big", limit: 100).count == 100)
        // A file where a folder is wanted: the error names the component that could not be made.
        #expect(throws: FileSystemError(.notDirectory, path: root + "/big/sub")) {
            try FileSystem.createFolders(root + "/big/sub/deeper")
        }
        #expect(FileSystemError(.noSuchFile, path: "/p").description == "/p: No such file or directory")
    }

    @Test func removeTreeRemovesLinksWithoutFollowingThem() throws {
        let root = try temporaryFolder()
        let outside = try temporaryFolder()
        defer {
            FileSystem.removeTree(root)
            FileSystem.removeTree(outside)
        }
        try Data("keep".utf8).write(to: URL(fileURLWithPath: outside + "/precious"))
        try FileSystem.createFolders(root + "/tree/inner")
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/tree/inner/file"))
        try FileManager.default.createSymbolicLink(atPath: root + "/tree/link", withDestinationPath: outside)
        FileSystem.removeTree(root + "/tree")
        #expect(!FileSystem.exists(root + "/tree"))
        #expect(try FileSystem.readFile(outside + "/precious") == Array("keep".utf8))
    }

    @Test func aQuickAtomicWriteReplacesTheFileWithoutLeavingATemporary() throws {
        let root = try temporaryFolder()
        defer { FileSystem.removeTree(root) }
        try writeFileAtomically(Array("one".utf8), to: root + "/hint", durable: false)
        try writeFileAtomically(Array("two".utf8), to: root + "/hint", durable: false)
        #expect(try FileSystem.readFile(root + "/hint") == Array("two".utf8))
        #expect(FileSystem.entries(in: root) == ["hint"])
    }

    @Test func leftoversOfDeadWritersGoAndThoseOfLiveOnesStay() throws {
        let root = try temporaryFolder()
        defer { FileSystem.removeTree(root) }
        // 4194305 is above every platform's largest PID; PID 1 is always running; this process is running.
        let names = [
            "store.json", "store.json.tmp4194305-3", "index.m3u8.tmp", "seg.ts.validator.tmp4194305-12",
            "live.json.tmp1-2", "mine.json.tmp\(FileSystem.processID)-1", "odd.tmpfile", "x.tmp12-", ".tmp",
            "notes.tmp-4",
        ]
        for name in names { try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/" + name)) }
        let removed = removeAtomicWriteLeftovers(in: root)
        #expect(removed == ["index.m3u8.tmp", "seg.ts.validator.tmp4194305-12", "store.json.tmp4194305-3"])
        #expect(
            FileSystem.entries(in: root)
                == [
                    ".tmp", "live.json.tmp1-2", "mine.json.tmp\(FileSystem.processID)-1", "notes.tmp-4", "odd.tmpfile",
                    "store.json", "x.tmp12-",
                ])
        #expect(FileSystem.processIsAlive(FileSystem.processID))
        #expect(!FileSystem.processIsAlive(4_194_305))
        #expect(!FileSystem.processIsAlive(0))
    }

    @Test func aSequentialReaderReadsInChunksRewindsAndCaps() throws {
        let root = try temporaryFolder()
        defer { FileSystem.removeTree(root) }
        let bytes = (0..<1000).map { UInt8($0 % 251) }
        try writeFileAtomically(bytes, to: root + "/input")
        let reader = try SequentialFileReader(path: root + "/input")
        var seen: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64)
        while true {
            let count = try chunk.withUnsafeMutableBytes { raw in try reader.read(into: raw) }
            if count == 0 { break }
            seen += chunk[0..<count]
        }
        #expect(seen == bytes)
        try reader.rewind()
        #expect(try reader.readAll(limit: 1000) == bytes)
        try reader.rewind()
        #expect(throws: FileSystemError(.fileTooLarge, path: root + "/input")) { try reader.readAll(limit: 999) }
        reader.close()
        reader.close()
        #expect(throws: FileSystemError(.noSuchFile, path: root + "/missing")) {
            try SequentialFileReader(path: root + "/missing")
        }
    }
}
