// Several `tsplayer` processes on one store, against a throttled nginx: one writer per task (a second run of a task
// refuses naming the first's PID), control from another process (pause, resume, delete reach the running download),
// live progress in `tasks list`, SIGKILL leaves no lock behind, and a URL that is not a playlist leaves no task.
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite(.temporaryFolders) struct DownloadProcessesTests {
    /// A `tsplayer` process started in the background.
    final class Runner {
        let child: ChildProcess

        init?(_ arguments: [String], folder: URL, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            guard let tool = EndToEnd.product("tsplayer", sourceLocation: sourceLocation) else { return nil }
            child = try await ChildProcess(tool, arguments, stopSignal: SIGKILL)
        }

        var process: Process { child.process }
        var pid: Int32 { child.pid }
        var stderr: String { child.stderr }

        /// Waits up to `seconds` for the process to end; true when it did.
        func waitForExit(seconds: Double) async -> Bool { await child.waitForExit(within: seconds) }
    }

    static func list(_ store: URL) async throws -> [[String: Any]] {
        let result = try await DownloadTool.run(["tasks", "--store", store.path, "--json"])
        return (try? JSONSerialization.jsonObject(with: result?.stdout ?? Data())) as? [[String: Any]] ?? []
    }

    /// Waits up to `seconds` for `condition`; records an issue when it is never true.
    static func waitFor(
        _ what: String, seconds: Double = 20, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: () async throws -> Bool
    ) async rethrows {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try await condition() { return }
            await suspend(0.05)
        }
        Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
    }

    /// Waits until `tasks list --json` shows the task run by `pid` with some files done.
    static func waitUntilRunning(_ store: URL, pid: Int32, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        try await waitFor("the task to run in process \(pid)", sourceLocation: sourceLocation) {
            let task = try await list(store).first
            return task?["pid"] as? Int == Int(pid) && (task?["filesDone"] as? Int ?? 0) > 0
        }
    }

    @Test func aSecondRunOfATaskRefusesNamingThePIDAndAnotherTaskRunsBeside() async throws {
        guard let fixtures = await DownloadFixtures.get(),
            let nginx = try await NginxOrigin(root: fixtures.root, slowRate: "150k")
        else { return }
        defer { nginx.stop() }
        let store = DownloadTool.temporaryStore()
        let arguments = ["download", nginx.url("slow/www/ts/index.m3u8"), "-o", store.path, "--id", "same"]
        guard let first = try await Runner(arguments, folder: store.deletingLastPathComponent()) else { return }
        // Another task of the same store, downloaded at the same time by a third process.
        guard
            let other = try await Runner(
                ["download", nginx.url("slow/www/small/index.m3u8"), "-o", store.path, "--id", "other"],
                folder: store.deletingLastPathComponent())
        else { return }
        try await Self.waitFor("the first run to hold the task") {
            try await Self.list(store).contains { $0["id"] as? String == "same" && $0["pid"] as? Int == Int(first.pid) }
        }
        let started = Date()
        let second = try await DownloadTool.run(arguments)
        let refusedAfter = Date().timeIntervalSince(started)
        #expect(second?.status == 1)
        #expect(
            second?.err
                == "Error: task same is being downloaded by process \(first.pid); stop it or wait for it "
                + "to finish\n")
        #expect(second?.out == "")
        #expect(await first.waitForExit(seconds: 60))
        #expect(first.process.terminationStatus == 0, "\(first.stderr)")
        #expect(await other.waitForExit(seconds: 60))
        #expect(other.process.terminationStatus == 0, "\(other.stderr)")
        #expect(
            DownloadFixtures.expectIdentical(
                origin: fixtures.www.appendingPathComponent("ts/index.m3u8"),
                local: store.appendingPathComponent("same/index.m3u8")) == 600)
        DownloadFixtures.expectIdentical(
            origin: fixtures.www.appendingPathComponent("small/index.m3u8"),
            local: store.appendingPathComponent("other/index.m3u8"))
        // The refused run fetched nothing: one playlist request per task.
        #expect(await nginx.requests().filter { $0.uri.hasSuffix("ts/index.m3u8") }.count == 1)
        // Both tasks are in the store, completed: neither process's writes to tasks.json undid the other's.
        let tasks = try await Self.list(store)
        #expect(Set(tasks.compactMap { $0["id"] as? String }) == ["same", "other"])
        #expect(tasks.allSatisfy { $0["state"] as? String == "completed" && $0["pid"] == nil })
        print("second run refused after \(String(format: "%.2f", refusedAfter)) s")
    }

    @Test func pauseResumeAndDeleteReachTheRunningDownload() async throws {
        guard let fixtures = await DownloadFixtures.get(),
            let nginx = try await NginxOrigin(root: fixtures.root, slowRate: "150k")
        else { return }
        defer { nginx.stop() }
        let store = DownloadTool.temporaryStore()
        let logs = store.deletingLastPathComponent()
        let arguments = ["download", nginx.url("slow/www/ts/index.m3u8"), "-o", store.path, "--id", "ctl"]
        guard let runner = try await Runner(arguments, folder: logs) else { return }
        try await Self.waitUntilRunning(store, pid: runner.pid)

        // Live progress: two reads a second and a half apart differ, and the plain list names the runner.
        let before = try await Self.list(store).first?["bytesDone"] as? Int ?? 0
        await suspend(1.5)
        let after = try await Self.list(store).first?["bytesDone"] as? Int ?? 0
        #expect(after > before, "tasks list showed \(before) then \(after) bytes")
        let plain = try await DownloadTool.run(["tasks", "--store", store.path])
        #expect(plain?.out.hasPrefix("ctl  running (pid \(runner.pid)) ") == true, "\(plain?.out ?? "")")

        // Pause from another process: the runner stops within about a second, completed segments stay.
        let pauseStarted = Date()
        let pause = try await DownloadTool.run(["tasks", "pause", "ctl", "--store", store.path])
        #expect(pause?.status == 0, "\(pause?.err ?? "")")
        #expect(pause?.out.hasPrefix("ctl  paused ") == true, "\(pause?.out ?? "")")
        #expect(await runner.waitForExit(seconds: 1))
        let pausedAfter = Date().timeIntervalSince(pauseStarted)
        #expect(pausedAfter < 1.5, "the runner stopped \(pausedAfter) s after the pause command started")
        #expect(runner.process.terminationStatus == 1)
        #expect(runner.stderr.contains("paused by another process"), "\(runner.stderr)")
        let paused = try await Self.list(store).first
        #expect(paused?["state"] as? String == "paused")
        #expect(paused?["pid"] == nil)
        let done = paused?["filesDone"] as? Int ?? 0
        #expect(done > 0 && done < 600)
        // Nothing moves while paused.
        let frozen = Self.segmentCount(store.appendingPathComponent("ctl"))
        await suspend(0.5)
        #expect(Self.segmentCount(store.appendingPathComponent("ctl")) == frozen)

        // Resume runs it again (and follows it); a resume while it runs is refused as already running.
        guard let resumed = try await Runner(["tasks", "resume", "ctl", "--store", store.path], folder: logs) else {
            return
        }
        try await Self.waitUntilRunning(store, pid: resumed.pid)
        let again = try await DownloadTool.run(["tasks", "resume", "ctl", "--store", store.path])
        #expect(again?.status == 1)
        #expect(again?.err.contains("task ctl is being downloaded by process \(resumed.pid)") == true)

        // Delete from another process: the runner stops and the task and its folder go.
        let deleteStarted = Date()
        let delete = try await DownloadTool.run(["tasks", "delete", "ctl", "--store", store.path])
        #expect(delete?.status == 0, "\(delete?.err ?? "")")
        #expect(await resumed.waitForExit(seconds: 1))
        let deletedAfter = Date().timeIntervalSince(deleteStarted)
        #expect(deletedAfter < 1.5, "the runner stopped \(deletedAfter) s after the delete command started")
        #expect(resumed.process.terminationStatus == 1)
        #expect(resumed.stderr.contains("the task was deleted"), "\(resumed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("ctl").path))
        await #expect(try Self.list(store).isEmpty)
        print(
            "pause answered in \(String(format: "%.2f", pausedAfter)) s, delete in "
                + "\(String(format: "%.2f", deletedAfter)) s")
    }

    @Test func sigkillLeavesNoLockAndResumeCompletes() async throws {
        guard let fixtures = await DownloadFixtures.get(),
            let nginx = try await NginxOrigin(root: fixtures.root, slowRate: "150k")
        else { return }
        defer { nginx.stop() }
        let store = DownloadTool.temporaryStore()
        let arguments = ["download", nginx.url("slow/www/ts/index.m3u8"), "-o", store.path, "--id", "dead"]
        guard let runner = try await Runner(arguments, folder: store.deletingLastPathComponent()) else { return }
        try await Self.waitUntilRunning(store, pid: runner.pid)
        kill(runner.pid, SIGKILL)
        #expect(await runner.waitForExit(seconds: 5))
        let task = try await Self.list(store).first
        #expect(task?["state"] as? String == "paused")
        #expect(task?["pid"] == nil)
        let plain = try await DownloadTool.run(["tasks", "--store", store.path])
        #expect(plain?.out.hasPrefix("dead  paused ") == true, "\(plain?.out ?? "")")
        // The lock is free: resume takes it at once and completes.
        let resumed = try await DownloadTool.run(["tasks", "resume", "dead", "--store", store.path])
        #expect(resumed?.status == 0, "\(resumed?.err ?? "")")
        #expect(
            DownloadFixtures.expectIdentical(
                origin: fixtures.www.appendingPathComponent("ts/index.m3u8"),
                local: store.appendingPathComponent("dead/index.m3u8")) == 600)
    }

    @Test func aURLThatIsNotAPlaylistLeavesNoTask() async throws {
        guard let fixtures = await DownloadFixtures.get(), let nginx = try await NginxOrigin(root: fixtures.root) else {
            return
        }
        defer { nginx.stop() }
        let store = DownloadTool.temporaryStore()
        let url = nginx.url("www/ts/s000.ts")
        let result = try await DownloadTool.run(["download", url, "-o", store.path])
        // Not a playlist: unreadable input, exit 2 (before the CLI toolkit, 1).
        #expect(result?.status == 2)
        // One line: the error, at most 16 bytes of the body, escaped.
        #expect(
            result?.err
                == "Error: \(url): not an HLS playlist (starts with \"G@\\x11\\x10\\x00B\\xf0%\\x00\\x01\\xc1"
                + "\\x00\\x00\\xff\\x01\\xff\")\n")
        // Nothing but printable ASCII reaches the terminal.
        #expect(result?.stderr.allSatisfy { $0 == 0x0A || (0x20...0x7E).contains($0) } == true)
        await #expect(try Self.list(store).isEmpty)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: store.path)) ?? []
        #expect(names.filter { !$0.hasPrefix(".") && $0 != "tasks.json" }.isEmpty, "left behind: \(names)")
        // Only the first bytes were needed to decide; nginx may have sent more before the connection closed.
        #expect(await nginx.requests().filter { $0.uri.hasSuffix(".ts") }.count == 1)
    }

    static func segmentCount(_ folder: URL) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".ts") }
            .count
    }
}
