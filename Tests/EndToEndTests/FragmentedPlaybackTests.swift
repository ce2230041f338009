// Fragmented MP4 playback end to end: `tsplayer serve` of fixtures that ffmpeg makes at test time, read back by
// ffmpeg and ffprobe as a real HLS client (framemd5 per stream against the source .ts), linted by m3u8lint; and
// `tsplayer remux` checked the same way.
import Foundation
import Testing

/// The fixture shapes, made once per test process.
enum FragmentedFixtures {
    static let video = ["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25"]
    static func tone(_ frequency: Int, rate: Int = 48000) -> [String] {
        ["-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=\(rate)"]
    }
    static let x264 = ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-g", "25", "-bf", "2"]
    static let x265 = [
        "-c:v", "libx265", "-pix_fmt", "yuv420p", "-x265-params", "log-level=error:keyint=25:bframes=3:open-gop=1",
    ]

    /// 5 s of H.264 + AAC.
    static var h264AAC: URL? { get async { await h264AACFixture.value } }
    private static let h264AACFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("fmp4-h264-aac.ts") { path in
            video + tone(330) + ["-t", "5"] + x264 + ["-c:a", "aac", "-f", "mpegts", path]
        }
    }
    /// 5 s of HEVC with B-frames and open GOPs + AC-3.
    static var hevcAC3: URL? { get async { await hevcAC3Fixture.value } }
    private static let hevcAC3Fixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("fmp4-hevc-ac3.ts") { path in
            video + tone(330) + ["-t", "5"] + x265 + ["-c:a", "ac3", "-f", "mpegts", path]
        }
    }
    /// 5 s of H.264 with two AAC tracks, English and French.
    static var twoLanguages: URL? { get async { await twoLanguagesFixture.value } }
    private static let twoLanguagesFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("fmp4-two-languages.ts") { path in
            video + tone(330) + tone(550) + ["-t", "5", "-map", "0", "-map", "1", "-map", "2"] + x264
                + ["-c:a", "aac", "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra"]
                + ["-f", "mpegts", path]
        }
    }
    /// 5 s of H.264 + MPEG-1 layer II audio.
    static var mp2: URL? { get async { await mp2Fixture.value } }
    private static let mp2Fixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("fmp4-mp2.ts") { path in
            video + tone(330) + ["-t", "5"] + x264 + ["-c:a", "mp2", "-f", "mpegts", path]
        }
    }
    /// 5 s of AAC alone.
    static var audioOnly: URL? { get async { await audioOnlyFixture.value } }
    private static let audioOnlyFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("fmp4-audio-only.ts") { path in
            tone(330, rate: 44100) + ["-t", "5", "-c:a", "aac", "-f", "mpegts", path]
        }
    }
    /// 6 s of H.264 + AAC whose time stamps pass 2^33 ticks (95443.7 s) after about 3.7 s.
    static var ptsWrap: URL? { get async { await ptsWrapFixture.value } }
    private static let ptsWrapFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("fmp4-pts-wrap.ts") { path in
            video + tone(330) + ["-t", "6"] + x264 + [
                "-c:a", "aac", "-output_ts_offset", "95440", "-f", "mpegts", path,
            ]
        }
    }
    /// H.264 + AAC cut 0.7 s into a GOP: the file starts with the tail of a picture and of an audio PES.
    static var midGOP: URL? { get async { await midGOPFixture.value } }
    private static let midGOPFixture = SharedFixture<URL?> {
        guard
            let whole = await PlaybackFixtures.make(
                "fmp4-mid-gop-whole.ts",
                arguments: { path in
                    video + tone(330) + ["-t", "6"] + x264 + ["-c:a", "aac", "-f", "mpegts", path]
                })
        else { return nil }
        let url = PlaybackFixtures.folder.appendingPathComponent("fmp4-mid-gop.ts")
        if FileManager.default.fileExists(atPath: url.path) { return url }
        guard let bytes = try? Data(contentsOf: whole) else { return nil }
        // Cut at a packet boundary about an eighth into the file, inside the first GOP.
        let cut = (bytes.count / 8 / 188) * 188 + 188 * 3
        guard (try? bytes.dropFirst(cut).write(to: url)) != nil else { return nil }
        return url
    }
    /// 30 s of 640x360 H.264 at 12 Mbit/s + AAC, about 17 MB: more than one 8 MiB remux fragment.
    static var large: URL? { get async { await largeFixture.value } }
    private static let largeFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("fmp4-large.ts") { path in
            ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25"] + tone(330) + ["-t", "30"]
                + ["-c:v", "libx264", "-preset", "ultrafast", "-b:v", "12M", "-g", "25", "-bf", "2"]
                + ["-c:a", "aac", "-f", "mpegts", path]
        }
    }
    /// Two H.264 + AAC recordings of 3 s and 4 s joined end to end (`cat a.ts b.ts`): both start at the same time
    /// stamps, so they go back 3 s in the middle.
    static var concatenation: URL? { get async { await concatenationFixture.value } }
    private static let concatenationFixture = SharedFixture<URL?> {
        let url = PlaybackFixtures.folder.appendingPathComponent("fmp4-concatenation.ts")
        if FileManager.default.fileExists(atPath: url.path) { return url }
        guard
            let first = await PlaybackFixtures.make(
                "fmp4-concatenation-a.ts",
                arguments: { path in video + tone(330) + ["-t", "3"] + x264 + ["-c:a", "aac", "-f", "mpegts", path] }),
            let second = await PlaybackFixtures.make(
                "fmp4-concatenation-b.ts",
                arguments: { path in
                    ["-f", "lavfi", "-i", "smptebars=size=320x180:rate=25"] + tone(550) + ["-t", "4"] + x264
                        + ["-c:a", "aac", "-f", "mpegts", path]
                }),
            let a = try? Data(contentsOf: first), let b = try? Data(contentsOf: second),
            (try? (a + b).write(to: url)) != nil
        else { return nil }
        return url
    }
}

