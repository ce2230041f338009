import FileRange
// The ad-stripping proxy end to end: a python test origin in its own process (Tests/Origins/hls_origin.py) serving
// ffmpeg-made segments in which ad segments are solid red and requiring an Authorization header, then
// `tsplayer proxy` with that header, then ffmpeg reading through the proxy. No red frame may come out, and
// timestamps must run on without a gap.
import Foundation
import Testing

/// A child process whose first stdout line is read (a port or a URL); stopped with SIGTERM.
final class ProxyTestProcess: Sendable {
    let child: ChildProcess
    let firstLine: String

    init(_ executable: URL, _ arguments: [String]) async throws {
        child = try await ChildProcess(executable, arguments)
        firstLine = await child.lines(1, within: 20).first ?? ""
    }

    var process: Process { child.process }
    var stderr: String { child.stderr }

    func stop() async { await child.stop() }

    func stop() { child.stop() }
}

/// Segments made once per test process: 40 two-second MPEG-TS segments (320x180, 25 fps, stereo AAC) of one
/// continuous stream; the pictures of segments 8-10 and 14-15 (16-22 s and 28-32 s) are solid red: the "ads".
/// `fragmented` holds the same stream as fMP4 (init.mp4 and seg<N>.m4s).
enum ProxyMedia {
    static let segments = 40
    static let adSegments: Set<Int> = [8, 9, 10, 14, 15]
    static var directory: Result<URL, any Error> { get async { await directoryFixture.value } }
    private static let directoryFixture = SharedFixture<Result<URL, any Error>> {
        do { return .success(try await make(fragmented: false)) } catch { return .failure(error) }
    }
    static var fragmented: Result<URL, any Error> { get async { await fragmentedFixture.value } }
    private static let fragmentedFixture = SharedFixture<Result<URL, any Error>> {
        do { return .success(try await make(fragmented: true)) } catch { return .failure(error) }
    }
    /// The same TS stream with AC-3 and with E-AC-3 audio.
    static var ac3: Result<URL, any Error> { get async { await ac3Fixture.value } }
    private static let ac3Fixture = SharedFixture<Result<URL, any Error>> {
        do { return .success(try await make(fragmented: false, audio: "ac3")) } catch { return .failure(error) }
    }
    static var eac3: Result<URL, any Error> { get async { await eac3Fixture.value } }
    private static let eac3Fixture = SharedFixture<Result<URL, any Error>> {
        do { return .success(try await make(fragmented: false, audio: "eac3")) } catch { return .failure(error) }
    }

    static func make(fragmented: Bool, audio: String = "aac") async throws -> URL {
        let dir = TemporaryFolders.makeShared(prefix: "proxy-e2e-\(fragmented ? "fmp4-" : "")\(audio)-")
        guard let ffmpeg = EndToEnd.tool("ffmpeg") else { throw CocoaError(.fileNoSuchFile) }
        let result = try await EndToEnd.run(
            ffmpeg,
            [
                "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-f",
                "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "80", "-filter_complex",
                "[0:v]drawbox=x=0:y=0:w=iw:h=ih:color=red:t=fill:enable='gte(t,16)*lt(t,22)+gte(t,28)*lt(t,32)'[v]",
                "-map", "[v]", "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-keyint_min",
                "50", "-sc_threshold", "0", "-force_key_frames", "expr:gte(t,n_forced*2)", "-c:a", audio, "-ac", "2",
                "-b:a", audio == "aac" ? "64k" : "192k", "-f", "hls", "-hls_time", "2", "-hls_list_size", "0",
            ]
                + (fragmented ? ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4"] : [])
                + [
                    "-hls_segment_filename", dir.appendingPathComponent(fragmented ? "seg%d.m4s" : "seg%d.ts").path,
                    dir.appendingPathComponent("ffmpeg.m3u8").path,
                ])
        guard result.status == 0 else { throw CocoaError(.fileWriteUnknown) }
        return dir
    }
}

@Suite(.serialized, .temporaryFolders) struct ProxyEndToEndTests {
    struct Reading {
        var frames: [[UInt8]]
        var times: [Double]
        /// What ffmpeg wrote at its `error` log level: nothing, when it read and decoded everything (warnings, such
        /// as the continuity jumps at a removed break, are below that level).
        var errors: String
        var log: String
        var status: Int32

        var errorLines: [Substring] { errors.split(separator: "\n") }
    }

