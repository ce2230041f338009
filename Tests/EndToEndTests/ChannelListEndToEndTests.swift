// An IPTV channel list as the input of `tsplayer download` and `tsplayer proxy` (`--channel`): the headers the list
// gives the chosen channel (#EXTVLCOPT, #EXTHTTP, a Kodi `|Name=value` suffix on the entry's URL) go on every request
// the tools make for it, against an origin that refuses any request without them; and the usage errors of a channel
// that is ambiguous or not in the list.
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite(.serialized, .temporaryFolders) struct ChannelListEndToEndTests {
    static let agent = "KodiTest/1.0"
    static let referer = "http://referrer.example/page"

    /// One list per header source, each with a decoy channel before the stream's and the choice that names it.
    static func lists(_ url: String) -> [(source: String, text: String, choice: String)] {
        [
            (
                "#EXTVLCOPT",
                """
                #EXTM3U x-tvg-url="http://guide.example/epg.xml"
                #EXTINF:-1 tvg-id="decoy.tv" tvg-name="Decoy",Decoy Channel
                http://127.0.0.1:1/decoy.m3u8
                #EXTINF:-1 tvg-id="aes.test" tvg-name="AES Test" group-title="Tests",AES Channel
                #EXTVLCOPT:http-user-agent=\(agent)
                #EXTVLCOPT:http-referrer=\(referer)
                \(url)

                """,
                "aes channel"
            ),
            (
                "#EXTHTTP",
                "\u{FEFF}#EXTM3U\r\n#EXTINF:-1 tvg-id=\"decoy.tv\",Decoy Channel\r\nhttp://127.0.0.1:1/decoy.m3u8\r\n"
                    + "#EXTINF:-1 tvg-id=\"aes.test\" tvg-chno=\"7\",AES Channel\r\n#EXTGRP:Tests\r\n"
                    + "#EXTHTTP:{\"User-Agent\":\"\(agent)\",\"Referer\":\"\(referer)\"}\r\n\(url)\r\n",
                "7"
            ),
            (
                "a pipe suffix on the entry's URL",
                // No #EXTM3U header: EXTINF lines only.
                """
                #EXTINF:-1,Decoy Channel
                http://127.0.0.1:1/decoy.m3u8
                #EXTINF:-1 tvg-id="aes.test",AES Channel
                \(url)|User-Agent=KodiTest%2F1.0&Referer=http%3A%2F%2Freferrer.example%2Fpage

                """,
                "aes.test"
            ),
        ]
    }

    static func origin(_ fixtures: DownloadFixtures) async throws -> FaultOrigin? {
        try await FaultOrigin(
            root: fixtures.www,
            arguments: [
                "--rate", "0", "--require-header", "User-Agent=\(agent)", "--require-header", "Referer=\(referer)",
            ])
    }

    static func write(_ text: String, in folder: URL) throws -> String {
        let file = folder.appendingPathComponent("channels-\(UUID().uuidString).m3u")
        try Data(text.utf8).write(to: file)
        return file.path
    }

    /// `tsplayer download LIST --channel C` of an AES-128 stream with a key change, once per header source: the
    /// playlist, both keys and every segment carried both headers (the origin answers 403 without them), and the
    /// result is the origin's byte for byte. The same channel's URL alone is refused.
    @Test func downloadSendsTheListsHeadersOnEveryRequest() async throws {
        guard let fixtures = await DownloadFixtures.get(), let origin = try await Self.origin(fixtures) else { return }
        defer { origin.stop() }
        let folder = DownloadTool.temporaryStore()
        let url = origin.url("aes/index.m3u8")
        let plain = try await #require(try DownloadTool.run(["download", url, "-o", folder.path + "/plain"]))
        #expect(plain.status == 2)
        #expect(plain.err.contains("403 Forbidden"), "\(plain.err)")
        let playlist = fixtures.www.appendingPathComponent("aes/index.m3u8")
        let expected = Set(["/aes/index.m3u8"] + DownloadFixtures.references(playlist).map { "/aes/" + $0 })
        #expect(expected.contains { $0.hasSuffix(".key") } && expected.contains { $0.hasSuffix(".ts") })
        for (index, list) in Self.lists(url).enumerated() {
            let before = FailFastEndToEndTests.requests(origin).count
            let file = try Self.write(list.text, in: folder)
            let store = folder.path + "/store\(index)"
            let result = try await #require(
                try DownloadTool.run(["download", file, "--channel", list.choice, "-o", store, "--id", "k"]))
            #expect(result.status == 0, "\(list.source): \(result.err)")
            #expect(
                DownloadFixtures.expectIdentical(origin: playlist, local: URL(fileURLWithPath: store + "/k/index.m3u8"))
                    > 0, "\(list.source)")
            let carried = FailFastEndToEndTests.requests(origin).dropFirst(before)
            #expect(carried.allSatisfy { $0.status == "200" && $0.fault == "none" }, "\(list.source): \(carried)")
            #expect(Set(carried.map(\.path)) == expected, "\(list.source)")
        }
    }

    /// `tsplayer download LIST --channel C` interrupted, then `tsplayer tasks resume`, once per header source. The
    /// first origin answers the playlist and stalls every key and segment (1 byte/s), so the download is under way and
    /// unfinished when it is killed (SIGKILL, as a crash); the resume is answered by a second origin on the same port
    /// that refuses any request without both headers (403) and injects no fault. The resumed download completes byte
    /// for byte with every request it made answered (200, or 206 for a part-written file continued by Range), which it
    /// can only do with the list's headers kept in the task: the resume is given no list, no channel and no header.
    @Test func aResumedChannelDownloadKeepsTheListsHeaders() async throws {
        let fixtures = try #require(await DownloadFixtures.get())
        let folder = DownloadTool.temporaryStore()
        let playlist = fixtures.www.appendingPathComponent("aes/index.m3u8")
        let required = ["--require-header", "User-Agent=\(Self.agent)", "--require-header", "Referer=\(Self.referer)"]
        for (index, source) in ["#EXTVLCOPT", "#EXTHTTP", "a pipe suffix on the entry's URL"].enumerated() {
            let stalling = try #require(
                try await FaultOrigin(
                    root: fixtures.www,
                    arguments: ["--rate", "1", "--faults", "stall", "--stall-seconds", "60"] + required))
            let port = stalling.port
            let list = try #require(Self.lists(stalling.url("aes/index.m3u8")).first { $0.source == source })
            let file = try Self.write(list.text, in: folder)
            let store = folder.appendingPathComponent("resume\(index)")
            let runner = try #require(
                try await DownloadProcessesTests.Runner(
                    ["download", file, "--channel", list.choice, "-o", store.path, "--id", "r"], folder: folder))
            try await DownloadProcessesTests.waitFor("\(source): the task to run in process \(runner.pid)") {
                try await DownloadProcessesTests.list(store).first?["pid"] as? Int == Int(runner.pid)
            }
            // Well into the stalled requests: some file part-written (on a loaded machine that can take longer than
            // any fixed wait).
            await DownloadProcessesTests.waitFor("\(source): a part-written file in \(store.path)") {
                let files = FileManager.default.enumerator(atPath: store.path)?.allObjects as? [String] ?? []
                return files.contains { name in
                    guard name.hasSuffix(".part") else { return false }
                    let size =
                        try? FileManager.default.attributesOfItem(
                            atPath: store.appendingPathComponent(name).path)[.size] as? Int
                    return (size ?? 0) > 0
                }
            }
            kill(runner.pid, SIGKILL)
            #expect(await runner.waitForExit(seconds: 5), "\(source)")
            await stalling.stop()
            let task = try await DownloadProcessesTests.list(store).first
            #expect(task?["state"] as? String == "paused", "\(source): \(task ?? [:])")

            let origin = try #require(
                try await FaultOrigin(root: fixtures.www, arguments: ["--rate", "0", "--port", "\(port)"] + required))
            defer { origin.stop() }
            let resumed = try await #require(try DownloadTool.run(["tasks", "resume", "r", "--store", store.path]))
            #expect(resumed.status == 0, "\(source): \(resumed.err)")
            #expect(
                DownloadFixtures.expectIdentical(origin: playlist, local: store.appendingPathComponent("r/index.m3u8"))
                    > 0, "\(source)")
            let requests = FailFastEndToEndTests.requests(origin)
            #expect(!requests.isEmpty, "\(source): the resume made no request")
            // 206 for the files the stall left part-written: they are continued by Range, not fetched again.
            #expect(
                requests.allSatisfy { ["200", "206"].contains($0.status) && $0.fault == "none" },
                "\(source): \(requests)")
            #expect(requests.contains { $0.status == "206" }, "\(source): \(requests)")
        }
    }

    /// `tsplayer proxy LIST --channel C` and ffmpeg reading through it, once per header source: every upstream
    /// request (door check, playlist, keys, segments) carried both headers.
    @Test func proxySendsTheListsHeadersOnEveryRequest() async throws {
        guard let tsplayer = EndToEnd.product("tsplayer"), let ffmpeg = EndToEnd.tool("ffmpeg"),
            let fixtures = await DownloadFixtures.get(), let origin = try await Self.origin(fixtures)
        else { return }
        defer { origin.stop() }
        let folder = DownloadTool.temporaryStore()
        let playlist = fixtures.www.appendingPathComponent("aes/index.m3u8")
        let expected = Set(["/aes/index.m3u8"] + DownloadFixtures.references(playlist).map { "/aes/" + $0 })
        for list in Self.lists(origin.url("aes/index.m3u8")) {
            let before = FailFastEndToEndTests.requests(origin).count
            let file = try Self.write(list.text, in: folder)
            let proxy = try await ProxyTestProcess(
                tsplayer, ["proxy", file, "--channel", list.choice, "--allow-private"])
            defer { proxy.stop() }
            #expect(proxy.firstLine.hasSuffix("/master.m3u8"), "\(list.source): \(proxy.stderr)")
            let read = try await EndToEnd.run(
                ffmpeg, ["-nostdin", "-loglevel", "error", "-i", proxy.firstLine, "-c", "copy", "-f", "null", "-"])
            #expect(read.status == 0, "\(list.source): \(read.err)")
            let requests = FailFastEndToEndTests.requests(origin).dropFirst(before)
            // (ffmpeg asks for segments by Range: 206.)
            #expect(
                requests.allSatisfy { ["200", "206"].contains($0.status) && $0.fault == "none" },
                "\(list.source): \(requests)")
            #expect(Set(requests.map(\.path)) == expected, "\(list.source)")
            #expect(!proxy.stderr.contains("upstream error"), "\(list.source): \(proxy.stderr)")
        }
    }

    /// `tsplayer proxy LIST --all-channels`: the local list names every channel as the source does (title, tvg-id,
    /// group, the header's guide URL, attribute names as the source spells them), leaves out a channel without an
    /// http(s) URL (with a warning), and each channel, one per header source (a quoted Kodi header value and a bare
    /// URL line among them), plays through the proxy with its own headers: ffmpeg reads each, and every upstream
    /// request carried both headers, unquoted (the origin refuses any other value). A left-out channel's route is 404.
    @Test func proxyServesAWholeList() async throws {
        guard let tsplayer = EndToEnd.product("tsplayer"), let ffmpeg = EndToEnd.tool("ffmpeg"),
            let curl = EndToEnd.tool("curl"), let fixtures = await DownloadFixtures.get(),
            let origin = try await Self.origin(fixtures)
        else { return }
        defer { origin.stop() }
        let url = origin.url("aes/index.m3u8")
        let file = try Self.write(
            "#EXTM3U x-tvg-url=\"http://guide.example/epg.xml\"\n"
                + "#EXTINF:-1 tvg-id=\"vlc\" group-title=\"Tests\",VLC Channel\n"
                + "#EXTVLCOPT:http-user-agent=\(Self.agent)\n#EXTVLCOPT:http-referrer=\(Self.referer)\n\(url)\n"
                + "#EXTINF:-1 tvg-id=\"http\",HTTP Channel\n#EXTGRP:Grouped\n"
                + "#EXTHTTP:{\"User-Agent\":\"\(Self.agent)\",\"Referer\":\"\(Self.referer)\"}\n\(url)\n"
                + "#EXTINF:-1,Relative\nrelative.m3u8\n"
                + "#EXTINF:-1 TVG-ID=\"pipe\",Pipe Channel\n"
                + "\(url)|User-Agent=\"KodiTest/1.0\"&Referer=http%3A%2F%2Freferrer.example%2Fpage\n"
                // A bare URL line (no #EXTINF) is a channel too, named after its URL.
                + "\(url)|User-Agent=KodiTest%2F1.0&Referer=%22http%3A%2F%2Freferrer.example%2Fpage%22\n",
            in: DownloadTool.temporaryStore())
        let proxy = try await ProxyTestProcess(tsplayer, ["proxy", file, "--all-channels", "--allow-private"])
        defer { proxy.stop() }
        #expect(proxy.firstLine.hasSuffix("/channels.m3u"), "\(proxy.stderr)")
        let base = String(proxy.firstLine.dropLast("channels.m3u".count))
        let local = try await EndToEnd.run(curl, ["-s", "-f", proxy.firstLine])
        #expect(
            local.out
                == "#EXTM3U x-tvg-url=\"http://guide.example/epg.xml\"\n"
                + "#EXTINF:-1 tvg-id=\"vlc\" group-title=\"Tests\",VLC Channel\n\(base)1/index.m3u8\n"
                + "#EXTINF:-1 tvg-id=\"http\" group-title=\"Grouped\",HTTP Channel\n\(base)2/index.m3u8\n"
                + "#EXTINF:-1 TVG-ID=\"pipe\",Pipe Channel\n\(base)4/index.m3u8\n"
                + "#EXTINF:-1,index.m3u8\n\(base)5/index.m3u8\n", "\(local.out)")
        let playlist = fixtures.www.appendingPathComponent("aes/index.m3u8")
        let expected = Set(["/aes/index.m3u8"] + DownloadFixtures.references(playlist).map { "/aes/" + $0 })
        for n in [1, 2, 4, 5] {
            let before = FailFastEndToEndTests.requests(origin).count
            let read = try await EndToEnd.run(
                ffmpeg,
                ["-nostdin", "-loglevel", "error", "-i", base + "\(n)/index.m3u8", "-c", "copy", "-f", "null", "-"])
            #expect(read.status == 0, "channel \(n): \(read.err)")
            let requests = FailFastEndToEndTests.requests(origin).dropFirst(before)
            #expect(
                requests.allSatisfy { ["200", "206"].contains($0.status) && $0.fault == "none" },
                "channel \(n): \(requests)")
            #expect(Set(requests.map(\.path)) == expected, "channel \(n)")
        }
        let leftOut = try await EndToEnd.run(
            curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", base + "3/index.m3u8"])
        #expect(leftOut.out == "404")
        #expect(
            proxy.stderr.contains("warning: channel 'Relative' (line 10) has no absolute http or https URL; left out"),
            "\(proxy.stderr)")
        #expect(!proxy.stderr.contains("upstream error"), "\(proxy.stderr)")
    }

    /// A list served over http is read with the caller's -H headers, and the channel's own headers go on the
    /// stream's requests.
    @Test func aListServedOverHTTPIsReadWithTheCallersHeaders() async throws {
        guard let fixtures = await DownloadFixtures.get(), let origin = try await Self.origin(fixtures) else { return }
        defer { origin.stop() }
        let folder = DownloadTool.temporaryStore()
        let www = fixtures.www.appendingPathComponent("channels-\(UUID().uuidString).m3u")
        try Data(Self.lists(origin.url("aes/index.m3u8"))[0].text.utf8).write(to: www)
        defer { try? FileManager.default.removeItem(at: www) }
        let listURL = origin.url(www.lastPathComponent)
        let refused = try await #require(
            try DownloadTool.run(["download", listURL, "--channel", "AES Test", "-o", folder.path]))
        #expect(refused.status == 2)
        #expect(refused.err.hasPrefix("Error: channel list: \(listURL): "), "\(refused.err)")
        #expect(refused.err.contains("403"), "\(refused.err)")
        let result = try await #require(
            try DownloadTool.run([
                "download", listURL, "--channel", "AES Test", "-o", folder.path, "--id", "k", "-H",
                "Referer: \(Self.referer)", "--user-agent", Self.agent,
            ]))
        #expect(result.status == 0, "\(result.err)")
    }

    /// Names that match no channel or several are usage errors that list the candidates; a missing list is exit 2.
    @Test func channelChoiceErrors() async throws {
        let folder = DownloadTool.temporaryStore()
        let file = try Self.write(
            """
            #EXTM3U
            #EXTINF:-1 tvg-id="bbc1.uk",BBC One
            http://127.0.0.1:1/one.m3u8
            #EXTINF:-1 tvg-id="bbc2.uk",BBC Two
            http://127.0.0.1:1/two.m3u8
            #EXTINF:-1 group-title="UK",News
            http://127.0.0.1:1/news-uk.m3u8
            #EXTINF:-1 group-title="US",News
            http://127.0.0.1:1/news-us.m3u8
            #EXTINF:-1,Relative
            relative.m3u8

            """, in: folder)
        let usage = "\nUSAGE: tsplayer download <url> [-o <dir>]"
        for (choice, message) in [
            (
                "news",
                "Error: channel 'news' is ambiguous: 2 channels match (#3 'News', #4 'News'); pick one by its "
                    + "number, e.g. --channel 3"
            ),
            ("BBC Tow", "Error: no channel 'BBC Tow' in the list; near matches: #2 'BBC Two' (tvg-id bbc2.uk)"),
            (
                "bbc",
                "Error: no channel 'bbc' in the list; near matches: #1 'BBC One' (tvg-id bbc1.uk), "
                    + "#2 'BBC Two' (tvg-id bbc2.uk)"
            ),
            ("9", "Error: no channel '9' in the list; the list has 5 channels, numbered 1 to 5"),
        ] {
            let result = try #require(
                try await DownloadTool.run(["download", file, "--channel", choice, "-o", folder.path]))
            #expect(result.status == 64, "\(choice)")
            #expect(result.err.hasPrefix(message + usage), "\(choice): \(result.err)")
            let proxy = try #require(try await DownloadTool.run(["proxy", file, "--channel", choice]))
            #expect(proxy.status == 64, "\(choice)")
            #expect(proxy.err.hasPrefix(message + "\nUSAGE: tsplayer proxy <url>"), "\(choice): \(proxy.err)")
        }
        let relative = try #require(
            try await DownloadTool.run(["download", file, "--channel", "5", "-o", folder.path]))
        #expect(relative.status == 2)
        #expect(
            relative.err
                == "Error: channel list \(file): channel 'Relative' (line 10) has no absolute http or https URL: "
                + "'relative.m3u8'\n", "\(relative.err)")
        let missing = try await #require(
            try DownloadTool.run(["download", folder.path + "/none.m3u", "--channel", "1", "-o", folder.path]))
        #expect(missing.status == 2)
        #expect(missing.err == "Error: channel list \(folder.path)/none.m3u: no such file\n", "\(missing.err)")
    }
}