/// The decode times and durations ffprobe reads from the packets of one stream of `input`, every packet: a duration
/// ffprobe gives as N/A (the first AAC packet of an fMP4 file) is nil; a line without a decode time is an issue.
func packetTimes(_ input: String, _ stream: String) async throws -> [(dts: Int, duration: Int?)] {
    let ffprobe = try #require(EndToEnd.tool("ffprobe"))
    let result = try await EndToEnd.run(
        ffprobe,
        ["-v", "error", "-select_streams", stream, "-show_entries", "packet=dts,duration", "-of", "csv=p=0", input])
    #expect(result.status == 0, "ffprobe \(input): \(result.err)")
    return result.out.split(separator: "\n").compactMap { line in
        let fields = line.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard fields.count == 2, let dts = Int(fields[0]), Int(fields[1]) != nil || fields[1] == "N/A" else {
            Issue.record("ffprobe \(input) \(stream): packet line \"\(line)\" has no decode time or duration")
            return nil
        }
        return (dts, Int(fields[1]))
    }
}

/// Records an issue unless each packet's decode time is the one before's plus its duration. Only the first packet
/// may lack a duration (ffprobe's for a first AAC packet in fMP4): it is taken as the second's (AAC frames are all
/// 1024 samples long).
func expectContinuous(_ times: [(dts: Int, duration: Int?)], _ what: String) {
    #expect(times.count > 10, "\(what): \(times.count) packets")
    for (index, (previous, packet)) in zip(times, times.dropFirst()).enumerated() {
        let step = previous.duration ?? (index == 0 ? packet.duration : nil)
        guard let step else {
            Issue.record("\(what): packet \(index) (decode time \(previous.dts)) has no duration")
            return
        }
        if packet.dts != previous.dts + step {
            Issue.record("\(what): decode time \(packet.dts) after \(previous.dts) + \(step)")
            return
        }
    }
}

