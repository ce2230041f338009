// The task lock (FileRange's FileLock, whose own tests are in FileRangeTests/FileLockTests.swift) as the downloader
// uses it: two managers on one store (two processes, as far as the lock is concerned) have one writer per task and
// merge their store writes.
import FileRange
import Foundation
import HLSDownload
import HTTPClient
import Testing

@Suite(.temporaryFolders) struct LockTests {
    @Test func aRevokedTaskLockRefusesWritesWithTheLockedCode() throws {
        let path = Fixtures.temporaryFolder() + "/.lock"
        guard case .acquired(let lock) = try FileLock.tryAcquire(path) else {
            Issue.record("the first attempt was refused")
            return
        }
        try lock.ensureHeld()
        lock.revoke()
        #expect(throws: DownloadError.self) { try lock.ensureHeld() }
        do {
            try lock.ensureHeld()
        } catch {
            #expect(error.code == .locked)
            #expect(error.path == path)
        }
        lock.release()
    }

    /// A stream whose second segment hangs until the task is cancelled.
    static func hangingOrigin() -> FakeOrigin {
        let files = FaultTests.stream()
        return FakeOrigin(files: files) { request, _ in
            guard request.url == FaultTests.base + "s2.ts" else { return nil }
            return FakeReply(status: 200, chunks: [[0x47]], hang: true)
        }
    }

    @Test func aSecondManagerOnTheStoreIsRefusedThenPausesThroughTheControlFile() async throws {
        let root = Fixtures.temporaryFolder()
        let early = try Fixtures.manager(FakeOrigin(files: FaultTests.stream()), root: root)
        let first = try Fixtures.manager(Self.hangingOrigin(), root: root)
        let created = try await first.createTask(id: "t", url: FaultTests.base + "index.m3u8")
        try await LifecycleTests.waitFor { await first.task("t")?.state == .downloading }

        let second = try Fixtures.manager(FakeOrigin(files: FaultTests.stream()), root: root)
        let seen = try #require(await second.task("t"))
        #expect(seen.runnerPID == getpid())
        #expect(seen.state == .downloading)
        func expectLocked(_ error: DownloadError, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(error.code == .locked, sourceLocation: sourceLocation)
            #expect(error.pid == getpid(), sourceLocation: sourceLocation)
            #expect(
                error.message == "task t is being downloaded by process \(getpid()); stop it or wait for it to finish",
                sourceLocation: sourceLocation)
        }
        let storeBefore = Fixtures.read(root + "/tasks.json")
        do {
            try await second.resume("t")
            Issue.record("a second runner was let in")
        } catch {
            expectLocked(error)
        }
        // Known to it: createTask returns the task as it stands, writing nothing.
        #expect(try await second.createTask(id: "t", url: FaultTests.base + "index.m3u8").runnerPID == getpid())
        // Not yet known to it (it read the store before the task existed): refused by the lock.
        do {
            try await early.createTask(id: "t", url: FaultTests.base + "index.m3u8")
            Issue.record("a second runner was let in")
        } catch {
            expectLocked(error)
        }
        #expect(Fixtures.read(root + "/tasks.json") == storeBefore)
        // The pause reaches the first manager through the control file, and returns once it is done.
        try await second.pause("t")
        #expect(await first.task("t")?.state == .paused)
        #expect(await second.task("t")?.state == .paused)
        #expect(await second.task("t")?.runnerPID == nil)
        #expect(!FileManager.default.fileExists(atPath: created.folder + "/.control"))
        // Now free, the second one runs it to the end.
        try await second.resume("t")
        #expect(await second.waitUntilSettled("t")?.state == .completed)
    }

    @Test func twoManagersRunningDifferentTasksKeepEachOthersRecords() async throws {
        let root = Fixtures.temporaryFolder()
        let first = try Fixtures.manager(FakeOrigin(files: FaultTests.stream()), root: root)
        let second = try Fixtures.manager(FakeOrigin(files: FaultTests.stream()), root: root)
        try await first.createTask(id: "a", url: FaultTests.base + "index.m3u8")
        try await second.createTask(id: "b", url: FaultTests.base + "index.m3u8")
        #expect(await first.waitUntilSettled("a")?.state == .completed)
        #expect(await second.waitUntilSettled("b")?.state == .completed)
        let third = try Fixtures.manager(FakeOrigin(), root: root)
        #expect(await third.allTasks().map(\.id) == ["a", "b"])
        #expect(await third.completedTasks().count == 2)
    }
}