    /// Starts the origin and the proxy, then lets ffmpeg read `seconds` (all of it when nil) of video through the
    /// proxy, each picture averaged to one RGB pixel.
    func read(
        mode: String, seconds: Int?, breaks: String, extraProxyArguments: [String] = [], fragmented: Bool = false,
        originArguments: [String] = []
    ) async throws -> Reading {
        let dir = try (fragmented ? await ProxyMedia.fragmented : await ProxyMedia.directory).get()
        let python = try #require(EndToEnd.tool("python3"))
        let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let script = EndToEnd.repositoryRoot.appendingPathComponent("Tests/Origins/hls_origin.py").path
        let origin = try await ProxyTestProcess(
            python,
            [
                script, "--dir", dir.path, "--mode", mode, "--segments", "\(ProxyMedia.segments)", "--breaks", breaks,
                "--auth", "Bearer e2e-secret",
            ] + originArguments + (fragmented ? ["--fmp4"] : []))
        defer { origin.stop() }
        let port = try #require(Int(origin.firstLine), "origin said \(origin.firstLine)")
        let proxy = try await ProxyTestProcess(
            tsplayer,
            [
                "proxy", "http://127.0.0.1:\(port)/stream.m3u8", "-H", "Authorization: Bearer e2e-secret",
                "--allow-private", "--explain",
            ] + extraProxyArguments)
        defer { proxy.stop() }
        #expect(proxy.firstLine.hasPrefix("http://127.0.0.1:"))
        #expect(proxy.firstLine.hasSuffix("/master.m3u8"))
        let folder = TemporaryFolders.make(prefix: "proxy-e2e-")
        let output = folder.appendingPathComponent("out.raw")
        let frameList = folder.appendingPathComponent("frames.md5")
        var arguments = ["-hide_banner", "-nostdin", "-loglevel", "error", "-i", proxy.firstLine]
        if let seconds { arguments += ["-t", "\(seconds)"] }
        // Two outputs of the same decoded pictures: each as one RGB pixel, and the frame list with each frame's
        // time stamp in the input's time base.
        let picture = ["-map", "0:v", "-fps_mode", "passthrough", "-vf", "scale=1:1", "-pix_fmt", "rgb24"]
        arguments += picture + ["-f", "rawvideo", "-y", output.path]
        arguments += picture + ["-enc_time_base", "-1", "-f", "framemd5", "-y", frameList.path]
        let result = try await EndToEnd.run(ffmpeg, arguments)
        let bytes = [UInt8]((try? Data(contentsOf: output)) ?? Data())
        var frames: [[UInt8]] = []
        var i = 0
        while i + 3 <= bytes.count {
            frames.append(Array(bytes[i..<(i + 3)]))
            i += 3
        }
        let times = FrameList(framemd5: (try? String(contentsOf: frameList, encoding: .utf8)) ?? "").times
        return Reading(
            frames: frames, times: times, errors: result.err, log: result.err + "\n--- proxy ---\n" + proxy.stderr,
            status: result.status)
    }

    static func isRed(_ p: [UInt8]) -> Bool { p.count == 3 && p[0] > 150 && p[1] < 90 && p[2] < 90 }

    @Test func liveBreaksBecomeSlatesOnTheContentTimeline() async throws {
        let reading = try await read(mode: "live", seconds: 30, breaks: "cue:8-10,daterange:14-15")
        #expect(reading.status == 0, "\(reading.log.suffix(3000))")
        #expect(reading.frames.count >= 740, "\(reading.frames.count) frames")
        let red = reading.frames.indices.filter { Self.isRed(reading.frames[$0]) }
        #expect(red.isEmpty, "red (ad) frames at \(red.prefix(10))")
        let gaps = zip(reading.times, reading.times.dropFirst()).filter { abs($1 - $0 - 0.04) > 0.002 }
        #expect(gaps.isEmpty, "timestamp gaps \(gaps.prefix(5))")
        #expect(reading.errorLines.isEmpty, "\(reading.errorLines.prefix(5))")
        // The proxy explained both breaks.
        #expect(reading.log.contains("[EXT-X-CUE-OUT break cue-out-8]"))
        #expect(reading.log.contains("[EXT-X-DATERANGE:SCTE35 break ad-14]"))
    }