@Suite(.serialized, .temporaryFolders) struct FragmentedPlaybackTests {
    /// The MD5 column of ffmpeg's framemd5 of one stream (`v:0`, `a:1`, ...) of `input`.
    func frameHashes(_ input: String, _ stream: String, decoder: [String] = []) async throws -> [String] {
        let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
        let result = try await EndToEnd.run(
            ffmpeg, ["-v", "error"] + decoder + ["-i", input, "-map", "0:\(stream)", "-f", "framemd5", "-"])
        #expect(result.status == 0, "ffmpeg framemd5 \(stream) of \(input): \(result.err)")
        return result.out.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    /// ffmpeg's framemd5 of one stream of `input` with the stream's own time stamps (`-copyts`, no frame rate
    /// conversion, the demuxer's time base): each decoded frame's presentation time in seconds and its MD5.
    func timedFrames(_ input: String, _ stream: String, decoder: [String] = []) async throws -> [(
        time: Double, hash: String
    )] {
        let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
        let result = try await EndToEnd.run(
            ffmpeg,
            ["-v", "error", "-copyts"] + decoder + ["-i", input, "-map", "0:\(stream)"]
                + ["-fps_mode", "passthrough", "-enc_time_base", "-1", "-f", "framemd5", "-"])
        #expect(result.status == 0, "ffmpeg framemd5 \(stream) of \(input): \(result.err)")
        let lines = result.out.split(separator: "\n")
        let base = lines.first { $0.hasPrefix("#tb 0: ") }.map {
            $0.dropFirst("#tb 0: ".count).split(separator: "/").compactMap { Double($0) }
        }
        guard let base, base.count == 2, base[1] > 0 else {
            Issue.record("framemd5 \(stream) of \(input): no time base in \(result.out.prefix(200))")
            return []
        }
        return lines.filter { !$0.hasPrefix("#") }.compactMap { line in
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            // stream, dts, pts, duration, size, hash
            guard fields.count == 6, let pts = Double(fields[2]) else {
                Issue.record("framemd5 \(stream) of \(input): line \"\(line)\"")
                return nil
            }
            return (pts * base[0] / base[1], fields[5])
        }
    }

    /// The 33-bit time stamp range in seconds (2^33 / 90 kHz): a transport stream's times are taken modulo it.
    static let wrapSeconds = Double(1 << 33) / 90_000

    /// `time` taken modulo the 33-bit range, between minus and plus half of it.
    static func unwrapped(_ time: Double) -> Double {
        var value = time.truncatingRemainder(dividingBy: wrapSeconds)
        if value > wrapSeconds / 2 { value -= wrapSeconds }
        if value <= -wrapSeconds / 2 { value += wrapSeconds }
        return value
    }

    /// Records an issue unless `output`'s frames (decoded from the served HLS or the remux) have the `source` frames'
    /// presentation times, each counted from the stream's first frame (modulo the 33-bit range, so the source's own
    /// wrap counts as running on), within 0.1 ms (ffmpeg's TS muxer puts 44.1 kHz AAC frames up to 2 ticks of 90 kHz
    /// off their sample times, which fMP4 keeps exact): a wrong step at a PTS wrap, a gap or an overlap of a frame
    /// shows.
    func expectSameTiming(
        _ output: [(time: Double, hash: String)], _ source: [(time: Double, hash: String)], _ what: String
    ) {
        guard let outputFirst = output.first?.time, let sourceFirst = source.first?.time else {
            Issue.record("\(what): no frames")
            return
        }
        let outputTimes = output.map { Self.unwrapped($0.time - outputFirst) }
        let sourceTimes = source.map { Self.unwrapped($0.time - sourceFirst) }
        #expect(outputTimes.count == sourceTimes.count, "\(what): \(outputTimes.count) frames, \(sourceTimes.count)")
        if let first = zip(outputTimes, sourceTimes).enumerated().first(where: {
            abs($0.element.0 - $0.element.1) > 1e-4
        }) {
            Issue.record(
                "\(what): frame \(first.offset) at \(first.element.0) s from the first, \(first.element.1) s in the source"
            )
        }
    }

    /// Records an issue unless each of `streams` starts where it does against the first in the source (the
    /// difference of the first frames' times, within 0.1 ms): audio is not moved against the video.
    func expectSameStarts(
        _ output: [String: [(time: Double, hash: String)]], _ source: [String: [(time: Double, hash: String)]],
        streams: [String], _ what: String
    ) {
        guard let reference = streams.first, let outputBase = output[reference]?.first?.time,
            let sourceBase = source[reference]?.first?.time
        else { return }
        for stream in streams.dropFirst() {
            guard let outputStart = output[stream]?.first?.time, let sourceStart = source[stream]?.first?.time else {
                continue
            }
            let outputOffset = Self.unwrapped(outputStart - outputBase)
            let sourceOffset = Self.unwrapped(sourceStart - sourceBase)
            #expect(
                abs(outputOffset - sourceOffset) < 1e-4,
                "\(what): \(stream) starts \(outputOffset) s after \(reference), \(sourceOffset) s in the source")
        }
    }

    /// ffprobe's streams of `input`: codec name, tag and language.
    func probeStreams(_ input: String) async throws -> [(codec: String, tag: String, language: String?)] {
        let ffprobe = try #require(EndToEnd.tool("ffprobe"))
        let result = try await EndToEnd.run(
            ffprobe,
            [
                "-v", "error", "-show_entries", "stream=codec_name,codec_tag_string:stream_tags=language", "-of",
                "json", input,
            ])
        #expect(result.status == 0, "ffprobe \(input): \(result.err)")
        let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        return (object?["streams"] as? [[String: Any]] ?? []).map { stream in
            (
                stream["codec_name"] as? String ?? "", stream["codec_tag_string"] as? String ?? "",
                (stream["tags"] as? [String: Any])?["language"] as? String
            )
        }
    }

    /// Lints a served playlist with m3u8lint: no finding at all (no error, warning or info, APPLE-* rules
    /// included), read from `m3u8lint --json`'s issues.
    func lint(_ url: String) async throws {
        let tool = try #require(EndToEnd.product("m3u8lint"))
        let result = try await EndToEnd.run(tool, ["--json", url])
        #expect(result.status == 0, "m3u8lint \(url): \(result.out) \(result.err)")
        let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        let issues = try #require(object?["issues"] as? [Any], "m3u8lint --json \(url): \(result.out) \(result.err)")
        #expect(issues.isEmpty, "m3u8lint \(url): \(result.out)")
    }

    /// The playlists a multivariant playlist names: its variants' and its renditions' and I-frame variants' URIs.
    func namedPlaylists(_ master: String) -> [String] {
        master.split(separator: "\n").compactMap { line in
            if let range = line.range(of: "URI=\"") {
                return String(line[range.upperBound...].prefix { $0 != "\"" })
            }
            return line.hasPrefix("#") ? nil : String(line)
        }
    }

