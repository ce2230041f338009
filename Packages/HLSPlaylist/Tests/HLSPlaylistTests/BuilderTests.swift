import HLSPlaylist
import Testing

@Suite struct BuilderTests {
    @Test func vodWithByteRangesAndTargetDurationRounding() throws {
        var b = MediaPlaylistBuilder(kind: .vod)
        b.append(.init(uri: "movie.ts", duration: 10.4, byteRange: ByteRange(length: 1000, offset: 0)))
        b.append(.init(uri: "movie.ts", duration: 10.5, byteRange: ByteRange(length: 500, offset: 1000)))
        b.append(.init(uri: "movie.ts", duration: 3.25, byteRange: ByteRange(length: 700, offset: 1500)))
        #expect(b.targetDuration == 11)  // 10.5 rounds to 11
        #expect(b.version == 4)
        let text = b.build().text
        #expect(
            text == """
                #EXTM3U
                #EXT-X-VERSION:4
                #EXT-X-TARGETDURATION:11
                #EXT-X-PLAYLIST-TYPE:VOD
                #EXTINF:10.400,
                #EXT-X-BYTERANGE:1000@0
                movie.ts
                #EXTINF:10.500,
                #EXT-X-BYTERANGE:500@1000
                movie.ts
                #EXTINF:3.250,
                #EXT-X-BYTERANGE:700@1500
                movie.ts
                #EXT-X-ENDLIST

                """)
        // The text parses back strictly, resolves to the same ranges and lints without errors.
        let parsed = try Playlist(text, strict: true)
        #expect(parsed.media().segments.map(\.byteRange) == b.segments.map(\.byteRange))
        #expect(PlaylistLinter().lint(parsed).filter { $0.severity == .error }.isEmpty)
        b.implicitByteRangeOffsets = true
        let implicit = try Playlist(b.build().text, strict: true)
        #expect(implicit.tags(.byteRange).map { $0.tag.byteRange?.offset } == [0, nil, nil])
        #expect(implicit.media().segments.map(\.byteRange) == b.segments.map(\.byteRange))
    }

    @Test func targetDurationUsesTheWrittenValue() {
        var b = MediaPlaylistBuilder(kind: .vod)
        b.append(.init(uri: "a.ts", duration: 6.4996))  // written 6.500, which rounds to 7
        #expect(b.targetDuration == 7)
        b.durationDecimals = 0
        #expect(b.version == 1)
    }

    @Test func liveWindowCountsDroppedSegmentsAndDiscontinuities() throws {
        var b = MediaPlaylistBuilder(kind: .live(window: 3))
        b.mediaSequence = 10
        b.discontinuitySequence = 2
        for i in 0..<6 { b.append(.init(uri: "s\(i).ts", duration: 4, discontinuity: i == 1 || i == 4)) }
        let m = try Playlist(b.build().text, strict: true).media()
        #expect(m.mediaSequence == 13)
        #expect(m.discontinuitySequence == 3)
        #expect(m.segments.map(\.rawURI) == ["s3.ts", "s4.ts", "s5.ts"])
        #expect(m.segments.map(\.discontinuitySequence) == [3, 4, 4])
        #expect(!m.endList)
        #expect(m.playlistType == nil)
    }

    @Test func eventEncryptionMapAndDates() throws {
        var b = MediaPlaylistBuilder(kind: .event(ended: false))
        let key = KeySpec(method: "AES-128", uri: "key.bin", iv: Array(repeating: 0xAB, count: 16))
        let start = try #require(DateTime("2026-01-01T00:00:00.000Z"))
        b.append(.init(uri: "a.mp4", duration: 2, key: key, mapURI: "init.mp4", programDateTime: start))
        b.append(.init(uri: "b.mp4", duration: 2, key: key, mapURI: "init.mp4"))
        b.append(.init(uri: "c.mp4", duration: 2, mapURI: "init.mp4"))
        #expect(b.version == 6)
        let p = try Playlist(b.build().text, strict: true)
        #expect(p.tags(.key).count == 2)  // the key, then METHOD=NONE
        #expect(p.tags(.map).count == 1)
        let m = p.media()
        #expect(m.playlistType == "EVENT")
        #expect(m.segments.map { $0.keys.first?.iv?.count } == [16, 16, nil])
        #expect(
            m.segments.map { $0.programDateTime?.text } == [
                "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:02.000Z", "2026-01-01T00:00:04.000Z",
            ])
        #expect(PlaylistLinter().lint(p).filter { $0.severity == .error }.isEmpty)
    }

    @Test func iFramePlaylist() throws {
        var b = MediaPlaylistBuilder(kind: .vod)
        b.iFramesOnly = true
        b.append(.init(uri: "movie.ts", duration: 2.002, byteRange: ByteRange(length: 9400, offset: 376)))
        b.append(.init(uri: "movie.ts", duration: 2.002, byteRange: ByteRange(length: 7144, offset: 1_012_136)))
        let p = try Playlist(b.build().text, strict: true)
        #expect(p.firstTag(.iFramesOnly) != nil)
        #expect(p.firstTag(.version)?.decimalInteger == 4)
        #expect(p.media().iFramesOnly)
        #expect(PlaylistLinter().lint(p).filter { $0.severity == .error }.isEmpty)
    }

    @Test func multivariant() throws {
        var b = MultivariantPlaylistBuilder()
        b.independentSegments = true
        b.renditions = [
            .init(type: "AUDIO", groupID: "aud", name: "English", uri: "audio/en.m3u8", language: "en", isDefault: true)
        ]
        b.variants = [
            .init(
                uri: "v/720.m3u8", bandwidth: 2_000_000, averageBandwidth: 1_800_000, codecs: "avc1.640028,mp4a.40.2",
                resolution: Resolution(width: 1280, height: 720), frameRate: 30, audio: "aud")
        ]
        b.iFrameVariants = [
            .init(
                uri: "v/720-iframes.m3u8", bandwidth: 200_000, codecs: "avc1.640028",
                resolution: Resolution(width: 1280, height: 720))
        ]
        let p = try Playlist(b.build().text, strict: true)
        let m = p.multivariant(url: "http://127.0.0.1:8080/tok/master.m3u8")
        #expect(m.variants.first?.uri == "http://127.0.0.1:8080/tok/v/720.m3u8")
        #expect(m.variants.first?.frameRate == 30)
        #expect(m.iFrameVariants.first?.uri == "http://127.0.0.1:8080/tok/v/720-iframes.m3u8")
        #expect(m.renditions.first?.autoselect == true)
        let findings = PlaylistLinter().lint(p)
        #expect(findings.filter { $0.severity != .info }.isEmpty, "\(findings)")
    }
}
