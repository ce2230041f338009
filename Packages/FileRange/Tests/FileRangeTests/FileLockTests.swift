// FileLock: flock(2) on a file, one holder per open file description, so a second holder is refused even inside one
// process; probing who holds it never drops it; a removed lock file is never shared.
import Foundation
import Testing

@testable import FileRange

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

    /// A release unlocks the open file description itself: a child process that still has a copy of the descriptor
    /// (one forked at that moment, before its exec closes it; here one given it on purpose) does not keep the lock.
    @Test func aReleaseFreesTheLockWhileAChildSharesTheDescriptor() throws {
        let path = try temporaryFolder() + "/.lock"
        guard case .acquired(let lock) = try FileLock.tryAcquire(path) else {
            Issue.record("the first attempt was refused")
            return
        }
        let child = try spawnSleeping(sharing: lock.descriptor)
        defer {
            kill(child, SIGKILL)
            var status: Int32 = 0
            _ = waitpid(child, &status, 0)
        }
        lock.release()
        #expect(FileLock.holder(path) == nil, "the released lock is still held")
        guard case .acquired(let again) = try FileLock.tryAcquire(path, patient: false) else {
            Issue.record("refused after the release, while the child shares the old descriptor")
            return
        }
        again.release()
    }

    /// Starts `/bin/sleep 30` with `descriptor` as its descriptor 3 (`dup2` clears close-on-exec on the copy).
    private func spawnSleeping(sharing descriptor: Int32) throws -> pid_t {
        #if canImport(Darwin)
            var actions: posix_spawn_file_actions_t?
        #else
            var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, descriptor, 3)
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sleep"), strdup("30"), nil]
        defer { for argument in arguments { free(argument) } }
        let environment: [UnsafeMutablePointer<CChar>?] = [nil]
        var pid: pid_t = 0
        let status = posix_spawn(&pid, "/bin/sleep", &actions, nil, arguments, environment)
        try #require(status == 0, "posix_spawn failed: \(status)")
        return pid
    }
}
