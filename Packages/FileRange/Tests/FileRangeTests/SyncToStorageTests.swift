import FileRange
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `syncToStorage` is `fsync` here (Linux) and `F_FULLFSYNC`, falling back to `fsync`, on Darwin: on every platform
/// it flushes an open file or folder and reports a bad descriptor as a typed errno.
@Suite(.temporaryFolders) struct SyncToStorageTests {
    @Test func flushesAFileAndItsFolder() throws {
        let folder = TemporaryFolders.make(prefix: "Sync-")
        let file = open(folder + "/data", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        try #require(file >= 0)
        defer { close(file) }
        #expect(write(file, "abc", 3) == 3)
        try syncToStorage(file)
        let directory = open(folder, O_RDONLY | O_CLOEXEC)
        try #require(directory >= 0)
        defer { close(directory) }
        try syncToStorage(directory)
    }

    @Test func aClosedDescriptorThrowsEBADF() {
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        close(fd)
        #expect(throws: Errno.badFileDescriptor) { try syncToStorage(fd) }
    }
}

@Suite(.temporaryFolders) struct AtomicFileTests {
    private func folder() throws -> String { TemporaryFolders.make(prefix: "Atomic-") }

    @Test func replacesTheFileAndLeavesNoTemporaryFile() throws {
        let folder = try folder()
        let path = folder + "/store.json"
        try writeFileAtomically(Array("first".utf8), to: path)
        try writeFileAtomically(Array("second, longer".utf8), to: path)
        #expect(FileManager.default.contents(atPath: path) == Data("second, longer".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["store.json"])
        try writeFileAtomically([], to: path)
        #expect(FileManager.default.contents(atPath: path) == Data())
    }

    @Test func aFailedWriteLeavesTheOldFileAndNoTemporaryFile() throws {
        let folder = try folder()
        #expect(throws: Errno.noSuchFile) { try writeFileAtomically([1, 2, 3], to: folder + "/missing/store.json") }
        // A directory in the way: the rename fails, the directory stays, the temporary file goes.
        try FileManager.default.createDirectory(atPath: folder + "/taken", withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: folder + "/taken/inside", withIntermediateDirectories: false)
        #expect(throws: Errno.self) { try writeFileAtomically([1, 2, 3], to: folder + "/taken") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["taken"])
    }

    @Test func concurrentWritersEachLeaveAWholeFile() async throws {
        let folder = try folder()
        let path = folder + "/shared"
        let versions = (0..<8).map { index in [UInt8](repeating: UInt8(index), count: 64 << 10) }
        await withTaskGroup(of: Void.self) { group in
            for version in versions {
                group.addTask { for _ in 0..<10 { try? writeFileAtomically(version, to: path) } }
            }
        }
        let final = try #require(FileManager.default.contents(atPath: path))
        #expect(versions.contains([UInt8](final)), "the file is one writer's bytes, whole")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["shared"])
    }
}
