// A recording still being written whose second part, after a time stamp reset, has other HEVC parameter sets: while
// the file grows and the index catches up, the EVENT playlists only gain segments (the discontinuity and the second
// EXT-X-MAP among them), an init segment's URI keeps its bytes from poll to poll, and at the end every playlist,
// init segment and media segment is what a fresh session on the whole file serves.
import FileRange
import Foundation
import LoopbackHTTP
import MPEGTS
import Testing

@testable import TSPlayback

@Suite(.serialized) struct FragmentedGrowingTests {
    /// The session's answer to `name` (`video.m3u8`, `video/3.m4s`, ...): its status and bytes.
    func get(_ session: TSPlaybackSession, _ name: String) -> (status: Int, bytes: [UInt8]) {
        var request = HTTPRequest(method: .get, target: "/\(session.token.value)/\(name)")
        request.wildcardSegments = name.split(separator: "/").map(String.init)
        let response = session.respond(to: request)
        guard case .bytes(let bytes) = response.body else { return (Int(response.status.code), []) }
        return (Int(response.status.code), bytes)
    }

    func text(_ session: TSPlaybackSession, _ name: String) -> String {
        String(decoding: get(session, name).bytes, as: UTF8.self)
    }

    /// The URIs a playlist names (`EXT-X-MAP` URIs and segment lines), in order.
    func uris(_ playlist: String) -> [String] {
        playlist.split(separator: "\n").compactMap { line in
            if line.hasPrefix("#EXT-X-MAP:URI=\"") {
                return String(line.dropFirst("#EXT-X-MAP:URI=\"".count).prefix { $0 != "\"" })
            }
            return line.hasPrefix("#") ? nil : String(line)
        }
    }

