import Foundation
import FragmentedMP4
import HLSAdFilter
import HLSPlaylist
import HTTPClient
import TestSupport
import Testing

@testable import HLSProxy

/// fMP4 slates (the shipped template repeated onto the content timeline), the proxy's fMP4 live routes, EXT-X-DEFINE
/// substitution before URIs are rewritten, and the per-playlist route cache.
@Suite(.serialized) struct ProxyFMP4Tests {
    // MARK: Synthetic ISO BMFF

    static func box(_ type: String, _ body: [UInt8]) -> [UInt8] {
        let size = UInt32(8 + body.count)
        return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
            + Array(type.utf8) + body
    }
    static func u32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }
    static func u64(_ v: UInt64) -> [UInt8] { u32(UInt32(v >> 32)) + u32(UInt32(v & 0xFFFF_FFFF)) }

    static func trak(id: UInt32, timescale: UInt32, handler: String) -> [UInt8] {
        let tkhd = box("tkhd", [0, 0, 0, 3] + u32(0) + u32(0) + u32(id) + [UInt8](repeating: 0, count: 68))
        let mdhd = box("mdhd", [0, 0, 0, 0] + u32(0) + u32(0) + u32(timescale) + u32(0) + [0x55, 0xC4, 0, 0])
        let hdlr = box("hdlr", [0, 0, 0, 0] + u32(0) + Array(handler.utf8) + [UInt8](repeating: 0, count: 13))
        return box("trak", tkhd + box("mdia", mdhd + hdlr))
    }

    /// An init section with an audio track (id 2, 48 kHz) before the video track (id 1, `videoScale`).
    static func initSection(videoScale: UInt32) -> [UInt8] {
        box("ftyp", Array("iso6".utf8) + u32(0))
            + box(
                "moov",
                trak(id: 2, timescale: 48000, handler: "soun")
                    + trak(id: 1, timescale: videoScale, handler: "vide"))
    }

    /// A segment with one fragment: an audio traf then a video traf, each with a version-1 tfdt.
    static func segment(videoTime: UInt64, audioTime: UInt64) -> [UInt8] {
        func traf(_ id: UInt32, _ time: UInt64) -> [UInt8] {
            box("traf", box("tfhd", [0, 2, 0, 0] + u32(id)) + box("tfdt", [1, 0, 0, 0] + u64(time)))
        }
        return box("moof", box("mfhd", [0, 0, 0, 0] + u32(7)) + traf(2, audioTime) + traf(1, videoTime))
            + box("mdat", [1, 2, 3])
    }

    /// The fragments of an fMP4 body: (mfhd sequence, tfdt, tfhd default sample duration).
    static func fragments(_ bytes: [UInt8]) -> [(sequence: UInt32, time: UInt64, duration: UInt32)] {
        func u32(_ b: [UInt8], _ i: Int) -> UInt32 {
            UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
        }
        var out: [(UInt32, UInt64, UInt32)] = []
        for moof in (try? BoxReader.parse(bytes)) ?? [] where moof.type == "moof" {
            guard let mfhd = moof.child("mfhd")?.data, let tfhd = moof.descendant(["traf", "tfhd"])?.data,
                let tfdt = moof.descendant(["traf", "tfdt"])?.data, mfhd.count >= 8, tfhd.count >= 12,
                tfdt.count >= 12
            else { continue }
            let time = UInt64(u32(tfdt, 4)) << 32 | UInt64(u32(tfdt, 8))
            // tfhd flags 0x020038 in the template: track_ID, then default duration.
            out.append((u32(mfhd, 4), time, u32(tfhd, 8)))
        }
        return out
    }

    // MARK: Template and timeline

    @Test func theShippedTemplateIsReadable() throws {
        let template = try #require(FragmentedSlateTemplate.shipped)
        #expect(template.track == FragmentedSlateTemplate.Track(id: 1, timescale: 90000))
        #expect(template.frameSeconds == 0.04)
        let initSection = template.initSection()
        let types = try BoxReader.parse(initSection).map(\.type)
        #expect(types == ["ftyp", "moov"])
        #expect(FragmentedSlateTemplate.videoTrack(initSection: initSection) == template.track)
        // Made for another track: its ID and timescale in the init section and in every fragment.
        let other = FragmentedSlateTemplate.Track(id: 3, timescale: 12800)
        let adapted = template.initSection(for: other)
        #expect(FragmentedSlateTemplate.videoTrack(initSection: adapted) == other)
        let slate = try #require(template.slate(duration: 2, start: 10, track: other))
        #expect(FragmentedSlateTemplate.contentStart(segment: slate, initSection: adapted) == 10)
        let f = Self.fragments(slate)
        #expect(f.count == 50)
        #expect(f.map { UInt64($0.duration) }.reduce(0, +) == 2 * 12800)
        #expect(f.allSatisfy { $0.duration == 512 })
    }

    @Test func aSlateLastsExactlyTheDurationAndStartsWhereTheContentIs() throws {
        let template = try #require(FragmentedSlateTemplate.shipped)
        for (duration, start) in [(4.0, 100.0), (2.002, 0.0), (0.03, 7.5), (6.006, 86_400.25)] {
            let slate = try #require(template.slate(duration: duration, start: start))
            let f = Self.fragments(slate)
            let total = UInt64((duration * 90000).rounded())
            #expect(f.map { UInt64($0.duration) }.reduce(0, +) == total, "\(duration)")
            #expect(f.map(\.sequence) == (1...UInt32(f.count)).map { $0 })
            let first = UInt64((start * 90000).rounded())
            var t = first
            for fragment in f {
                #expect(fragment.time == t, "decode times run on without a gap (\(duration) at \(start))")
                t += UInt64(fragment.duration)
            }
            #expect(t == first + total)
        }
        #expect(template.slate(duration: 0, start: 0) == nil)
        #expect(template.slate(duration: 4, start: -1) == nil)
    }

    @Test func theContentStartComesFromTheVideoTracksDecodeTimeAndTimescale() {
        let initSection = Self.initSection(videoScale: 1000)
        let segment = Self.segment(videoTime: 12_345_000, audioTime: 999)
        #expect(FragmentedSlateTemplate.contentStart(segment: segment, initSection: initSection) == 12_345)
        // Truncated or foreign input gives nil, never a trap.
        for cut in stride(from: 0, to: segment.count, by: 7) {
            _ = FragmentedSlateTemplate.contentStart(segment: Array(segment.prefix(cut)), initSection: initSection)
        }
        for cut in stride(from: 0, to: initSection.count, by: 5) {
            _ = FragmentedSlateTemplate.contentStart(segment: segment, initSection: Array(initSection.prefix(cut)))
        }
        #expect(FragmentedSlateTemplate.contentStart(segment: [1, 2, 3], initSection: initSection) == nil)
    }

    /// An init section of audio-only content: one 48 kHz stereo AC-3 track (ID 4).
    static func stereoAC3Init() throws -> [UInt8] {
        try InitSegment(tracks: [
            Track(
                trackID: 4, timescale: 48000,
                codec: .ac3(
                    AC3SpecificBox(fscod: 0, bsmod: 0, acmod: 2, lfeon: false, bitRateCode: 10),
                    channelCount: 2, sampleRate: 48000))
        ]).serialized()
    }

    /// Audio-only content (an AC-3 track, no video): no video track is found, so slates carry audio alone: the
    /// init section declares the content's audio track only (its `trak` and `trex`, none of the template's video),
    /// and a slate is silence on that track, continuing from where the anchor's audio ended, the frames that start
    /// within the slot. ffmpeg decodes the slate after its init section without an error: 63 AC-3 frames on one
    /// audio stream, no video.
    @Test(.temporaryFolders) func audioOnlyContentGetsAudioOnlySlates() async throws {
        let contentInit = try Self.stereoAC3Init()
        #expect(FragmentedSlateTemplate.videoTrack(initSection: contentInit) == nil)
        let audio = try #require(FragmentedSlateTemplate.audioTrack(initSection: contentInit))
        let maker = ProxySlateMaker()
        let slateInit = try #require(maker.fragmentedSlateInit(contentInit: contentInit))
        let moov = try #require(try BoxReader.parse(slateInit).first { $0.type == "moov" })
        let traks = moov.children.filter { $0.type == "trak" }
        #expect(traks.count == 1)
        #expect(FragmentedSlateTemplate.audioTrack(initSection: slateInit) == audio)
        let trexes = try #require(moov.child("mvex")).children.filter { $0.type == "trex" }
        #expect(trexes.map { Array($0.data[4..<8]) } == [[0, 0, 0, 4]])
        // The anchor: 62 frames of AC-3 from 2 s (96000 ticks); the slot follows it for 2 s.
        let anchor = FragmentedSlateTemplate.silentAudioFragment(
            audio: audio, firstDecodeTime: 96000, frames: 62, sequence: 7)
        let anchorEnd = try #require(FragmentedSlateTemplate.audioEnd(segment: anchor, track: audio))
        #expect(anchorEnd == 96000 + 62 * 1536)
        let slot = SlateSlot(
            mediaSequence: 11, duration: 2, anchorURI: "http://127.0.0.1:1/10.m4s", anchorMediaSequence: 10,
            offsetFromAnchor: 62.0 * 1536 / 48000, isFragmentedMP4: true)
        let slate = try #require(await maker.fragmentedSlate(for: slot, anchor: anchor, anchorInit: contentInit))
        let moofs = try BoxReader.parse(slate).filter { $0.type == "moof" }
        #expect(moofs.count == 1)
        let trafs = try #require(moofs.first).children.filter { $0.type == "traf" }
        #expect(trafs.count == 1)
        let tfhd = try #require(trafs.first?.child("tfhd")).data
        #expect(Array(tfhd[4..<8]) == [0, 0, 0, 4])
        #expect(
            FragmentedSlateTemplate.contentStart(segment: slate, initSection: slateInit) == Double(anchorEnd) / 48000)
        // 2 s is 62.5 frames: the 63 that start within it.
        #expect(FragmentedSlateTemplate.audioEnd(segment: slate, track: audio) == anchorEnd + 63 * 1536)
        let file = URL(fileURLWithPath: TemporaryFolders.make(prefix: "audio-only-slate-")).appendingPathComponent(
            "slate.mp4")
        try Data(slateInit + slate).write(to: file)
        let ffprobe = try #require(ExternalProgram.find("ffprobe"))
        let probe = try await ExternalProgram.run(
            ffprobe, ["-v", "error", "-show_entries", "stream=codec_type,codec_name", "-of", "csv=p=0", file.path])
        // One stream (a line per stream: codec, type and an empty field).
        let streams = probe.out.split(separator: "\n").map { $0.split(separator: ",").prefix(2).joined(separator: ",") }
        #expect(streams == ["ac3,audio"], "\(probe.out) \(probe.err)")
        let ffmpeg = try #require(ExternalProgram.find("ffmpeg"))
        let decode = try await ExternalProgram.run(
            ffmpeg, ["-hide_banner", "-nostdin", "-v", "error", "-i", file.path, "-f", "framemd5", "-"])
        #expect(decode.status == 0 && decode.err.isEmpty, "\(decode.err)")
        let frames = decode.out.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(frames.count == 63)
        // Without an anchor there is nothing to continue, and no video to stand in: no slate.
        #expect(await maker.fragmentedSlate(for: slot, anchor: nil, anchorInit: contentInit) == nil)
        // Audio-only content slates cannot carry (MPEG audio here) gets no slate init section rather than video.
        let mp3Init = try InitSegment(tracks: [
            Track(trackID: 2, timescale: 44100, codec: .mp3(channelCount: 2, sampleRate: 44100))
        ]).serialized()
        #expect(maker.fragmentedSlateInit(contentInit: mp3Init) == nil)
    }

    /// A slot's duration and offset come from EXTINF values, which may say anything (10^40 s, or 400 digits that
    /// read as infinity): audio-only content's slates, which do not go through the template's bounds, trapped
    /// converting them to ticks. Such a slot gets no slate, as for content with video; a slot within bounds still
    /// gets its silence.
    @Test func audioOnlySlotsOfAnyDurationOrOffsetDoNotTrap() async throws {
        let contentInit = try Self.stereoAC3Init()
        let audio = try #require(FragmentedSlateTemplate.audioTrack(initSection: contentInit))
        let anchor = FragmentedSlateTemplate.silentAudioFragment(
            audio: audio, firstDecodeTime: 96000, frames: 62, sequence: 7)
        let maker = ProxySlateMaker()
        func slot(duration: Double, offset: Double) -> SlateSlot {
            SlateSlot(
                mediaSequence: 11, duration: duration, anchorURI: "http://127.0.0.1:1/10.m4s", anchorMediaSequence: 10,
                offsetFromAnchor: offset, isFragmentedMP4: true)
        }
        let anchorDuration = 62.0 * 1536 / 48000
        for (duration, offset) in [
            (1e40, anchorDuration), (.infinity, anchorDuration), (2, 1e40), (2, .infinity), (2, -1e40), (.nan, 0),
        ] {
            let slate = await maker.fragmentedSlate(
                for: slot(duration: duration, offset: offset), anchor: anchor, anchorInit: contentInit)
            #expect(slate == nil, "\(duration) s at \(offset) s")
        }
        #expect(
            await maker.fragmentedSlate(
                for: slot(duration: 2, offset: anchorDuration), anchor: anchor, anchorInit: contentInit) != nil)
    }

    // MARK: Through the proxy

    static func fragmentedWindow(first: Int, ads: Set<Int>, count: Int = 5) -> String {
        var window = MediaPlaylistText.window(
            first: first, count: count, version: 7, targetDuration: 4, duration: "4.000", uri: { "seg\($0).m4s" },
            tags: { m in
                if ads.contains(m), !ads.contains(m - 1) {
                    return "#EXT-X-CUE-OUT:\(4 * ads.filter { $0 >= m }.count)\n"
                }
                return !ads.contains(m) && ads.contains(m - 1) ? "#EXT-X-CUE-IN\n" : ""
            })
        window.header = "#EXT-X-MAP:URI=\"init.mp4\"\n"
        return window.text
    }

    @Test func fragmentedLiveSlatesThroughTheProxy() async throws {
        let origin = try await ProxyTestOrigin()
        let ads: Set<Int> = [12, 13]
        origin.set("/live.m3u8", Self.fragmentedWindow(first: 10, ads: ads))
        origin.set("/init.mp4", bytes: Self.initSection(videoScale: 1000), contentType: "video/mp4")
        // Segment 11 (the anchor) starts at 44 s on the content timeline.
        origin.set("/seg11.m4s", bytes: Self.segment(videoTime: 44_000, audioTime: 0), contentType: "video/mp4")
        var options = AdStrippingProxy.Options()
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = 0
        let proxy = AdStrippingProxy(url: origin.base + "/live.m3u8", options: options)
        let url = try await proxy.start()
        defer {
            Task {
                await proxy.stop()
                await origin.stop()
            }
        }
        var previous: Playlist?
        var published: [UInt64: UInt64] = [:]
        for first in [10, 11, 12, 13, 14] {
            origin.set("/live.m3u8", Self.fragmentedWindow(first: first, ads: ads))
            let response = try await ProxyTestClient.get(url)
            #expect(response.status == 200)
            let playlist = try Playlist(response.text)
            let media = playlist.media(url: url)
            #expect(media.mediaSequence == UInt64(first))
            #expect(media.segments.count == 5)
            for segment in media.segments {
                let m = Int(segment.mediaSequence)
                let isAd = ads.contains(m)
                #expect(segment.uri.contains("/slate/") == isAd, "\(m)\n\(response.text)")
                #expect(segment.map?.uri.hasSuffix(isAd ? "/init.mp4" : ".mp4") == true)
                #expect(segment.map?.uri.contains("/slate/") == isAd, "\(m)\n\(response.text)")
                #expect(segment.discontinuity == (m == 12 || m == 14), "\(m)\n\(response.text)")
                if let earlier = published[segment.mediaSequence] {
                    #expect(segment.discontinuitySequence == earlier, "\(m)\n\(response.text)")
                }
                published[segment.mediaSequence] = segment.discontinuitySequence
            }
            let errors = PlaylistLinter(url: url).lint(playlist, previous: previous).filter { $0.severity == .error }
            #expect(errors.isEmpty, "\(errors)\n\(response.text)")
            previous = playlist
            if first == 10 {
                let slate = try #require(media.segments.first { $0.mediaSequence == 13 })
                let initResponse = try await ProxyTestClient.get(try #require(slate.map?.uri))
                #expect(initResponse.status == 200)
                #expect(initResponse.header("Content-Type") == "video/mp4")
                // Made for the content's video track (ID 1, timescale 1000).
                #expect(
                    FragmentedSlateTemplate.videoTrack(initSection: initResponse.body)
                        == FragmentedSlateTemplate.Track(id: 1, timescale: 1000))
                let body = try await ProxyTestClient.get(slate.uri)
                #expect(body.status == 200)
                #expect(body.header("Content-Type") == "video/mp4")
                let f = Self.fragments(body.body)
                // 13 starts 8 s after the anchor 11 (44 s): 52 s, in the content's timescale.
                #expect(f.first?.time == 52 * 1000)
                #expect(f.map { UInt64($0.duration) }.reduce(0, +) == 4 * 1000)
            }
        }
        #expect(published[14] == 2)
    }

    /// An fMP4 live stream whose audio slates cannot carry silence on (MPEG audio, still unsupported) reaches the proxy:
    /// its slates are served (video only) and ``AdStrippingProxy/Event/slatesWithoutAudio(playlist:reason:)`` is
    /// raised once for the playlist, naming the codec, however many slates of it are fetched and polls made.
    @Test func fragmentedSlatesWithoutAudioAreReportedOncePerPlaylist() async throws {
        let origin = try await ProxyTestOrigin()
        let ads: Set<Int> = [12, 13]
        origin.set("/live.m3u8", Self.fragmentedWindow(first: 10, ads: ads))
        // x264's SPS and PPS of a 320x240 stream; the video on track 1 (timescale 1000), MP3 on track 2.
        let sps: [UInt8] = [
            0x67, 0x64, 0x00, 0x0D, 0xAC, 0xD9, 0x41, 0x41, 0xFB, 0x01, 0x10, 0x00, 0x00, 0x03, 0x00, 0x10, 0x00, 0x00,
            0x03, 0x03, 0x20, 0xF1, 0x42, 0x99, 0x60, 0x00,
        ]
        let pps: [UInt8] = [0x68, 0xEB, 0xE3, 0xCB, 0x22, 0xC0]
        let content = try InitSegment(tracks: [
            Track(trackID: 1, timescale: 1000, codec: .avc(sps: [sps], pps: [pps], width: 320, height: 240)),
            Track(trackID: 2, timescale: 48000, codec: .mp3(channelCount: 2, sampleRate: 48000)),
        ]).serialized()
        origin.set("/init.mp4", bytes: content, contentType: "video/mp4")
        origin.set("/seg11.m4s", bytes: Self.segment(videoTime: 44_000, audioTime: 0), contentType: "video/mp4")
        var options = AdStrippingProxy.Options()
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = 0
        let proxy = AdStrippingProxy(url: origin.base + "/live.m3u8", options: options)
        let url = try await proxy.start()
        defer {
            Task {
                await proxy.stop()
                await origin.stop()
            }
        }
        let reports = Task {
            var reasons: [(playlist: String, reason: String)] = []
            for await event in proxy.events {
                if case .slatesWithoutAudio(let playlist, let reason) = event { reasons.append((playlist, reason)) }
            }
            return reasons
        }
        for first in [10, 11, 12] {
            origin.set("/live.m3u8", Self.fragmentedWindow(first: first, ads: ads))
            let response = try await ProxyTestClient.get(url)
            #expect(response.status == 200)
            let media = try Playlist(response.text).media(url: url)
            for segment in media.segments where segment.uri.contains("/slate/") {
                let body = try await ProxyTestClient.get(segment.uri)
                #expect(body.status == 200 && !Self.fragments(body.body).isEmpty, "\(segment.uri)")
                // Video only: every fragment is on the template's video track.
                var tracks: Set<[UInt8]> = []
                for moof in try BoxReader.parse(body.body) where moof.type == "moof" {
                    let tfhd = try #require(moof.descendant(["traf", "tfhd"])?.data)
                    tracks.insert(Array(tfhd[4..<8]))
                }
                #expect(tracks == [[0, 0, 0, 1]], "\(segment.uri)")
            }
        }
        // Long enough for any further report to arrive, then the stream is let go.
        try await Task.sleep(for: .milliseconds(300))
        reports.cancel()
        let reasons = await reports.value
        #expect(reasons.count == 1, "\(reasons)")
        #expect(reasons.first?.playlist == origin.base + "/live.m3u8")
        #expect(
            reasons.first?.reason
                == "the content's audio is MPEG audio: slates carry no audio (silence for it needs an encoder)")
    }

    // MARK: Variables and the route cache

    @Test func variablesAreSubstitutedBeforeURIsAreRewritten() async throws {
        let origin = try await ProxyTestOrigin()
        origin.set(
            "/master.m3u8?token=t1",
            "#EXTM3U\n#EXT-X-DEFINE:NAME=\"path\",VALUE=\"media\"\n#EXT-X-DEFINE:QUERYPARAM=\"token\"\n"
                + "#EXT-X-STREAM-INF:BANDWIDTH=1000\n{$path}/v.m3u8?token={$token}\n")
        origin.set(
            "/media/v.m3u8?token=t1",
            "#EXTM3U\n#EXT-X-VERSION:8\n#EXT-X-DEFINE:IMPORT=\"token\"\n#EXT-X-DEFINE:NAME=\"k\",VALUE=\"keys\"\n"
                + "#EXT-X-TARGETDURATION:4\n#EXT-X-KEY:METHOD=AES-128,URI=\"{$k}/1.key?token={$token}\"\n"
                + "#EXTINF:4,\nseg0.ts?token={$token}\n#EXT-X-ENDLIST\n")
        origin.set("/media/seg0.ts?token=t1", bytes: [7, 7, 7], contentType: "video/mp2t")
        origin.set("/media/keys/1.key?token=t1", bytes: [UInt8](repeating: 1, count: 16), contentType: "x/key")
        var options = AdStrippingProxy.Options()
        options.fetch.allowPrivateUpstreams = true
        options.fetch.retries = 0
        let proxy = AdStrippingProxy(url: origin.base + "/master.m3u8?token=t1", options: options)
        let url = try await proxy.start()
        defer {
            Task {
                await proxy.stop()
                await origin.stop()
            }
        }
        let master = try await ProxyTestClient.get(url)
        #expect(master.status == 200)
        #expect(!master.text.contains("{$"))
        // The QUERYPARAM the player cannot see (its URL has no query) is restated as NAME/VALUE.
        #expect(master.text.contains("#EXT-X-DEFINE:NAME=\"token\",VALUE=\"t1\""))
        let variant = try #require(try Playlist(master.text).multivariant(url: url).variants.first)
        let media = try await ProxyTestClient.get(variant.uri)
        #expect(media.status == 200, "\(media.text)")
        #expect(media.text.contains("#EXT-X-DEFINE:NAME=\"token\",VALUE=\"t1\""))
        let view = try Playlist(media.text).media(url: variant.uri)
        #expect(view.diagnostics.isEmpty, "\(view.diagnostics)")
        let segment = try #require(view.segments.first)
        #expect((try await ProxyTestClient.get(segment.uri)).body == [7, 7, 7])
        let key = try #require(segment.keys.first?.uri)
        #expect((try await ProxyTestClient.get(key)).body == [UInt8](repeating: 1, count: 16))
    }

    @Test func aSlidingWindowKeepsEverySegmentsRoute() throws {
        let proxy = AdStrippingProxy(url: "https://cdn.example.com/live.m3u8")
        var routes: [String: String] = [:]
        for first in 0..<20 {
            let t = MediaPlaylistText.window(
                first: first, count: 10, version: nil, targetDuration: 2, duration: "2",
                uri: { "seg\($0).ts?q=\($0 % 3)" }
            ).text
            let playlist = try Playlist(t)
            let fetched = FetchedPlaylist(
                bytes: Array(t.utf8), playlist: playlist, url: "https://cdn.example.com/live.m3u8")
            let out = try Playlist(bytes: proxy.media(fetched, playlistID: "p1"))
            let segments = out.media().segments
            #expect(segments.count == 10)
            for (segment, m) in zip(segments, first..<(first + 10)) {
                if let earlier = routes["seg\(m)"] { #expect(segment.uri == earlier, "segment \(m) moved") }
                routes["seg\(m)"] = segment.uri
            }
            // The same bytes again give the same output.
            #expect(try Playlist(bytes: proxy.media(fetched, playlistID: "p1")).media().segments == segments)
        }
        #expect(Set(routes.values).count == routes.count)
    }
}

