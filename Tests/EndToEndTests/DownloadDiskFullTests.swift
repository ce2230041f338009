// Disk full: the store lives on a small tmpfs (mounting needs root, which Scripts/test.sh and CI have; as another
// user the test is shown as skipped, not passed). The download pauses with the path in the error, keeps what it wrote, and completes
// byte-identical once the tmpfs is made larger.
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite(.temporaryFolders) struct DownloadDiskFullTests {
    // Darwin has no tmpfs and no `mount -o remount,size=`; a Darwin version would need a RAM disk (hdiutil) and
    // diskutil to grow it, which is a different test.
    @Test(
        .disabled(if: Platform.isDarwin, "needs Linux tmpfs (mount -t tmpfs, remount to grow it)"),
        .enabled(if: geteuid() == 0, "mounting the small tmpfs needs root"))
    func diskFullPausesAndResumingAfterSpaceIsFreedCompletes() async throws {
        guard let fixtures = await DownloadFixtures.get(), let nginx = try await NginxOrigin(root: fixtures.root),
            let mount = EndToEnd.tool("mount"), let umount = EndToEnd.tool("umount")
        else { return }
        defer { nginx.stop() }
        let point = DownloadTool.temporaryStore()
        let mounted = try await EndToEnd.run(mount, ["-t", "tmpfs", "-o", "size=3m", "tmpfs", point.path])
        guard mounted.status == 0 else {
            Issue.record("cannot mount a tmpfs as root: \(mounted.err)")
            return
        }
        // Unmounted however the rest ends (a defer cannot await).
        let outcome: Result<Void, any Error>
        do {

            let full = try await DownloadTool.run([
                "download", nginx.url("www/ts/index.m3u8"), "-o", point.path, "--id", "df",
            ])
            #expect(full?.status == 1)
            // Said in words, with what to try; no error code's identifier.
            #expect(full?.err.contains(": no space left while writing") == true, "\(full?.err ?? "")")
            #expect(full?.err.contains("free some space") == true && full?.err.contains("diskFull") == false)
            #expect(full?.err.contains(point.path + "/df/seg") == true)
            let list = try await DownloadTool.run(["tasks", "--store", point.path, "--json"])
            let tasks = (try? JSONSerialization.jsonObject(with: list?.stdout ?? Data())) as? [[String: Any]]
            #expect(tasks?.first?["state"] as? String == "paused")
            #expect((tasks?.first?["error"] as? [String: Any])?["code"] as? String == "diskFull")

            // What was written is kept, and is right.
            let origin = fixtures.www.appendingPathComponent("ts/index.m3u8")
            let kept = DownloadFixtures.references(origin).indices.filter {
                FileManager.default.fileExists(
                    atPath: point.appendingPathComponent(String(format: "df/seg%05d.ts", $0)).path)
            }
            #expect(kept.count > 10)

            let grown = try await EndToEnd.run(mount, ["-o", "remount,size=64m", point.path])
            #expect(grown.status == 0, "\(grown.err)")
            let before = await nginx.requests().count
            let resumed = try await DownloadTool.run(["tasks", "resume", "df", "--store", point.path])
            #expect(resumed?.status == 0, "\(resumed?.err ?? "")")
            #expect(
                DownloadFixtures.expectIdentical(origin: origin, local: point.appendingPathComponent("df/index.m3u8"))
                    == 600)
            // Only what was missing was fetched again.
            #expect(await nginx.requests().count - before == 600 - kept.count)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        _ = try? await EndToEnd.run(umount, [point.path])
        try outcome.get()
    }
}
