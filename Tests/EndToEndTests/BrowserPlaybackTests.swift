import FileRange
// A real web player end to end: video.js 7 (PyPI js-videojs, with its HLS engine) in headless Debian chromium, on
// a page served from an origin of its own (Tests/Origins/browser_player.py), plays
// - a live stream with an ad break through `tsplayer proxy --cors <page origin>`, across the break, and
// - the H.264 fMP4 presentation of `tsplayer serve --container fmp4 --cors <page origin>`, to the end.
// The page reports player events, currentTime samples with the picture's average colour, the engine's requests and
// each segment's place on the player's timeline; a failure prints the page's console and chromium's log.
import Foundation
import Testing

/// What browser_player.py prints: the page's record of the playback.
struct BrowserReport: Decodable {
    struct Event: Decodable {
        var wall: Double
        var name: String
        var currentTime: Double?
    }
    struct Sample: Decodable {
        var wall: Double
        var currentTime: Double
        var paused: Bool
        var colour: [Int]?
    }
    struct Request: Decodable {
        var wall: Double
        var uri: String
    }
    struct Segment: Decodable {
        var start: Double
        var end: Double
        var uri: String
    }
    struct Line: Decodable {
        var wall: Double
        var level: String
        var text: String
    }
    struct PlayerError: Decodable {
        var code: Int?
        var message: String?
    }
    /// A segment loader of the HLS engine: its state, whether its SourceBuffer takes updates, how many wait.
    struct Loader: Decodable {
        var state: String
        var started: Bool
        var queued: Int?
    }
    struct Page: Decodable {
        var events: [Event]
        var samples: [Sample]
        var requests: [Request]
        var segments: [String: Segment]
        var console: [Line]
        var error: PlayerError?
        var duration: Double?
        var reached: Bool
        var supported: [String: Bool]
        /// How often the page ran a queued update the engine left waiting (browser_player.py says why).
        var drains: Int
        var loaders: [String: Loader]
    }
    var origin: String
    var failure: String?
    var seconds: Double?
    var page: Page?
    var chromium: [String]?

    /// The page's console and chromium's log, for failure messages.
    var logs: String {
        let console = (page?.console ?? []).map { String(format: "%.2f %@: %@", $0.wall, $0.level, $0.text) }
        let loaders = (page?.loaders ?? [:]).sorted { $0.key < $1.key }.map {
            "\($0.key): \($0.value.state), started \($0.value.started), \($0.value.queued ?? 0) queued"
        }
        return "--- page console ---\n" + console.joined(separator: "\n") + "\n--- engine ---\n"
            + loaders.joined(separator: "\n") + "\ndrains \(page?.drains ?? 0)\n--- chromium ---\n"
            + (chromium ?? []).joined(separator: "\n")
    }

    /// The longest span of wall-clock time after the first `playing` event in which currentTime did not advance
    /// (until the last sample), in seconds: a stall as the viewer sees it.
    var longestStall: Double {
        guard let page, let playing = page.events.first(where: { $0.name == "playing" }) else { return .infinity }
        var longest = 0.0
        var since: (wall: Double, time: Double)?
        for sample in page.samples where sample.wall >= playing.wall {
            guard let last = since else {
                since = (sample.wall, sample.currentTime)
                continue
            }
            if sample.currentTime > last.time + 0.001 {
                since = (sample.wall, sample.currentTime)
            } else {
                longest = max(longest, sample.wall - last.wall)
            }
        }
        return longest
    }

    /// Each `waiting` event after the first `playing`, with how long it lasted (until the next `playing`, or the
    /// end of the record).
    var waits: [(at: Double, seconds: Double)] {
        guard let page, let first = page.events.firstIndex(where: { $0.name == "playing" }) else { return [] }
        let events = page.events[first...]
        let end = page.samples.last?.wall ?? 0
        return events.filter { $0.name == "waiting" }.map { wait in
            let resumed = events.first { $0.name == "playing" && $0.wall >= wait.wall }?.wall ?? end
            return (wait.currentTime ?? 0, resumed - wait.wall)
        }
    }