    /// Lints the served multivariant playlist at `url` and every playlist it names, each with no finding at all;
    /// the multivariant declares EXT-X-INDEPENDENT-SEGMENTS and no EXT-X-VERSION unless `version` (version 1: none
    /// of its features needs more, RFC 8216bis 8), every media playlist EXT-X-VERSION 6 (EXT-X-MAP) and the I-frame
    /// playlist 5 (EXT-X-MAP with EXT-X-I-FRAMES-ONLY), each EXT-X-INDEPENDENT-SEGMENTS. Returns the playlists'
    /// names.
    @discardableResult
    func lintServed(_ url: String, multivariantVersion version: Int? = nil) async throws -> [String] {
        let base = String(url.dropLast("master.m3u8".count))
        let master = try await fetch(url)
        try await lint(url)
        let lines = master.split(separator: "\n")
        #expect(lines.contains("#EXT-X-INDEPENDENT-SEGMENTS"), "\(master)")
        #expect(
            lines.filter { $0.hasPrefix("#EXT-X-VERSION:") } == (version.map { ["#EXT-X-VERSION:\($0)"] } ?? []),
            "\(master)")
        let names = namedPlaylists(master)
        #expect(!names.isEmpty, "\(master)")
        for name in names {
            try await lint(base + name)
            let text = try await fetch(base + name)
            let tags = text.split(separator: "\n")
            let iFrames = name == "iframes.m3u8"
            #expect(tags.contains("#EXT-X-I-FRAMES-ONLY") == iFrames, "\(name): \(text)")
            let expected: Substring = iFrames ? "#EXT-X-VERSION:5" : "#EXT-X-VERSION:6"
            #expect(tags.filter { $0.hasPrefix("#EXT-X-VERSION:") } == [expected], "\(name): \(text)")
            #expect(tags.contains("#EXT-X-INDEPENDENT-SEGMENTS"), "\(name): \(text)")
        }
        return names
    }

    /// The init segment and every segment of the served media playlist `name` (one EXT-X-MAP) joined in one file.
    func joinedSegments(_ base: String, _ name: String, label: String) async throws -> URL {
        let playlist = try await waitForEndList(base + name)
        var bytes = Data()
        for line in playlist.split(separator: "\n") {
            if line.hasPrefix("#EXT-X-MAP:URI=\"") {
                bytes += try await fetchBytes(base + line.dropFirst("#EXT-X-MAP:URI=\"".count).prefix { $0 != "\"" })
            } else if !line.hasPrefix("#") {
                bytes += try await fetchBytes(base + line)
            }
        }
        let url = PlaybackFixtures.folder.appendingPathComponent("\(label).mp4")
        try bytes.write(to: url)
        return url
    }

    /// Serves `fixture` as fMP4 and checks every stream decodes to the source's frames and the playlists lint
    /// clean; returns the master playlist's text, the streams ffprobe finds in it and the server's log. With
    /// `timing`, also that each stream's frames have the source's presentation times (counted from its first
    /// frame), that audio starts where it does against the video in the source, and that each served track's
    /// decode times (its init segment and segments joined, read by ffprobe) run on without a gap or overlap.
    @discardableResult
    func checkServed(
        _ fixture: URL?, container: String = "fmp4", streams: [String], mediaPlaylist: String = "video.m3u8",
        decoder: [String] = [], sourceSkip: [String: Int] = [:], timing: Bool = false, iFrames: Bool = false
    ) async throws -> (master: String, streams: [(codec: String, tag: String, language: String?)], log: String) {
        let movie = try #require(fixture)
        let server = try await ServerProcess(arguments: [
            movie.path, "--container", container, "--segment-duration", "1",
        ])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let media = try await waitForEndList(base + mediaPlaylist)
        #expect(media.contains("#EXT-X-MAP:URI="), "\(media)")
        #expect(media.components(separatedBy: "#EXTINF:").count > 3, "several segments: \(media)")
        var master = try await fetch(url)
        // The I-frame variant is listed once the I-frames are measured, after the index is complete (as the other
        // I-frame tests wait for it): on a loaded machine, after the media playlist has ended.
        for _ in 0..<50 where iFrames && !master.contains("I-FRAME-STREAM-INF") {
            await suspend(0.1)
            master = try await fetch(url)
        }
        var servedTimes: [String: [(time: Double, hash: String)]] = [:]
        var sourceTimes: [String: [(time: Double, hash: String)]] = [:]
        for stream in streams {
            let source = try await frameHashes(movie.path, stream, decoder: decoder)
            let served = try await frameHashes(url, stream, decoder: decoder)
            #expect(!source.isEmpty)
            let expected = Array(source.dropFirst(sourceSkip[stream] ?? 0))
            let first =
                zip(served, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(served.count, expected.count)
            #expect(
                served == expected,
                "\(movie.lastPathComponent) \(stream): first difference at frame \(first); \(movie.lastPathComponent) \(stream): \(served.count) frames served, \(source.count) in the source"
            )
            if timing {
                servedTimes[stream] = try await timedFrames(url, stream, decoder: decoder)
                sourceTimes[stream] = Array(
                    try await timedFrames(movie.path, stream, decoder: decoder).dropFirst(sourceSkip[stream] ?? 0))
                expectSameTiming(
                    servedTimes[stream] ?? [], sourceTimes[stream] ?? [], "served \(movie.lastPathComponent) \(stream)")
            }
        }
        if timing {
            expectSameStarts(servedTimes, sourceTimes, streams: streams, "served \(movie.lastPathComponent)")
            for name in namedPlaylists(master) where name != "iframes.m3u8" {
                let label = "\(movie.deletingPathExtension().lastPathComponent)-served-\(name.dropLast(".m3u8".count))"
                let joined = try await joinedSegments(base, name, label: label)
                let stream = name == "video.m3u8" ? "v:0" : "a:0"
                expectContinuous(
                    try await packetTimes(joined.path, stream), "served \(movie.lastPathComponent) \(name)")
            }
        }
        try await lintServed(url)
        return (master, try await probeStreams(url), server.logText)
    }

    @Test func h264AndAACServedAsFragmentedMP4DecodeLikeTheSource() async throws {
        let (master, streams, log) = try await checkServed(
            await FragmentedFixtures.h264AAC, streams: ["v:0", "a:0"], iFrames: true)
        #expect(master.contains("CODECS=\"avc1.") && master.contains("mp4a.40.2"), "\(master)")
        #expect(master.contains("CLOSED-CAPTIONS=NONE") && master.contains("#EXT-X-I-FRAME-STREAM-INF"), "\(master)")
        #expect(log.contains("served as fragmented MP4"), "\(log)")
        #expect(streams.contains { $0.codec == "h264" && $0.tag == "avc1" }, "\(streams)")
    }

    @Test func autoServesH264AndOneAudioTrackAsTS() async throws {
        let movie = try #require(await FragmentedFixtures.h264AAC)
        let server = try await ServerProcess(arguments: [movie.path])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let master = try await fetch(url)
        #expect(master.contains("index.m3u8") && !master.contains("video.m3u8"), "\(master)")
        #expect(server.logText.contains("served as TS"), "\(server.logText)")
    }

    /// `--container ts` given on the HEVC fixture: TS byte ranges of the file anyway (no fMP4 playlist), and the
    /// line on stderr says so and why.
    @Test func containerTSGivenServesHEVCAsTSByteRanges() async throws {
        let movie = try #require(await FragmentedFixtures.hevcAC3)
        let server = try await ServerProcess(arguments: [movie.path, "--container", "ts", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let master = try await fetch(url)
        #expect(master.contains("index.m3u8") && !master.contains("video.m3u8"), "\(master)")
        let index = try await waitForEndList(base + "index.m3u8")
        #expect(!index.contains("#EXT-X-MAP") && index.contains("#EXT-X-BYTERANGE:"), "\(index)")
        // The byte ranges are the file's own bytes.
        let line = try #require(index.split(separator: "\n").first { $0.hasPrefix("#EXT-X-BYTERANGE:") })
        let range = line.dropFirst("#EXT-X-BYTERANGE:".count).split(separator: "@").compactMap { Int($0) }
        let uri = try #require(index.split(separator: "\n").first { !$0.hasPrefix("#") })
        try #require(range.count == 2)
        let curl = try #require(EndToEnd.tool("curl"))
        let slice = try await EndToEnd.run(
            curl, ["-sS", "--fail", "-r", "\(range[1])-\(range[1] + range[0] - 1)", base + uri])
        let file = try Data(contentsOf: movie)
        #expect(slice.stdout == file[range[1]..<(range[1] + range[0])], "\(slice.stdout.count) bytes, \(slice.err)")
        #expect(server.logText.contains("\(movie.path): served as TS: asked for"), "\(server.logText)")
    }

    /// A `Range` request on a served `.m4s` segment answers 206 with exactly that slice of the whole segment, an
    /// open-ended range the rest of it, and a range past its end 416.
    @Test func rangeRequestsOnAServedSegment() async throws {
        let movie = try #require(await FragmentedFixtures.hevcAC3)
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        _ = try await waitForEndList(base + "video.m3u8")
        let segment = base + "video/1.m4s"
        let whole = try await fetchBytes(segment)
        try #require(whole.count > 2000)
        let curl = try #require(EndToEnd.tool("curl"))
        func get(_ range: String) async throws -> (status: String, body: Data) {
            let result = try await EndToEnd.run(
                curl, ["-sS", "--max-time", "10", "-r", range, "-o", "-", "-w", "\n%{http_code}", segment])
            #expect(result.status == 0, "curl -r \(range): \(result.err)")
            let body = result.stdout
            guard let cut = body.lastIndex(of: UInt8(ascii: "\n")) else { return ("", body) }
            return (String(decoding: body[(cut + 1)...], as: UTF8.self), body[..<cut])
        }
        let middle = try await get("1000-1999")
        #expect(middle.status == "206" && middle.body == whole[1000..<2000], "\(middle.status) \(middle.body.count)")
        let tail = try await get("\(whole.count - 100)-")
        #expect(tail.status == "206" && tail.body == whole.suffix(100), "\(tail.status) \(tail.body.count)")
        let past = try await get("\(whole.count)-\(whole.count + 10)")
        #expect(past.status == "416", "\(past.status)")
    }

    @Test func hevcWithBFramesAndAC3AutoServedAsHvc1() async throws {
        let (master, streams, log) = try await checkServed(
            await FragmentedFixtures.hevcAC3, container: "auto", streams: ["v:0", "a:0"])
        #expect(master.contains("CODECS=\"hvc1.1.6.L") && master.contains(",ac-3\""), "\(master)")
        #expect(log.contains("HEVC goes in fMP4 as hvc1"), "\(log)")
        #expect(streams.contains { $0.codec == "hevc" && $0.tag == "hvc1" }, "\(streams)")
        #expect(streams.contains { $0.codec == "ac3" && $0.tag == "ac-3" }, "\(streams)")
    }

    @Test func twoLanguagesBecomeAudioRenditions() async throws {
        let (master, streams, _) = try await checkServed(
            await FragmentedFixtures.twoLanguages, container: "auto", streams: ["v:0", "a:0", "a:1"], timing: true)
        #expect(
            master.contains(
                "TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=YES,AUTOSELECT=YES"),
            "\(master)")
        #expect(
            master.contains("TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"French\",LANGUAGE=\"fr\",DEFAULT=NO,AUTOSELECT=YES"),
            "\(master)")
        #expect(master.contains("AUDIO=\"audio\"") && master.contains("CHANNELS=\"1\""), "\(master)")
        let languages = streams.compactMap(\.language)
        #expect(languages.contains("en") && languages.contains("fr"), "\(languages)")
    }

    @Test func mpegLayerIIAudio() async throws {
        // ffmpeg maps the MPEG-1 audio object type to its MP3 decoder for any layer: decode both with mp2.
        try await checkServed(await FragmentedFixtures.mp2, streams: ["v:0", "a:0"], decoder: ["-c:a", "mp2"])
    }

    @Test func audioOnly() async throws {
        let movie = try #require(await FragmentedFixtures.audioOnly)
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let master = try await fetch(url)
        let media = try #require(
            master.split(separator: "\n").first { !$0.hasPrefix("#") && $0.hasSuffix(".m3u8") }.map(String.init))
        _ = try await waitForEndList(String(url.dropLast("master.m3u8".count)) + media)
        #expect(!master.contains("video.m3u8") && !master.contains("CLOSED-CAPTIONS"), "\(master)")
        let source = try await frameHashes(movie.path, "a:0")
        let served = try await frameHashes(url, "a:0")
        #expect(!source.isEmpty && served == source, "\(served.count) frames served, \(source.count) in the source")
        // The multivariant and the audio playlist it names (the variant's own) lint with no finding at all.
        await #expect(try lintServed(url) == [media])
    }

    /// Across the wrap the served frames keep the source's presentation times, and each track's decode times run
    /// on (checked frame by frame, not only the pictures).
    @Test func ptsWrap() async throws {
        try await checkServed(await FragmentedFixtures.ptsWrap, streams: ["v:0", "a:0"], timing: true)
    }

    @Test func fileStartingMidGOP() async throws {
        try await checkServed(await FragmentedFixtures.midGOP, streams: ["v:0", "a:0"], timing: true)
    }

    /// A concatenation: the playlists say where the time stamps reset, the segments decode like the source and
    /// their decode times run on through the reset (read by ffprobe from the init segment and every segment).
    @Test func concatenationWithATimestampReset() async throws {
        let movie = try #require(await FragmentedFixtures.concatenation)
        try await checkServed(movie, streams: ["v:0", "a:0"])
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let master = try await fetch(url)
        let audio = try #require(
            master.split(separator: "\n").first { $0.contains("TYPE=AUDIO") }?.components(separatedBy: "URI=\"").last?
                .prefix { $0 != "\"" }.dropLast(".m3u8".count))
        for (name, stream) in [("video", "v:0"), (String(audio), "a:0")] {
            let media = try await waitForEndList(base + name + ".m3u8")
            #expect(
                media.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count == 2,
                "one discontinuity in \(name): \(media)")
            // The playlist's durations add up to the two parts' (3 s + 4 s).
            let total = media.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.compactMap {
                Double($0.dropFirst("#EXTINF:".count).prefix { $0 != "," })
            }.reduce(0, +)
            #expect(abs(total - 7) < 0.2, "\(name): \(total) s")
            let count = media.components(separatedBy: "#EXTINF:").count - 1
            let joined = PlaybackFixtures.folder.appendingPathComponent("concatenation-\(name).mp4")
            var bytes = try await fetchBytes(base + name + "-init.mp4")
            for number in 0..<count { await bytes += try fetchBytes(base + name + "/\(number).m4s") }
            try bytes.write(to: joined)
            await expectContinuous(try packetTimes(joined.path, stream), "served \(name)")
        }
        // The I-frame playlist follows on exactly after the reset: its discontinuity falls at the video playlist's
        // time, and each I-frame's decode time is the one the same frame has in the served video.
        func startOfDiscontinuity(_ text: String) async -> Double? {
            var time = 0.0
            for line in text.split(separator: "\n") {
                if line == "#EXT-X-DISCONTINUITY" { return time }
                if line.hasPrefix("#EXTINF:") {
                    time += Double(line.dropFirst("#EXTINF:".count).prefix { $0 != "," }) ?? .nan
                }
            }
            return nil
        }
        let iFrames = try await waitForEndList(base + "iframes.m3u8")
        let video = try await fetch(base + "video.m3u8")
        let iFrameReset = try #require(await startOfDiscontinuity(iFrames), "\(iFrames)")
        let videoReset = try #require(await startOfDiscontinuity(video), "\(video)")
        #expect(abs(iFrameReset - videoReset) < 0.001, "I-frames reset at \(iFrameReset) s, video at \(videoReset) s")
        let iFrameCount = iFrames.components(separatedBy: "#EXTINF:").count - 1
        var iFrameBytes = try await fetchBytes(base + "video-init.mp4")
        for number in 0..<iFrameCount { await iFrameBytes += try fetchBytes(base + "iframe/\(number).m4s") }
        let iFrameFile = PlaybackFixtures.folder.appendingPathComponent("concatenation-iframes.mp4")
        try iFrameBytes.write(to: iFrameFile)
        let iFrameTimes = try await packetTimes(iFrameFile.path, "v:0").map(\.dts)
        let videoTimes = await Set(
            try packetTimes(PlaybackFixtures.folder.appendingPathComponent("concatenation-video.mp4").path, "v:0")
                .map(\.dts))
        #expect(iFrameTimes.count == iFrameCount, "\(iFrameTimes.count) I-frames decoded, \(iFrameCount) listed")
        #expect(
            iFrameTimes.allSatisfy(videoTimes.contains),
            "I-frame decode times not in the video: \(iFrameTimes.filter { !videoTimes.contains($0) })")
        // The remux output: the same frames, one continuous timeline.
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = PlaybackFixtures.folder.appendingPathComponent("concatenation.mp4").path
        let result = try await EndToEnd.run(tsplayer, ["remux", movie.path, output])
        #expect(result.status == 0, "\(result.err)")
        for stream in ["v:0", "a:0"] {
            await #expect(try frameHashes(output, stream) == frameHashes(movie.path, stream), "remux \(stream)")
            await expectContinuous(try packetTimes(output, stream), "remux \(stream)")
        }
    }

    /// Remuxes `fixture` and checks each stream decodes to the source's frames and its decode times run on; with
    /// `timing`, the frames have the source's presentation times (from each stream's first frame) and each stream
    /// starts where it does against the first in the source. Returns the output's path.
    @discardableResult
    func checkRemux(_ fixture: URL?, streams: [String], decoder: [String] = [], timing: Bool = false) async throws
        -> String
    {
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let movie = try #require(fixture)
        let output = PlaybackFixtures.folder.appendingPathComponent(movie.lastPathComponent + ".mp4").path
        let result = try await EndToEnd.run(tsplayer, ["remux", movie.path, output])
        #expect(result.status == 0, "remux \(movie.lastPathComponent): \(result.err)")
        var remuxedTimes: [String: [(time: Double, hash: String)]] = [:]
        var sourceTimes: [String: [(time: Double, hash: String)]] = [:]
        for stream in streams {
            let remuxed = try await frameHashes(output, stream, decoder: decoder)
            let source = try await frameHashes(movie.path, stream, decoder: decoder)
            #expect(
                !source.isEmpty && remuxed == source,
                "\(movie.lastPathComponent) \(stream): \(remuxed.count) remuxed, \(source.count)")
            if timing {
                remuxedTimes[stream] = try await timedFrames(output, stream, decoder: decoder)
                sourceTimes[stream] = try await timedFrames(movie.path, stream, decoder: decoder)
                expectSameTiming(
                    remuxedTimes[stream] ?? [], sourceTimes[stream] ?? [], "remux \(movie.lastPathComponent) \(stream)")
            }
            await expectContinuous(try packetTimes(output, stream), "remux \(movie.lastPathComponent) \(stream)")
        }
        if timing { expectSameStarts(remuxedTimes, sourceTimes, streams: streams, "remux \(movie.lastPathComponent)") }
        return output
    }

    @Test func remuxMatchesTheSourceFrameByFrame() async throws {
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let hevc = try await checkRemux(await FragmentedFixtures.hevcAC3, streams: ["v:0", "a:0"])
        let hevcStreams = try await probeStreams(hevc)
        #expect(
            hevcStreams.map(\.codec) == ["hevc", "ac3"] && hevcStreams.map(\.tag) == ["hvc1", "ac-3"], "\(hevcStreams)")
        // Every track of the two languages, each with its language; the frames keep the source's times.
        let both = try await checkRemux(
            await FragmentedFixtures.twoLanguages, streams: ["v:0", "a:0", "a:1"], timing: true)
        let bothStreams = try await probeStreams(both)
        #expect(bothStreams.map(\.tag) == ["avc1", "mp4a", "mp4a"], "\(bothStreams)")
        #expect(bothStreams.map(\.language) == ["und", "eng", "fra"], "\(bothStreams)")
        let large = try await checkRemux(await FragmentedFixtures.large, streams: ["v:0", "a:0"])
        await #expect(try probeStreams(large).map(\.tag) == ["avc1", "mp4a"])
        let movie = try #require(await FragmentedFixtures.twoLanguages)
        let french = PlaybackFixtures.folder.appendingPathComponent("french.mp4").path
        let result = try await EndToEnd.run(tsplayer, ["remux", movie.path, french, "--audio", "fra"])
        #expect(result.status == 0, "\(result.err)")
        let streams = try await probeStreams(french)
        #expect(streams.count == 2 && streams.last?.language == "fra", "\(streams)")
        let missing = try await EndToEnd.run(tsplayer, ["remux", movie.path, french, "--audio", "deu"])
        #expect(missing.status == 1 && missing.err.contains("no audio track in language 'deu'"), "\(missing.err)")
        let notTS = try await EndToEnd.run(tsplayer, ["remux", french, french + ".mp4"])
        #expect(notTS.status == 2 && notTS.err.contains("not an MPEG-TS file"), "\(notTS.err)")
    }

    /// The other shapes remuxed: MPEG-1 layer II audio, audio only, a PTS wrap and a file that starts mid-GOP (each
    /// stream to the source's frames at the source's presentation times, decode times running on), and the
    /// concatenation whose second part starts inside a GOP (FragmentedConfigurationTests), to the source's frames.
    @Test func remuxOfTheOtherShapesMatchesTheSourceFrameByFrame() async throws {
        let mp2 = try await checkRemux(
            await FragmentedFixtures.mp2, streams: ["v:0", "a:0"], decoder: ["-c:a", "mp2"], timing: true)
        await #expect(try probeStreams(mp2).map(\.tag) == ["avc1", ".mp3"])
        let audio = try await checkRemux(await FragmentedFixtures.audioOnly, streams: ["a:0"], timing: true)
        await #expect(try probeStreams(audio).map(\.codec) == ["aac"])
        let wrap = try await checkRemux(await FragmentedFixtures.ptsWrap, streams: ["v:0", "a:0"], timing: true)
        await #expect(try probeStreams(wrap).map(\.tag) == ["avc1", "mp4a"])
        let midGOP = try await checkRemux(await FragmentedFixtures.midGOP, streams: ["v:0", "a:0"], timing: true)
        await #expect(try probeStreams(midGOP).map(\.tag) == ["avc1", "mp4a"])
        try await checkRemux(await ConfigurationFixtures.midGOPReset?.url, streams: ["v:0", "a:0"])
    }

    /// GStreamer's playbin (hlsdemux, qtdemux, libav decoders) plays the H.264 fMP4 presentation, with its two
    /// audio renditions, to the end.
    @Test func gstreamerPlaysTheFragmentedPresentationToTheEnd() async throws {
        let movie = try #require(await FragmentedFixtures.twoLanguages)
        let server = try await ServerProcess(arguments: [movie.path, "--segment-duration", "1", "-v"])
        defer { server.stop() }
        let master = try #require(server.lines.first)
        _ = try await waitForEndList(master.replacingOccurrences(of: "master.m3u8", with: "video.m3u8"))
        // Played to the end: every video frame of the file decoded, and one language's audio for its whole length.
        let played = try await gstreamerPlayback(master)
        let source = try await decodedFrames(movie.path)
        #expect(played.status == 0, "\(played.log)")
        #expect(played.videoFrames == source["video"], "\(played.videoFrames) frames of \(source)")
        #expect(abs(played.audioSeconds - 5) < 0.1, "\(played.audioSeconds) s of audio")
        // It read fMP4 segments of the video and of an audio rendition.
        #expect(server.logText.contains("/video/4.m4s 200"), "\(server.logText)")
        #expect(server.logText.contains(".m4s 200") && server.logText.contains("/audio-"), "\(server.logText)")
    }
}

/// Fetches a URL's body as bytes.
func fetchBytes(_ url: String) async throws -> Data {
    let curl = try #require(EndToEnd.tool("curl"))
    let result = try await EndToEnd.run(curl, ["-sS", "--fail", "--max-time", "10", url])
    #expect(result.status == 0, "curl \(url): \(result.err)")
    return result.stdout
}
