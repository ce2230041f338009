// FileLock: flock(2) on a file, one holder per open file description, so a second holder is refused even inside one
// process; probing who holds it never drops it; a removed lock file is never shared.
import FileRange
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite(.temporaryFolders) struct FileLockTests {
    private func temporaryFolder() throws -> String { TemporaryFolders.make(prefix: "Lock-") }

    private func text(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    @Test func aSecondOpenFileDescriptionIsRefusedAndNamesThePID() throws {
        let path = try temporaryFolder() + "/.lock"
        guard case .acquired(let lock) = try FileLock.tryAcquire(path) else {
            Issue.record("the first attempt was refused")
            return
        }
        #expect(lock.isHeld)
        #expect(text(path) == "\(getpid())\n")
        // flock belongs to the open file description: a second open in the same process is a second holder and is
        // refused (an fcntl lock would be granted again to the same process).
        guard case .held(let pid) = try FileLock.tryAcquire(path, patient: false) else {
            Issue.record("a second holder was let in")
            return
        }
        #expect(pid == getpid())
        // Probing who holds it opens and closes the file; with flock that never drops the lock (closing any
        // descriptor of the file drops an fcntl lock).
        #expect(FileLock.holder(path) == getpid())
        #expect(FileLock.holder(path) == getpid())
        if case .acquired = try FileLock.tryAcquire(path, patient: false) {
            Issue.record("probing dropped the lock")
        }
        lock.release()
        #expect(!lock.isHeld)
        #expect(FileLock.holder(path) == nil)
        guard case .acquired(let again) = try FileLock.tryAcquire(path, patient: false) else {
            Issue.record("a released lock was refused")
            return
        }
        again.revoke()
        #expect(!again.isHeld)
        // Revoked, it still excludes others until released.
        if case .acquired = try FileLock.tryAcquire(path, patient: false) { Issue.record("a revoked lock let go") }
        again.release()
        #expect(FileLock.holder(try temporaryFolder() + "/missing") == nil)
    }

    @Test func aRemovedLockFileIsNeverShared() throws {
        let folder = try temporaryFolder()
        let path = folder + "/.lock"
        guard case .acquired(let first) = try FileLock.tryAcquire(path) else { return }
        // The holder's file is removed (a task deleted): a new lock is a new file, and the old holder no longer
        // excludes it.
        unlink(path)
        guard case .acquired(let second) = try FileLock.tryAcquire(path, patient: false) else {
            Issue.record("a lock on a removed file excluded the new one")
            return
        }
        first.release()
        #expect(FileLock.holder(path) == getpid())
        second.release()
    }

    @Test func anExclusiveSectionRunsItsBodyAndReportsALockFailure() throws {
        let folder = try temporaryFolder()
        let answer = try FileLock.withExclusiveLock(folder + "/.store.lock", lockFailure: { $0 }) {
            () throws(FileSystemError) -> Int in 42
        }
        #expect(answer == 42)
        #expect(FileManager.default.fileExists(atPath: folder + "/.store.lock"))
        #expect(throws: FileSystemError(.noSuchFile, path: folder + "/missing/.lock")) {
            try FileLock.withExclusiveLock(folder + "/missing/.lock", lockFailure: { $0 }) {
                () throws(FileSystemError) -> Int in 0
            }
        }
    }
}