    /// Samples whose picture is mostly red (the test streams' ads are solid red).
    var redSamples: [Sample] {
        (page?.samples ?? []).filter { sample in
            guard let c = sample.colour, c.count == 3 else { return false }
            return c[0] > 150 && c[1] < 90 && c[2] < 90
        }
    }
}

/// browser_player.py as a child process: prints its page's origin, then plays the URL written to its stdin.
final class BrowserPlayer: Sendable {
    let child: ChildProcess
    let origin: String

    /// Starts the page server; `until` is `ended` or `msn:N`; requests whose URL contains `late` reach the stream
    /// 0.5 s late.
    init(until: String, timeout: Double, late: String = "") async throws {
        let python = try #require(EndToEnd.tool("python3"))
        _ = try #require(EndToEnd.tool("chromium"))
        let script = EndToEnd.repositoryRoot.appendingPathComponent("Tests/Origins/browser_player.py").path
        child = try await ChildProcess(
            python, [script, "--until", until, "--timeout", String(timeout), "--late", late], standardInput: true,
            passStandardError: true)
        origin = await child.lines(1, within: 20).first ?? ""
    }

    /// Plays `url` and waits (as long as the script's own timeout, plus a margin) for the report.
    func play(_ url: String, within seconds: Double) async throws -> (
        status: Int32, report: BrowserReport?, text: String
    ) {
        child.write(Data((url + "\n").utf8))
        if await !child.waitForExit(within: seconds + 20) { await child.stop() }
        await child.stop()
        let text = child.stdout
        let lines = text.split(separator: "\n")
        let json = lines.count > 1 ? lines.last.map(String.init) ?? "" : ""
        let report = try? JSONDecoder().decode(BrowserReport.self, from: Data(json.utf8))
        return (child.process.terminationStatus, report, text)
    }

    func stop() async { await child.stop() }

    func stop() { child.stop() }
}