@Suite struct ProxyAES128Tests {
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16) ?? 0)
            i = j
        }
        return out
    }

    @Test func fips197AndSP80038AVectors() throws {
        // FIPS-197 appendix C.1 (one block: CBC with a zero IV is the bare cipher).
        let plain = AES128.decryptCBC(
            Self.bytes("69c4e0d86a7b0430d8cdb78070b4c55a"), key: Self.bytes("000102030405060708090a0b0c0d0e0f"),
            iv: [UInt8](repeating: 0, count: 16), unpad: false)
        #expect(plain == Self.bytes("00112233445566778899aabbccddeeff"))
        // SP 800-38A F.2.2 (CBC-AES128.Decrypt), two blocks.
        let cbc = AES128.decryptCBC(
            Self.bytes("7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"),
            key: Self.bytes("2b7e151628aed2a6abf7158809cf4f3c"), iv: Self.bytes("000102030405060708090a0b0c0d0e0f"),
            unpad: false)
        #expect(cbc == Self.bytes("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"))
    }

    @Test func paddingIsCheckedAndBadInputGivesNil() {
        let key = [UInt8](repeating: 1, count: 16)
        let iv = [UInt8](repeating: 2, count: 16)
        #expect(AES128.decryptCBC([1, 2, 3], key: key, iv: iv) == nil)
        #expect(AES128.decryptCBC([], key: key, iv: iv) == nil)
        #expect(AES128.decryptCBC([UInt8](repeating: 0, count: 16), key: [1], iv: iv) == nil)
        // Random bytes almost never end in valid padding; whatever they give, nothing traps.
        for n in 1...8 { _ = AES128.decryptCBC((0..<(16 * n)).map { UInt8($0 * 7 % 256) }, key: key, iv: iv) }
    }
}