    @Test func liveAES128WithKeyRotation() async throws {
        // Segments encrypted under a new key every 3 segments; keys, like everything, need the Authorization header.
        let reading = try await read(
            mode: "live", seconds: 30, breaks: "cue:8-10,daterange:14-15", originArguments: ["--rotate", "3"])
        #expect(reading.status == 0, "\(reading.log.suffix(3000))")
        #expect(reading.frames.count >= 740, "\(reading.frames.count) frames")
        let red = reading.frames.indices.filter { Self.isRed(reading.frames[$0]) }
        #expect(red.isEmpty, "red (ad) frames at \(red.prefix(10))")
        let gaps = zip(reading.times, reading.times.dropFirst()).filter { abs($1 - $0 - 0.04) > 0.002 }
        #expect(gaps.isEmpty, "timestamp gaps \(gaps.prefix(5))")
        // (ffmpeg cannot always reuse its keep-alive connection for an encrypted segment after the clear slates;
        // it warns and opens a new one, which is below the error level.)
        #expect(reading.errorLines.isEmpty, "\(reading.errorLines.prefix(5))")
        #expect(reading.log.contains("[EXT-X-CUE-OUT break cue-out-8]"))
    }

    @Test func liveFragmentedMP4() async throws {
        let reading = try await read(mode: "live", seconds: 30, breaks: "cue:8-10,daterange:14-15", fragmented: true)
        #expect(reading.status == 0, "\(reading.log.suffix(3000))")
        #expect(reading.frames.count >= 740, "\(reading.frames.count) frames")
        let red = reading.frames.indices.filter { Self.isRed(reading.frames[$0]) }
        #expect(red.isEmpty, "red (ad) frames at \(red.prefix(10))")
        let gaps = zip(reading.times, reading.times.dropFirst()).filter { abs($1 - $0 - 0.04) > 0.002 }
        #expect(gaps.isEmpty, "timestamp gaps \(gaps.prefix(5))")
        #expect(reading.errorLines.isEmpty, "\(reading.errorLines.prefix(5))")
        #expect(reading.log.contains("[EXT-X-CUE-OUT break cue-out-8]"))
    }

    @Test func vodBreaksAreRemoved() async throws {
        let reading = try await read(mode: "vod", seconds: nil, breaks: "cue:8-10,daterange:14-15")
        #expect(reading.status == 0, "\(reading.log.suffix(3000))")
        let expected = (ProxyMedia.segments - ProxyMedia.adSegments.count) * 50
        #expect(abs(reading.frames.count - expected) <= 2, "\(reading.frames.count) frames, \(expected) expected")
        let red = reading.frames.indices.filter { Self.isRed(reading.frames[$0]) }
        #expect(red.isEmpty, "red (ad) frames at \(red.prefix(10))")
        // (At each of the two joins the continuity counters jump, the segments between being gone and the playlist
        // saying EXT-X-DISCONTINUITY there; ffmpeg's demuxer warns of a corrupt packet, below the error level.)
        #expect(reading.errorLines.isEmpty, "\(reading.errorLines.prefix(5))")
    }

    @Test func withoutTheHeaderTheOriginRefusesAndTheProxyAnswers502() async throws {
        let dir = try await ProxyMedia.directory.get()
        let python = try #require(EndToEnd.tool("python3"))
        let curl = try #require(EndToEnd.tool("curl"))
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let script = EndToEnd.repositoryRoot.appendingPathComponent("Tests/Origins/hls_origin.py").path
        let origin = try await ProxyTestProcess(
            python, [script, "--dir", dir.path, "--segments", "40", "--auth", "Bearer e2e-secret"])
        defer { origin.stop() }
        let proxy = try await ProxyTestProcess(
            tsplayer, ["proxy", "http://127.0.0.1:\(origin.firstLine)/s.m3u8", "--allow-private"])
        defer { proxy.stop() }
        let result = try await EndToEnd.run(curl, ["-s", "-w", "\n%{http_code}", proxy.firstLine])
        #expect(result.out.hasSuffix("\n502"))
        #expect(result.out.contains("upstream answered 403"))
        // Loopback upstreams are refused unless allowed.
        let strict = try await ProxyTestProcess(tsplayer, ["proxy", "http://127.0.0.1:\(origin.firstLine)/s.m3u8"])
        defer { strict.stop() }
        let refused = try await EndToEnd.run(curl, ["-s", "-w", "\n%{http_code}", strict.firstLine])
        #expect(refused.out.hasSuffix("\n502"))
        #expect(refused.out.contains("address not allowed"))
    }
}