@Suite(.serialized) struct BrowserPlaybackTests {
    /// The MSE types video.js needs here; Debian's chromium must decode H.264 and AAC.
    static func checkCodecs(_ page: BrowserReport.Page, _ logs: String) {
        let missing = page.supported.filter { !$0.value }.map(\.key).sorted()
        #expect(
            missing.isEmpty,
            "this chromium's MediaSource cannot take \(missing); it supports \(page.supported.filter(\.value).keys.sorted())"
        )
    }

    /// The live stream in TS, and in fMP4 (whose slates have an init section of their own, with the content's
    /// audio track).
    @Test(arguments: [false, true]) func videoJSPlaysALiveStreamThroughTheProxyAcrossAnAdBreak(fragmented: Bool)
        async throws
    {
        let dir = try (fragmented ? await ProxyMedia.fragmented : await ProxyMedia.directory).get()
        let python = try #require(EndToEnd.tool("python3"))
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let script = EndToEnd.repositoryRoot.appendingPathComponent("Tests/Origins/hls_origin.py").path
        // Segments 8-10 (16-22 s of the stream, red pictures) are one ad break marked with CUE-OUT/CUE-IN.
        let origin = try await ProxyTestProcess(
            python,
            [
                script, "--dir", dir.path, "--mode", "live", "--segments", "\(ProxyMedia.segments)", "--breaks",
                "cue:8-10",
            ] + (fragmented ? ["--fmp4"] : []))
        defer { origin.stop() }
        let port = try #require(Int(origin.firstLine), "origin said \(origin.firstLine)")
        let browser = try await BrowserPlayer(until: "msn:11", timeout: 60)
        defer { browser.stop() }
        #expect(browser.origin.hasPrefix("http://127.0.0.1:"), "page server said \(browser.origin)")
        let proxy = try await ProxyTestProcess(
            tsplayer,
            [
                "proxy", "http://127.0.0.1:\(port)/stream.m3u8", "--allow-private", "--explain", "--cors",
                browser.origin,
            ])
        defer { proxy.stop() }
        #expect(proxy.firstLine.hasSuffix("/master.m3u8"), "proxy said \(proxy.firstLine)")
        let (status, decoded, text) = try await browser.play(proxy.firstLine, within: 60)
        let report = try #require(decoded, "no report from the page: \(text.suffix(3000))")
        let page = try #require(report.page, "\(report.failure ?? "the page sent nothing")\n\(report.logs)")
        let context = "\(report.logs)\n--- proxy ---\n\(proxy.stderr.suffix(4000))"
        Self.checkCodecs(page, context)
        #expect(page.error == nil, "player error \(page.error?.code ?? 0): \(page.error?.message ?? "")\n\(context)")
        #expect(status == 0 && page.reached, "did not play past segment 11 within 60 s (status \(status))\n\(context)")
        // The break's three segments were slates from the proxy, on the player's timeline between content.
        for msn in 8...10 {
            let segment = page.segments["\(msn)"]
            #expect(segment?.uri.contains("/slate/") == true, "segment \(msn): \(segment?.uri ?? "not loaded")")
        }
        let after = try #require(page.segments["11"], "segment 11 not loaded\n\(context)")
        #expect(after.uri.contains("/s/"), "segment 11: \(after.uri)")
        let breakEnd = try #require(page.segments["10"]?.end)
        let last = try #require(page.samples.last)
        #expect(last.currentTime > breakEnd, "played to \(last.currentTime) s; the break ends at \(breakEnd) s")
        #expect(page.requests.contains { $0.uri.contains("/slate/") })
        // Played through: nothing red (an ad picture) was ever shown, no stall as long as a segment.
        #expect(report.redSamples.isEmpty, "red (ad) pictures at \(report.redSamples.map(\.currentTime).prefix(5))")
        #expect(report.longestStall < 2, "currentTime stood still for \(report.longestStall) s\n\(context)")
        let longWaits = report.waits.filter { $0.seconds >= 2 }
        #expect(longWaits.isEmpty, "waiting for a segment's length or more: \(longWaits)\n\(context)")
        #expect(proxy.stderr.contains("[EXT-X-CUE-OUT break cue-out-8]"), "\(proxy.stderr.suffix(2000))")
    }

    /// The control: the same page and proxy without `--cors` play nothing, because the proxy's answer to the page's
    /// request carries no `Access-Control-Allow-Origin`; with `--cors <page origin>` the answer names the page and
    /// the page plays. What is asserted is what the viewer sees (the player's error, nothing played) and the cause on
    /// the wire (the header, asked for directly as the browser asks), never chromium's console wording.
    @Test func withoutCORSTheBrowserRefusesTheProxysPlaylist() async throws {
        let dir = try await ProxyMedia.directory.get()
        let python = try #require(EndToEnd.tool("python3"))
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let script = EndToEnd.repositoryRoot.appendingPathComponent("Tests/Origins/hls_origin.py").path
        let origin = try await ProxyTestProcess(
            python, [script, "--dir", dir.path, "--mode", "vod", "--segments", "\(ProxyMedia.segments)"])
        defer { origin.stop() }
        let port = try #require(Int(origin.firstLine), "origin said \(origin.firstLine)")
        let upstream = "http://127.0.0.1:\(port)/stream.m3u8"

        let refusing = try await BrowserPlayer(until: "msn:1", timeout: 20)
        defer { refusing.stop() }
        let plain = try await ProxyTestProcess(tsplayer, ["proxy", upstream, "--allow-private"])
        defer { plain.stop() }
        let plainAnswer = try await Self.answer(plain.firstLine, origin: refusing.origin)
        #expect(plainAnswer.status == 200 && plainAnswer.allowOrigin == nil, "\(plainAnswer)")
        let (_, decoded, text) = try await refusing.play(plain.firstLine, within: 20)
        let report = try #require(decoded, "no report from the page: \(text.suffix(3000))")
        let page = try #require(report.page, "\(report.failure ?? "the page sent nothing")\n\(report.logs)")
        #expect(page.error != nil && !page.reached, "played without CORS\n\(report.logs)")
        #expect(page.segments.isEmpty, "loaded segments without CORS: \(page.segments.keys.sorted())")
        #expect(page.samples.allSatisfy { $0.currentTime == 0 }, "the picture moved without CORS")

        let allowed = try await BrowserPlayer(until: "msn:1", timeout: 30)
        defer { allowed.stop() }
        let cors = try await ProxyTestProcess(
            tsplayer, ["proxy", upstream, "--allow-private", "--cors", allowed.origin])
        defer { cors.stop() }
        let corsAnswer = try await Self.answer(cors.firstLine, origin: allowed.origin)
        #expect(corsAnswer.status == 200 && corsAnswer.allowOrigin == allowed.origin, "\(corsAnswer)")
        let (status, playedReport, playedText) = try await allowed.play(cors.firstLine, within: 30)
        let played = try #require(playedReport, "no report from the page: \(playedText.suffix(3000))")
        let playedPage = try #require(played.page, "\(played.failure ?? "the page sent nothing")\n\(played.logs)")
        #expect(
            status == 0 && playedPage.error == nil && playedPage.reached,
            "with --cors: error \(playedPage.error?.code ?? 0), reached \(playedPage.reached)\n\(played.logs)")
    }

    /// The proxy's answer to a GET of `url` carrying the page's `Origin`, as the browser sends it: the status and
    /// the `Access-Control-Allow-Origin` field, if any.
    static func answer(_ url: String, origin: String) async throws -> (status: Int, allowOrigin: String?) {
        let curl = try #require(EndToEnd.tool("curl"))
        let result = try await EndToEnd.run(
            curl, ["-s", "-o", "/dev/null", "-D", "-", "-H", "Origin: \(origin)", url], timeout: 30)
        var status = 0
        var allowOrigin: String?
        for line in result.out.components(separatedBy: "\r\n") {
            if line.hasPrefix("HTTP/") {
                status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            } else if let colon = line.firstIndex(of: ":"),
                line[..<colon].lowercased() == "access-control-allow-origin"
            {
                allowOrigin = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return (status, allowOrigin)
    }

    /// Also with the audio playlist 0.5 s late, so that the first video segment always comes before it: the order
    /// in which video.js 7's engine leaves the video SourceBuffer waiting (browser_player.py), which a loaded
    /// machine produces by chance. The page's drain of the engine's queue must be what let it play then.
    @Test(arguments: ["", "audio-257.m3u8"])
    func videoJSPlaysTheFragmentedMP4PresentationToTheEnd(late: String) async throws {
        let movie = try #require(await FragmentedFixtures.h264AAC)
        let ffprobe = try #require(EndToEnd.tool("ffprobe"))
        let probe = try await EndToEnd.run(
            ffprobe, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", movie.path])
        let sourceDuration = try #require(Double(probe.out.trimmingCharacters(in: .whitespacesAndNewlines)))
        let browser = try await BrowserPlayer(until: "ended", timeout: 40, late: late)
        defer { browser.stop() }
        let server = try await ServerProcess(arguments: [
            movie.path, "--container", "fmp4", "--segment-duration", "1", "--cors", browser.origin, "-v",
        ])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let (status, decoded, text) = try await browser.play(url, within: 40)
        let report = try #require(decoded, "no report from the page: \(text.suffix(3000))")
        let page = try #require(report.page, "\(report.failure ?? "the page sent nothing")\n\(report.logs)")
        let context = "\(report.logs)\n--- server ---\n\(server.logText.suffix(4000))"
        Self.checkCodecs(page, context)
        #expect(page.error == nil, "player error \(page.error?.code ?? 0): \(page.error?.message ?? "")\n\(context)")
        #expect(status == 0 && page.reached, "no 'ended' within 40 s (status \(status))\n\(context)")
        let ended = page.events.last { $0.name == "ended" }
        let duration = try #require(page.duration)
        #expect(
            abs(duration - sourceDuration) < 1, "the player's duration \(duration) s, the file's \(sourceDuration) s")
        #expect(abs((ended?.currentTime ?? 0) - sourceDuration) < 1, "ended at \(ended?.currentTime ?? 0) s")
        #expect(server.logText.contains("/video/4.m4s 200"), "\(server.logText.suffix(2000))")
        #expect(server.logText.contains("init.mp4 200"), "\(server.logText.suffix(2000))")
        #expect(report.longestStall < 1, "currentTime stood still for \(report.longestStall) s\n\(context)")
        let longWaits = report.waits.filter { $0.seconds >= 1 }
        #expect(longWaits.isEmpty, "waiting for a segment's length or more: \(longWaits)\n\(context)")
        if !late.isEmpty {
            #expect(page.drains > 0, "the late audio playlist did not leave the engine's video updates waiting")
        }
    }
}
