import FileRange
import Foundation
import HLSDownload
import HTTPClient
import TSPlayerKit
import Testing

/// An in-process origin for the download manager: a table of files answered with 200.
private final class TableOrigin: HTTPTransport {
    let files: [String: [UInt8]]
    init(files: [String: [UInt8]]) { self.files = files }

    func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        let (body, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        guard let bytes = files[request.url] else {
            continuation.finish()
            return HTTPClientResponse(status: 404, headers: [], body: body)
        }
        continuation.yield(bytes)
        continuation.finish()
        return HTTPClientResponse(
            status: 200, headers: [HTTPHeaders.Field(name: "Content-Length", value: "\(bytes.count)")], body: body)
    }
}

@Suite(.temporaryFolders) struct DownloadPlaybackTests {
    static let base = "http://origin.test/vod/"

    /// `packets` TS packets filled with `seed`.
    static func ts(packets: Int, seed: UInt8) -> [UInt8] {
        var bytes: [UInt8] = []
        for p in 0..<packets {
            bytes += [0x47, 0x01, 0x00, 0x10 | UInt8(p & 0x0F)]
            bytes += [UInt8](repeating: seed, count: 184)
        }
        return bytes
    }

    @Test func playURLServesTheDownloadedTaskAndReusesItsSession() async throws {
        var files: [String: [UInt8]] = [:]
        var playlist = MediaPlaylistText(targetDuration: 4, header: "#EXT-X-PLAYLIST-TYPE:VOD\n", ended: true)
        for n in 0..<3 {
            files[Self.base + "s\(n).ts"] = Self.ts(packets: 30 + n, seed: UInt8(n))
            playlist.segments.append(.init(duration: "4.0", uri: "s\(n).ts"))
        }
        files[Self.base + "index.m3u8"] = playlist.bytes
        // The store's root does not exist yet; the manager makes it inside the test's own folder.
        let root = TemporaryFolders.make(prefix: "download-playback-") + "/store"
        let manager = try DownloadManager(storeRoot: root, transport: TableOrigin(files: files))
        let server = PlaybackServer()

        // Not completed yet: no URL.
        await #expect(throws: PlaybackError.self) { try await manager.playURL(forTask: "movie", server: server) }

        try await manager.createTask(id: "movie", url: Self.base + "index.m3u8")
        let info = try #require(await manager.waitUntilSettled("movie"))
        #expect(info.state == .completed)

        let url = try await manager.playURL(forTask: "movie", server: server)
        #expect(url.hasPrefix("http://127.0.0.1:"))
        #expect(url.hasSuffix("/index.m3u8"))
        let local = try await ProxyTestClient.get(url)
        #expect(local.status == 200)
        #expect(local.text.contains("#EXT-X-ENDLIST"))
        let names = local.text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(names == ["seg00000.ts", "seg00001.ts", "seg00002.ts"])
        // Segments resolve against the playlist URL and come back byte for byte.
        let folderURL = String(url.dropLast("index.m3u8".count))
        for (n, name) in names.enumerated() {
            let segment = try await ProxyTestClient.get(folderURL + name)
            #expect(segment.status == 200)
            #expect(segment.body == files[Self.base + "s\(n).ts"])
        }

        // Asked again: the same session and URL.
        #expect(try await manager.playURL(forTask: "movie", server: server) == url)

        // Stopped: the URL answers no more; asked again, a new session with a new URL.
        await manager.stopPlayback(forTask: "movie", server: server)
        let again = try await manager.playURL(forTask: "movie", server: server)
        #expect(again != url)
        #expect(try await ProxyTestClient.get(again).status == 200)
        await manager.stopPlayback(forTask: "movie", server: server)
    }
}