    /// The HEVC picture size change (the video gets a second init segment) and the AAC channel change (the audio
    /// does).
    @Test(arguments: ["config-hevc-resolution", "config-aac-channels"])
    func aGrowingRecordingWithAResetGainsItsInitSegmentAndEndsAsTheWholeFile(_ fixture: String) async throws {
        let hevc = fixture == "config-hevc-resolution"
        let (movie, videoStart) = try #require(
            hevc ? await ConfigurationFixtures.hevcResolution : await ConfigurationFixtures.aacChannels)
        let whole = [UInt8](try Data(contentsOf: movie))
        let firstPart = try Data(contentsOf: PlaybackFixtures.folder.appendingPathComponent(fixture + "-a.ts")).count
        let path = PlaybackFixtures.folder.appendingPathComponent("growing-\(UUID().uuidString).ts").path
        try Data(whole[..<firstPart]).write(to: URL(fileURLWithPath: path))
        let options = TSPlaybackSession.Options(segmentDuration: 1, writesSidecar: false, container: .fmp4)
        let session = try TSPlaybackSession(tsFile: path, options: options)
        #expect(session.container == .fmp4)
        // The session is not added to a server, so it does not index: the test scans as the file grows, as the
        // session's own scan publishes its index.
        let file = try FileStreamer(path: path)
        var indexer = TSIndexer()
        let writer = try #require(FileHandle(forWritingAtPath: path))
        defer { try? writer.close() }
        let playlists = ["video.m3u8", try FragmentedConfigurationTests().audioPlaylist(text(session, "master.m3u8"))]
        var previous: [String: String] = [:]
        var initBytes: [String: [UInt8]] = [:]
        // Part one; part two's first 8 packets from its first video PES (the reset's keyframe is indexed, little
        // of its range is there yet); then part two in four steps, the last one the end of the file.
        let steps =
            [firstPart, videoStart + 8 * 188]
            + (1...4).map { firstPart + (whole.count - firstPart) * $0 / 4 / 188 * 188 }
        #expect(steps == steps.sorted() && steps.last == whole.count)
        var resetWhileGrowing = false
        for (number, end) in steps.enumerated() {
            if number > 0 {
                try writer.seekToEnd()
                try writer.write(contentsOf: Data(whole[steps[number - 1]..<end]))
            }
            try indexer.scan(file, finishAtEnd: false)
            let last = number == steps.count - 1
            if last {
                indexer.finish()
                indexer.measureLastAudioPES(in: file)
            }
            let snapshot = indexer.index(fileSize: try file.size(), modificationTime: try file.modificationTime())
            session.indexState.withLock { $0 = snapshot }
            for name in playlists {
                let playlist = text(session, name)
                #expect(
                    playlist.contains(last ? "#EXT-X-PLAYLIST-TYPE:VOD\n" : "#EXT-X-PLAYLIST-TYPE:EVENT\n")
                        && playlist.hasSuffix("#EXT-X-ENDLIST\n") == last, "step \(number) \(name): \(playlist)")
                // An EVENT playlist only grows at its end: what it said before it still says, line for line (but
                // for the playlist type, the target duration, and the media sequence 0 the VOD one leaves out).
                if let before = previous[name] {
                    func body(_ text: String) -> [Substring] {
                        text.split(separator: "\n").filter {
                            !$0.hasPrefix("#EXT-X-PLAYLIST-TYPE:") && !$0.hasPrefix("#EXT-X-TARGETDURATION:")
                                && $0 != "#EXT-X-MEDIA-SEQUENCE:0"
                        }
                    }
                    #expect(
                        body(playlist).starts(with: body(before)),
                        "step \(number) \(name): the playlist changed what it said before\n\(before)\n---\n\(playlist)")
                }
                previous[name] = playlist
                // Every init segment named keeps its bytes from the first poll that named it.
                for uri in uris(playlist) where uri.contains("-init") {
                    let (status, bytes) = get(session, uri)
                    #expect(status == 200 && !bytes.isEmpty, "step \(number): \(uri) answered \(status)")
                    if let known = initBytes[uri] {
                        #expect(known == bytes, "step \(number): \(uri) changed")
                    } else {
                        initBytes[uri] = bytes
                    }
                }
            }
            // The track whose configuration changes, and the one whose does not.
            let changing = previous[playlists[hevc ? 0 : 1]] ?? ""
            let other = previous[playlists[hevc ? 1 : 0]] ?? ""
            let stem = String(playlists[hevc ? 0 : 1].dropLast(".m3u8".count))
            let maps = uris(changing).filter { $0.contains("-init") }
            #expect(uris(other).filter { $0.contains("-init") }.count == 1, "step \(number): \(other)")
            if number == 0 {
                #expect(maps == [stem + "-init.mp4"] && !changing.contains("#EXT-X-DISCONTINUITY"), "\(changing)")
            }
            let reset = "#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"\(stem)-init-1.mp4\""
            if !last, changing.contains(reset) { resetWhileGrowing = true }
            if last {
                #expect(resetWhileGrowing, "no EVENT playlist had the reset and its init segment")
                #expect(maps == [stem + "-init.mp4", stem + "-init-1.mp4"] && changing.contains(reset), "\(changing)")
                #expect(initBytes[stem + "-init.mp4"] != initBytes[stem + "-init-1.mp4"])
            }
        }

        // A fresh session on the whole file serves the same playlists, init segments and media segments.
        let copy = PlaybackFixtures.folder.appendingPathComponent("growing-whole-\(UUID().uuidString).ts").path
        try Data(whole).write(to: URL(fileURLWithPath: copy))
        let fresh = try TSPlaybackSession(tsFile: copy, options: options)
        await fresh.waitUntilIndexed()
        for name in playlists {
            let served = text(session, name)
            #expect(served == text(fresh, name), "\(name): grown\n\(served)\n---\nwhole file\n\(text(fresh, name))")
            for uri in uris(served) {
                let (status, bytes) = get(session, uri)
                #expect(status == 200 && bytes == get(fresh, uri).bytes, "\(uri): \(status), \(bytes.count) bytes")
            }
        }
    }
}
