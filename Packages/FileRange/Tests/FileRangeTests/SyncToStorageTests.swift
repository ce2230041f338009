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
@Suite struct SyncToStorageTests {
    @Test func flushesAFileAndItsFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("Sync-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
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
