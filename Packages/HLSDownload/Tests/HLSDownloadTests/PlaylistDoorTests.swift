// A download checks its input at the door: a body that does not start with #EXTM3U (a UTF-8 BOM allowed) stops the
// task with one error that shows at most 16 bytes of it, non-printable ones escaped.
import Foundation
import HLSDownload
import HTTPClient
import Testing

@Suite(.temporaryFolders) struct PlaylistDoorTests {
    static func outcome(_ body: [UInt8]) async throws -> DownloadTaskInfo {
        var files = FaultTests.stream()
        files[FaultTests.base + "index.m3u8"] = body
        let manager = try Fixtures.manager(FakeOrigin(files: files))
        let created = try await manager.createTask(url: FaultTests.base + "index.m3u8")
        return try #require(await manager.waitUntilSettled(created.id))
    }

    @Test func aByteOrderMarkIsAllowed() async throws {
        let playlist = try #require(FaultTests.stream()[FaultTests.base + "index.m3u8"])
        #expect(try await Self.outcome([0xEF, 0xBB, 0xBF] + playlist).state == .completed)
    }

    /// Bodies that are not playlists, and how the error shows their start.
    static let notPlaylists: [([UInt8], String)] = [
        (Array("hello".utf8), "\"hello\""),
        (Array("#EXTM3".utf8), "\"#EXTM3\""),
        ([0xEF, 0xBB], "\"\\xef\\xbb\""),
        ([], "\"\""),
        (Array("<html>\"a\\b\"</html>\r\n".utf8), "\"<html>\\\"a\\\\b\\\"</htm\""),
        (Array("ok\r\n".utf8), "\"ok\\x0d\\x0a\""),
        (
            [0x47, 0x40, 0x11, 0x10, 0x00] + [UInt8](repeating: 0xFF, count: 200),
            "\"G@\\x11\\x10\\x00" + String(repeating: "\\xff", count: 11) as String + "\""
        ),
    ]

    @Test(arguments: notPlaylists)
    func anythingElseStopsWithTheFirstBytesEscaped(body: [UInt8], shown: String) async throws {
        let info = try await Self.outcome(body)
        #expect(info.state == .stopped)
        #expect(info.error?.code == .invalidPlaylist)
        #expect(info.error?.message == "not an HLS playlist (starts with \(shown))")
    }
}
