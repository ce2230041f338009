import FileRange
import Foundation
import HLSDownload
import HTTPClient
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The downloader against an origin that stalls after a segment's head, and the secrets it keeps on disk (issue 31).
@Suite("Hostile origins (download)", .temporaryFolders)
struct HostileOriginDownloadTests {
    /// A segment whose head arrives and whose body then stalls (nothing more, or one byte every 0.1 s, each within
    /// the 10 s stall timeout) fails its task by the resource deadline (2 s here, one attempt), with a typed error
    /// naming the segment's URL; the partial file is kept for a resume, never given the final name.
    @Test(arguments: ["/stall/200000", "/drip/200000"])
    func aStalledSegmentBodyFailsTheTaskByTheResourceDeadline(segment: String) async throws {
        let origin = try HostileOrigin(trickleInterval: 0.1)
        defer { origin.stop() }
        origin.serve(
            "/v.m3u8",
            Array(
                "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:4.0,\n\(segment)\n#EXT-X-ENDLIST\n"
                    .utf8))
        var configuration = DownloadManagerConfiguration()
        configuration.eventInterval = 0
        configuration.stallTimeout = 10
        configuration.resourceDeadline = 2
        configuration.retry = RetryPolicy(maxAttempts: 1, baseDelay: 0.01)
        let manager = try DownloadManager(storeRoot: Fixtures.temporaryFolder(), configuration: configuration)
        let start = ContinuousClock.now
        let created = try await manager.createTask(url: origin.url("/v.m3u8"))
        let info = try #require(await manager.waitUntilSettled(created.id))
        let elapsed = start.duration(to: .now)
        #expect(info.state == .stopped)
        #expect(info.error?.code == .tooManyRetries, "\(String(describing: info.error))")
        #expect(info.error?.url == origin.url(segment))
        #expect(elapsed < .seconds(8), "the task ended after \(elapsed)")
        #expect(!FileManager.default.fileExists(atPath: info.folder + "/seg00000.ts"))
    }

    /// Under umask 022 a downloaded AES-128 key is `0600` (a secret: anyone who reads it decrypts the media), the
    /// segments beside it `0644`.
    @Test func downloadedKeysAreOwnerOnly() async throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        let base = "http://keys.test/v/"
        let playlist = Fixtures.mediaPlaylist(["e0.ts"], extra: [0: "#EXT-X-KEY:METHOD=AES-128,URI=\"k.bin\""])
        let origin = FakeOrigin(files: [
            base + "e.m3u8": Array(playlist.utf8), base + "k.bin": [UInt8](repeating: 7, count: 16),
            base + "e0.ts": [UInt8](repeating: 1, count: 64),
        ])
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: base + "e.m3u8")
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed, "\(String(describing: info.error))")
        #expect(FileSystem.permissions(info.folder + "/key0.key") == 0o600)
        #expect(FileSystem.permissions(info.folder + "/seg00000.ts") == 0o644)
    }
}
