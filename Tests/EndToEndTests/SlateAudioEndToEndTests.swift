// Slates leave no audio hole, measured by ffprobe: a live stream (TS, and fMP4) whose segments 4-33 are one ad break
// goes through `tsplayer proxy`; ffprobe reads the audio packets of the last content segment before the break, of the
// 30 slates and of the content segment after it (an fMP4 segment after its EXT-X-MAP). Each join has no gap, each slot holds its EXTINF's audio within one AAC frame,
// and the 30 slots do not drift from the timeline.
import Foundation
import Testing

@Suite(.serialized, .temporaryFolders) struct SlateAudioEndToEndTests {
    /// ffprobe's audio packets of `input` (a URL or a file): PTS and duration, in the stream's time base.
    func audioPackets(_ input: String) throws -> [(pts: Int64, duration: Int64)] {
        let ffprobe = try #require(EndToEnd.tool("ffprobe"))
        let url = input
        let result = try EndToEnd.run(
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

    /// One AAC frame in the stream's time base: 90 kHz for TS, the 48 kHz sample rate for fMP4.
    var frame: Int64 { fragmented ? 1024 : 1920 }
    var fragmented = false

    @Test(arguments: [false, true]) func thirtySlatesCarryTheAudioTimelineWithoutAHoleOrDrift(fragmented: Bool) throws {
        var test = self
        test.fragmented = fragmented
        try test.check()
    }

    func check() throws {
        let dir = try (fragmented ? ProxyMedia.fragmented : ProxyMedia.directory).get()
        let ticks: Int64 = fragmented ? 48_000 : 90_000
        let python = try #require(EndToEnd.tool("python3"))
        let curl = try #require(EndToEnd.tool("curl"))
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let script = EndToEnd.repositoryRoot.appendingPathComponent("Tests/Origins/hls_origin.py").path
        // A 36-segment window: the break and the segments around it are there from the first poll.
        let origin = try ProxyTestProcess(
            python,
            [
                script, "--dir", dir.path, "--mode", "live", "--segments", "\(ProxyMedia.segments)", "--window", "36",
                "--breaks", "cue:4-33",
            ] + (fragmented ? ["--fmp4"] : []))
        defer { origin.stop() }
        let port = try #require(Int(origin.firstLine), "origin said \(origin.firstLine)")
        let proxy = try ProxyTestProcess(
            tsplayer, ["proxy", "http://127.0.0.1:\(port)/stream.m3u8", "--allow-private"])
        defer { proxy.stop() }
        let local = proxy.firstLine
        let playlist = try EndToEnd.run(curl, ["-s", "-f", local])
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
        for msn in 3...34 {
            var input = absolute(uris[msn])
            if fragmented {
                // ffprobe reads a fragment after its init section.
                let initURI = try #require(maps[msn], "segment \(msn) has no EXT-X-MAP")
                let initBytes = try EndToEnd.run(curl, ["-s", "-f", absolute(initURI)]).stdout
                let segment = try EndToEnd.run(curl, ["-s", "-f", input]).stdout
                try (initBytes + segment).write(to: scratch)
                input = scratch.path
            }
            let packets = try audioPackets(input)
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
        // Every join (content to slate, slate to slate, slate to content) is seamless.
        let millisecond = ticks / 1000
        #expect(
            gaps.allSatisfy { abs($0.ticks) < millisecond },
            "audio gaps (ticks) at \(gaps.filter { abs($0.ticks) >= millisecond })")
        // Each slot's audio is its EXTINF within one AAC frame (less audio than the slot: under a frame of hole).
        #expect(holes.allSatisfy { abs($0.ticks) < frame }, "per-slot audio shortfall (ticks): \(holes)")
        // 30 slots of 2 s: 60 s of audio within one frame, and the slates' audio spans exactly what it holds.
        #expect(
            abs(slateAudio - 60 * ticks) < frame,
            "30 slots hold \(Double(slateAudio) / Double(millisecond)) ms of audio")
        #expect(lastSlateEnd - (firstSlateStart ?? 0) == slateAudio)
    }
}
