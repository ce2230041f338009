// Slates leave no audio hole, measured by ffprobe: a live stream (TS with AAC, AC-3 or E-AC-3 audio, and fMP4 with
// AAC) whose segments 4-33 are one ad break goes through `tsplayer proxy`; ffprobe reads the audio packets of the last
// content segment before the break, of the 30 slates and of the content segment after it (an fMP4 segment after its
// EXT-X-MAP). Each join has no gap, each slot holds its EXTINF's audio within one audio frame, and the 30 slots do not
// drift from the timeline. TS: the slates carry the content's codec, and ffmpeg decodes the served segments joined
// (content, 30 slates, content) without an error.
import Foundation
import Testing

@Suite(.serialized, .temporaryFolders) struct SlateAudioEndToEndTests {
    /// ffprobe's audio packets of `input` (a URL or a file): PTS and duration, in the stream's time base.
    func audioPackets(_ input: String) async throws -> [(pts: Int64, duration: Int64)] {
        let ffprobe = try #require(EndToEnd.tool("ffprobe"))
        let url = input
        let result = try await EndToEnd.run(
            ffprobe,
            ["-v", "error", "-select_streams", "a", "-show_entries", "packet=pts,duration", "-of", "csv=p=0", url])
        #expect(result.status == 0, "ffprobe \(url): \(result.err)")
        return result.out.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard let first = fields.first, let pts = Int64(first) else { return nil }
            // ffprobe leaves the duration of an fMP4 fragment's last packet out: one AAC frame, as every other.
            return (pts, fields.count >= 2 ? Int64(fields[1]) ?? frame : frame)
        }
    }

    /// One audio frame in the stream's time base: 90 kHz for TS, the 48 kHz sample rate for fMP4 (1024 samples for
    /// AAC, 1536 for AC-3 and E-AC-3).
    var frame: Int64 {
        let samples: Int64 = audio == "aac" ? 1024 : 1536
        return fragmented ? samples : samples * 90_000 / 48_000
    }
    var fragmented = false
    var audio = "aac"

    @Test(arguments: [(false, "aac"), (true, "aac"), (false, "ac3"), (false, "eac3")])
    func thirtySlatesCarryTheAudioTimelineWithoutAHoleOrDrift(fragmented: Bool, audio: String) async throws {
        var test = self
        test.fragmented = fragmented
        test.audio = audio
        try await test.check()
    }

    func check() async throws {
        let media: Result<URL, any Error>
        switch (fragmented, audio) {
        case (true, _): media = await ProxyMedia.fragmented
        case (false, "ac3"): media = await ProxyMedia.ac3
        case (false, "eac3"): media = await ProxyMedia.eac3
        default: media = await ProxyMedia.directory
        }
        let dir = try media.get()
        let ticks: Int64 = fragmented ? 48_000 : 90_000
        let python = try #require(EndToEnd.tool("python3"))
        let curl = try #require(EndToEnd.tool("curl"))
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let script = EndToEnd.repositoryRoot.appendingPathComponent("Tests/Origins/hls_origin.py").path
        // A 36-segment window: the break and the segments around it are there from the first poll.
        let origin = try await ProxyTestProcess(
            python,
            [
                script, "--dir", dir.path, "--mode", "live", "--segments", "\(ProxyMedia.segments)", "--window", "36",
                "--breaks", "cue:4-33",
            ] + (fragmented ? ["--fmp4"] : []))
        defer { origin.stop() }
        let port = try #require(Int(origin.firstLine), "origin said \(origin.firstLine)")
        let proxy = try await ProxyTestProcess(
            tsplayer, ["proxy", "http://127.0.0.1:\(port)/stream.m3u8", "--allow-private"])
        defer { proxy.stop() }
        let local = proxy.firstLine
        let playlist = try await EndToEnd.run(curl, ["-s", "-f", local])
        #expect(playlist.status == 0, "\(proxy.stderr)")
        let lines = playlist.out.split(separator: "\n").map(String.init)
        #expect(lines.contains("#EXT-X-MEDIA-SEQUENCE:0"), "\(playlist.out.prefix(400))")
        // Each segment with the EXT-X-MAP in force for it (fMP4).
        var uris: [String] = []
        var maps: [String?] = []
        var map: String?
        for line in lines {
            if line.hasPrefix("#EXT-X-MAP:URI=\"") {
                map = String(line.dropFirst(16).prefix { $0 != "\"" })
            } else if !line.hasPrefix("#") && !line.isEmpty {
                uris.append(line)
                maps.append(map)
            }
        }
        let durations = lines.filter { $0.hasPrefix("#EXTINF:") }.compactMap {
            Double($0.dropFirst(8).prefix { $0 != "," })
        }
        try #require(uris.count == 36 && durations.count == 36, "\(playlist.out.prefix(2000))")
        let proxyPort = try #require(URL(string: local)?.port, "proxy said \(local)")
        let base = "http://127.0.0.1:\(proxyPort)"
        for msn in 4...33 { #expect(uris[msn].contains("/slate/"), "segment \(msn): \(uris[msn])") }
        #expect(!uris[3].contains("/slate/") && !uris[34].contains("/slate/"))

        let scratch = TemporaryFolders.make(prefix: "slate-audio-").appendingPathComponent("segment.mp4")
        let absolute = { (uri: String) in uri.hasPrefix("http") ? uri : base + uri }
        var previousEnd: Int64?
        var gaps: [(msn: Int, ticks: Int64)] = []
        var holes: [(msn: Int, ticks: Int64)] = []
        var slateAudio: Int64 = 0
        var firstSlateStart: Int64?
        var lastSlateEnd: Int64 = 0
        var joined = Data()
        for msn in 3...34 {
            var input = absolute(uris[msn])
            if !fragmented {
                let segment = try await EndToEnd.run(curl, ["-s", "-f", input])
                #expect(segment.status == 0, "segment \(msn): \(input)")
                joined += segment.stdout
                let file = scratch.deletingLastPathComponent().appendingPathComponent("\(msn).ts")
                try segment.stdout.write(to: file)
                input = file.path
                // The slates carry the content's codec.
                let codec = try await EndToEnd.run(
                    try #require(EndToEnd.tool("ffprobe")),
                    [
                        "-v", "error", "-select_streams", "a", "-show_entries", "stream=codec_name", "-of", "csv=p=0",
                        input,
                    ])
                #expect(
                    codec.out.split(separator: "\n").first.map(String.init) == audio, "segment \(msn): \(codec.out)")
            }
            if fragmented {
                // ffprobe reads a fragment after its init section.
                let initURI = try #require(maps[msn], "segment \(msn) has no EXT-X-MAP")
                let initBytes = try await EndToEnd.run(curl, ["-s", "-f", absolute(initURI)]).stdout
                let segment = try await EndToEnd.run(curl, ["-s", "-f", input]).stdout
                try (initBytes + segment).write(to: scratch)
                input = scratch.path
            }
            let packets = try await audioPackets(input)
            let first = try #require(packets.first, "segment \(msn) has no audio")
            let sum = packets.reduce(Int64(0)) { $0 + $1.duration }
            let end = (packets.last.map { $0.pts + $0.duration }) ?? first.pts
            if let previousEnd { gaps.append((msn, first.pts - previousEnd)) }
            if (4...33).contains(msn) {
                let slot = Int64((durations[msn] * Double(ticks)).rounded())
                holes.append((msn, slot - sum))
                slateAudio += sum
                if firstSlateStart == nil { firstSlateStart = first.pts }
                lastSlateEnd = end
            }
            previousEnd = end
        }
        // Every join (content to slate, slate to slate, slate to content) is seamless: 0 ticks.
        let millisecond = ticks / 1000
        #expect(
            gaps.allSatisfy { $0.ticks == 0 },
            "audio gaps (ticks) at \(gaps.filter { $0.ticks != 0 })")
        // Each slot's audio is its EXTINF within one audio frame (less audio than the slot: under a frame of hole).
        #expect(holes.allSatisfy { abs($0.ticks) < frame }, "per-slot audio shortfall (ticks): \(holes)")
        // 30 slots of 2 s: 60 s of audio within one frame, and the slates' audio spans exactly what it holds.
        #expect(
            abs(slateAudio - 60 * ticks) < frame,
            "30 slots hold \(Double(slateAudio) / Double(millisecond)) ms of audio")
        #expect(lastSlateEnd - (firstSlateStart ?? 0) == slateAudio)
        if !fragmented {
            // ffmpeg decodes the audio across the break (content, the 30 slates, content) without an error.
            let file = scratch.deletingLastPathComponent().appendingPathComponent("joined.ts")
            try joined.write(to: file)
            let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
            let decode = try await EndToEnd.run(
                ffmpeg, ["-hide_banner", "-nostdin", "-v", "error", "-i", file.path, "-map", "0:a", "-f", "null", "-"])
            #expect(
                decode.status == 0 && decode.err.isEmpty, "ffmpeg decoding the \(audio) across the break: \(decode.err)"
            )
        }
    }
}
