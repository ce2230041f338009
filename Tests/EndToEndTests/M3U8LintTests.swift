// End-to-end tests of m3u8lint: the built binary's output and exit codes pinned exactly, JSON outputs checked
// against the fixtures, http(s) input served by a real HTTP server, and a differential test against Python's
// m3u8 package on the fixtures where both should agree.
// Long file: the m3u8lint suites (fixtures, http fetches, the python m3u8 comparison) and the scripted origin they share.
import FileRange
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

enum PlaylistFixtures {
    static let directory = EndToEnd.repositoryRoot.appendingPathComponent(
        "Packages/HLSPlaylist/Tests/HLSPlaylistTests/Fixtures")
    static func path(_ relative: String) -> String { directory.appendingPathComponent(relative).path }
    static func files(_ folder: String) -> [String] {
        let dir = directory.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { $0.hasSuffix(".m3u8") }.sorted().map { dir.appendingPathComponent($0).path }
    }
}

@Suite(.temporaryFolders) struct M3U8LintTests {
    func lint(_ arguments: [String], input: Data? = nil) async throws -> ProcessResult? {
        guard let tool = EndToEnd.product("m3u8lint") else { return nil }
        return try await EndToEnd.run(tool, arguments, input: input, currentDirectory: PlaylistFixtures.directory)
    }

    func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Seconds since 1970 of an RFC 3339 date with fractional seconds (as --dump-json writes and fixtures hold).
    static func seconds(since1970 text: String) -> Double? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: text)?.timeIntervalSince1970
    }

    @Test func helpVersionAndUsageErrors() async throws {
        let help = try #require(try await lint(["--help"]))
        #expect(help.status == 0)
        #expect(help.out.contains("USAGE: m3u8lint"))
        #expect(help.out.contains("\nARGUMENTS:\n"))
        #expect(help.out.contains("\nOPTIONS:\n"))
        #expect(help.err.isEmpty)
        let version = try #require(try await lint(["--version"]))
        #expect(version.status == 0)
        #expect(version.out == "1.0.0\n")
        let bad = try #require(try await lint(["--bogus", "x.m3u8"]))
        #expect(bad.status == 64)
        #expect(bad.out.isEmpty)
        #expect(bad.err.hasPrefix("Error: unknown option '--bogus'\nUSAGE: m3u8lint "))
        let none = try #require(try await lint([]))
        #expect(none.status == 64)
        #expect(none.err.hasPrefix("Error: missing expected argument '<input> ...'\n"))
        let missing = try #require(try await lint(["no-such-file.m3u8"]))
        #expect(missing.status == 2)
        #expect(missing.err == "Error: no-such-file.m3u8: No such file or directory\n")
    }

    @Test func findingsAreFormattedAndExitCodesFollowSeverity() async throws {
        let bad = try #require(try await lint(["invalid/HLS-EXTINF-TARGET@6.m3u8"]))
        #expect(bad.status == 1)
        #expect(
            bad.out
                == "invalid/HLS-EXTINF-TARGET@6.m3u8:6:9: error: EXTINF 6.5 rounds above the target duration 6 "
                + "[HLS-EXTINF-TARGET] (4.4.3.1)\n")
        let warned = try #require(try await lint(["valid/spec-simple-media.m3u8"]))
        #expect(warned.status == 0)
        #expect(
            warned.out
                == "valid/spec-simple-media.m3u8:2:23: warning: target duration 10 is above 6 seconds "
                + "[APPLE-TARGET-DURATION] (Apple HLS authoring 6.1)\n")
        let strict = try #require(try await lint(["--strict", "valid/spec-simple-media.m3u8"]))
        #expect(strict.status == 1)
        let clean = try #require(try await lint(["valid/ll-hls.m3u8"]))
        #expect(clean.status == 0)
        // A live playlist without --previous: only the info that the live-update rules were not checked.
        #expect(
            clean.out
                == "valid/ll-hls.m3u8:1:1: info: a live playlist: the live-update rules need the previous poll "
                + "(--previous) and were not checked [LIVE-UNCHECKED] (6.2.1)\n")
        let stdin = try await #require(
            try lint(
                ["-"],
                input: try Data(contentsOf: URL(fileURLWithPath: PlaylistFixtures.path("invalid/HLS-HEADER@1.m3u8")))))
        #expect(stdin.status == 1)
        #expect(stdin.out.hasPrefix("<stdin>:1:1: error: the first line must be #EXTM3U [HLS-HEADER] (4.4.1.1)\n"))
    }

    /// Every invalid fixture reports its rule on its line through the binary too (JSON output): `RULE@LINE.m3u8`,
    /// and the enumerated values' `cases/CASE.RULE@LINE.m3u8`.
    @Test func jsonFindingsForEveryInvalidFixture() async throws {
        let cases = PlaylistFixtures.files("invalid/cases")
        #expect(!cases.isEmpty)
        for path in PlaylistFixtures.files("invalid") + PlaylistFixtures.files("invalid/live") + cases
        where !path.hasSuffix(".previous.m3u8") {
            let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
            let parts = (name.split(separator: ".").last ?? "").split(separator: "@")
            let rule = String(parts[0])
            let line = Int(parts[1]) ?? -1
            var arguments = ["--json", path]
            let previous = path.replacingOccurrences(of: ".m3u8", with: ".previous.m3u8")
            if FileManager.default.fileExists(atPath: previous) {
                arguments = ["--json", "--previous", previous, path]
            }
            let result = try #require(try await lint(arguments))
            let object = try json(result.stdout)
            let issues = try #require(object["issues"] as? [[String: Any]])
            #expect(Set(object.keys) == ["issues"])
            let hit = issues.first { $0["rule"] as? String == rule && $0["line"] as? Int == line }
            #expect(hit != nil, "\(name): \(result.out)")
            if let hit {
                #expect(Set(hit.keys) == ["severity", "line", "column", "rule", "message", "section"])
                let severity = hit["severity"] as? String
                #expect(result.status == (issues.contains { $0["severity"] as? String == "error" } ? 1 : 0))
                #expect(["error", "warning", "info"].contains(severity ?? ""))
            }
        }
    }

    @Test func dumpJSONOfAMediaPlaylist() async throws {
        let result = try await #require(
            try lint(["--dump-json", "--url", "https://origin.example/live/index.m3u8", "valid/every-media-tag.m3u8"]))
        #expect(result.status == 0)
        let o = try json(result.stdout)
        #expect(o["kind"] as? String == "media")
        #expect(o["version"] as? Int == 9)
        #expect(o["targetDuration"] as? Int == 6)
        #expect(o["mediaSequence"] as? Int == 100)
        #expect(o["discontinuitySequence"] as? Int == 3)
        #expect(o["endList"] as? Bool == false)
        #expect(o["playlistType"] as? String == "EVENT")
        #expect(o["iFramesOnly"] as? Bool == false)
        #expect(o["partCount"] as? Int == 3)
        let skip = try #require(o["skip"] as? [String: Any])
        #expect(skip["skippedSegments"] as? Int == 2)
        let ranges = try #require(o["dateRanges"] as? [[String: Any]])
        #expect(ranges.map { $0["id"] as? String } == ["ad1"])
        let segments = try #require(o["segments"] as? [[String: Any]])
        #expect(segments.count == 3)
        let first = segments[0]
        #expect(first["uri"] as? String == "https://cdn.example.com/media.mp4")
        #expect(first["duration"] as? Double == 6)
        #expect(first["title"] as? String == "first segment")
        #expect((first["byteRange"] as? [String: Int]) == ["length": 1000, "offset": 720])
        #expect((segments[1]["byteRange"] as? [String: Int]) == ["length": 2000, "offset": 1720])
        let key = try #require(first["key"] as? [String: Any])
        #expect(key["method"] as? String == "AES-128")
        #expect(key["uri"] as? String == "https://cdn.example.com/key")
        #expect((first["map"] as? [String: Any])?["uri"] as? String == "https://cdn.example.com/init.mp4")
        // The date as written on the first segment only; derived (plus 6 s) on the second; none after the
        // discontinuity.
        #expect(segments.map { $0["programDateTime"] as? String } == ["2026-01-02T03:04:05.000Z", nil, nil])
        #expect(segments[1]["programDateTime"] is NSNull)
        #expect(
            segments.map { $0["derivedProgramDateTime"] as? String } == [
                "2026-01-02T03:04:05.000Z", "2026-01-02T03:04:11.000Z", nil,
            ])
        // EXT-X-BITRATE does not apply to the two segments with EXT-X-BYTERANGE (RFC 8216bis 4.4.4.8).
        #expect(segments.map { $0["bitrate"] as? Int } == [nil, nil, 1200])
        #expect(first["bitrate"] is NSNull)
        #expect(segments.map { $0["mediaSequence"] as? Int } == [102, 103, 104])
        #expect(segments.map { $0["discontinuity"] as? Bool } == [false, false, true])
        #expect(segments.map { $0["gap"] as? Bool } == [false, false, true])
    }

    @Test func dumpJSONSeparatesWrittenAndDerivedDates() async throws {
        let result = try #require(try await lint(["--dump-json", "valid/program-date-time-bitrate.m3u8"]))
        #expect(result.status == 0)
        let segments = try #require(try json(result.stdout)["segments"] as? [[String: Any]])
        #expect(
            segments.map { $0["programDateTime"] as? String } == [
                "2026-03-04T05:06:07.250Z", nil, nil, nil, "2026-03-04T07:10:00.500+02:00", nil,
            ])
        #expect(
            segments.map { $0["derivedProgramDateTime"] as? String } == [
                "2026-03-04T05:06:07.250Z", "2026-03-04T05:06:13.250Z", "2026-03-04T05:06:18.750Z", nil,
                "2026-03-04T07:10:00.500+02:00", "2026-03-04T05:10:04.500Z",
            ])
        #expect(segments.allSatisfy { $0["programDateTime"] != nil && $0["derivedProgramDateTime"] != nil })
        #expect(segments.map { $0["bitrate"] as? Int } == [2400, nil, 2400, 2400, nil, 800])
    }

    /// --benchmark (what Scripts/bench/playlist.sh reads): parse+resolve, then the same with every URI read.
    @Test func benchmarkReportsBothTimings() async throws {
        let result = try await #require(
            try lint([
                "--benchmark", "2", "--url", "https://cdn.example.com/a/b.m3u8", "valid/program-date-time-bitrate.m3u8",
            ]))
        #expect(result.status == 0)
        let line = result.out
        #expect(line.contains(": parse+resolve min "), "\(line)")
        #expect(line.contains("; with uris min "), "\(line)")
        #expect(line.hasSuffix("(2 runs, 6 items, 202 URI bytes)\n"), "\(line)")
    }

    @Test func dumpJSONWithParentAndQueryParam() async throws {
        let result = try await #require(
            try lint([
                "--dump-json", "--url", "https://origin.example/a/media.m3u8?token=abc", "--parent",
                "valid/multivariant-define.m3u8", "valid/variables-import.m3u8",
            ]))
        #expect(result.status == 0)
        let segments = try #require(try json(result.stdout)["segments"] as? [[String: Any]])
        #expect(
            segments.map { $0["uri"] as? String } == [
                "https://cdn.example.com/live/seg1.ts?token=abc", "https://cdn.example.com/live/seg2.ts?token=abc",
            ])
    }

    @Test func dumpJSONOfAMultivariantPlaylist() async throws {
        let result = try await #require(
            try lint(["--dump-json", "--url", "https://ex.com/m/master.m3u8", "valid/spec-session-data-steering.m3u8"]))
        let o = try json(result.stdout)
        #expect(o["kind"] as? String == "multivariant")
        #expect(o["version"] as? Int == 7)
        let variants = try #require(o["variants"] as? [[String: Any]])
        #expect(variants.count == 2)
        #expect(variants[0]["bandwidth"] as? Int == 2_200_000)
        #expect(variants[0]["averageBandwidth"] as? Int == 2_000_000)
        #expect(variants[0]["codecs"] as? String == "avc1.640028,mp4a.40.2")
        #expect(variants[0]["resolution"] as? String == "1280x720")
        #expect(variants[0]["uri"] as? String == "https://cdn-a.example.com/720p.m3u8")
        let iframes = try #require(o["iFrameVariants"] as? [[String: Any]])
        #expect(iframes.first?["uri"] as? String == "https://ex.com/m/720p-iframes.m3u8")
        let renditions = try #require(o["renditions"] as? [[String: Any]])
        #expect(renditions.map { $0["type"] as? String } == ["CLOSED-CAPTIONS", "CLOSED-CAPTIONS", "SUBTITLES"])
        #expect(renditions.map { $0["groupId"] as? String } == ["cc", "cc", "subs"])
        #expect(renditions[0]["default"] as? Bool == true)
        #expect(renditions[2]["uri"] as? String == "https://ex.com/m/subs/en.m3u8")
        let data = try #require(o["sessionData"] as? [[String: Any]])
        #expect(data.count == 3)
        #expect(data[0]["uri"] as? String == "https://ex.com/m/lyrics.json")
        let keys = try #require(o["sessionKeys"] as? [[String: Any]])
        #expect(keys.first?["method"] as? String == "SAMPLE-AES")
        let steering = try #require(o["contentSteering"] as? [String: Any])
        #expect(steering["serverUri"] as? String == "https://ex.com/steering?video=00012")
    }

    @Test func iptvJSONAndFormat() async throws {
        let result = try await #require(
            try lint(["--iptv-json", PlaylistFixtures.directory.appendingPathComponent("iptv/channels.m3u").path]))
        #expect(result.status == 0)
        let o = try json(result.stdout)
        #expect((o["header"] as? [String: String])?["url-tvg"] == "http://epg.example.com/guide.xml.gz")
        let channels = try #require(o["channels"] as? [[String: Any]])
        #expect(
            channels.map { $0["name"] as? String } == [
                "News UK HD", "Sport 1, the \"best\" channel", "Movie Classic", "Radio One", "Kids TV",
            ])
        #expect(channels[1]["userAgent"] as? String == "Mozilla/5.0 (Windows NT 10.0; Win64; x64)")
        #expect(channels[1]["referrer"] as? String == "https://www.example.com/")
        #expect((channels[2]["httpHeaders"] as? [String: String])?["X-Token"] == "a\"b")
        #expect((channels[2]["kodiProps"] as? [String: String])?["inputstream"] == "inputstream.adaptive")
        #expect(channels[3]["group"] as? String == "Music")
        #expect(result.err.contains(":14:9: warning: #EXTINF duration is not a number; entry skipped"))
        #expect(channels.map { $0["nameSource"] as? String } == ["title", "title", "title", "title", "title"])

        // As found in the wild: a bare URL line is an entry named after its URL (the JSON says so), attribute names
        // are read in any case and printed in lower case, a quoted Kodi header value loses its quotes.
        let wild = try #require(try await lint(["--iptv-json", PlaylistFixtures.path("iptv/wild.m3u")]))
        #expect(wild.status == 0)
        #expect(wild.err.isEmpty, "\(wild.err)")
        let w = try json(wild.stdout)
        #expect(w["header"] as? [String: String] == ["url-tvg": "http://epg.example.com/guide.xml", "tvg-shift": "+1"])
        let found = try #require(w["channels"] as? [[String: Any]])
        #expect(found.map { $0["name"] as? String } == ["news.m3u8", "Sport HD", "radio", ""])
        #expect(found.map { $0["nameSource"] as? String } == ["url", "title", "url", "none"])
        #expect(
            found[1]["attributes"] as? [String: String] == [
                "tvg-id": "sport.uk", "group-title": "Sports", "tvg-name": "Sport",
            ])
        #expect(found[1]["userAgent"] as? String == "Mozilla/5.0 (X11; Linux x86_64)")
        #expect(found[2]["userAgent"] as? String == "VLC/3.0")

        let formatted = try #require(try await lint(["--format", "quirks/crlf.m3u8"]))
        #expect(formatted.status == 0)
        #expect(
            formatted.out
                == "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n#EXTINF:10.0,\nseg1.ts\n#EXTINF:10.0,\nseg2.ts\n"
                + "#EXT-X-ENDLIST\n")
    }

    /// http:// input fetched from a real HTTP server (Python's http.server on an ephemeral loopback port); a
    /// redirect moves the base URL that URIs resolve against.
    @Test func httpInput() async throws {
        guard let python = EndToEnd.tool("python3"), let tool = EndToEnd.product("m3u8lint") else { return }
        let root = TemporaryFolders.make(prefix: "m3u8lint-http-")
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("valid/moved"), withIntermediateDirectories: true)
        let vod = try Data(contentsOf: URL(fileURLWithPath: PlaylistFixtures.path("valid/byterange-vod.m3u8")))
        try vod.write(to: root.appendingPathComponent("valid/byterange-vod.m3u8"))
        // http.server answers /valid/moved with a redirect to /valid/moved/ and serves index.html there.
        try vod.write(to: root.appendingPathComponent("valid/moved/index.html"))
        // http.server's handler on an ephemeral port that this script prints itself (not http.server's wording).
        let script = """
            import functools, http.server, sys
            handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """
        let server = try await ChildProcess(python, ["-c", script, root.path])
        defer { server.stop() }
        let first = await server.lines(1, within: 20).first ?? ""
        let p = try #require(Int(first), "\(server.stderr)")
        let url = "http://127.0.0.1:\(p)/valid/byterange-vod.m3u8"
        let result = try await EndToEnd.run(tool, ["--dump-json", url])
        #expect(result.status == 0, "\(result.err)")
        let segments = try #require(try json(result.stdout)["segments"] as? [[String: Any]])
        #expect(
            segments.map { $0["uri"] as? String }
                == Array(repeating: "http://127.0.0.1:\(p)/valid/segment.ts", count: 3))
        #expect(segments.map { ($0["byteRange"] as? [String: Int])?["offset"] } == [0, 75232, 157_344])
        let moved = try await EndToEnd.run(tool, ["--dump-json", "http://127.0.0.1:\(p)/valid/moved"])
        let movedSegments = try #require(try json(moved.stdout)["segments"] as? [[String: Any]])
        #expect(movedSegments.first?["uri"] as? String == "http://127.0.0.1:\(p)/valid/moved/segment.ts")
        let lintResult = try await EndToEnd.run(tool, [url])
        #expect(lintResult.status == 0)
        #expect(lintResult.out.hasPrefix("\(url):3:23: warning: target duration 10 is above 6 seconds"))
        let missing = try await EndToEnd.run(tool, ["http://127.0.0.1:\(p)/nope.m3u8"])
        #expect(missing.status == 2)
        #expect(missing.err == "Error: http://127.0.0.1:\(p)/nope.m3u8: 404 Not Found\n")
    }

    /// Python's m3u8 and m3u8lint --dump-json agree on every valid fixture for the fields both model.
    @Test func differentialAgainstPythonM3U8() async throws {
        guard let python = EndToEnd.tool("python3") else { return }
        let script = """
            import json, sys, m3u8
            p = m3u8.loads(open(sys.argv[1], encoding="utf-8").read(), uri=sys.argv[2])
            if p.is_variant:
                out = {"kind": "multivariant", "variants": [
                    {"bandwidth": v.stream_info.bandwidth, "uri": v.absolute_uri, "codecs": v.stream_info.codecs,
                     "resolution": "%dx%d" % v.stream_info.resolution if v.stream_info.resolution else None,
                     "audio": v.stream_info.audio} for v in p.playlists],
                    "renditions": [{"type": m.type, "groupId": m.group_id, "name": m.name, "language": m.language,
                     "default": m.default == "YES", "uri": m.absolute_uri if m.uri else None} for m in p.media],
                    "iFrameVariants": [{"bandwidth": v.iframe_stream_info.bandwidth, "uri": v.absolute_uri}
                     for v in p.iframe_playlists]}
            else:
                out = {"kind": "media", "targetDuration": p.target_duration, "mediaSequence": p.media_sequence or 0,
                    "endList": p.is_endlist, "iFramesOnly": p.is_i_frames_only,
                    "segments": [{"uri": s.absolute_uri, "duration": s.duration, "title": s.title or "",
                     "discontinuity": s.discontinuity,
                     "key": (s.key.method if s.key and s.key.method != "NONE" else None),
                     "keyUri": (s.key.absolute_uri if s.key and s.key.uri else None),
                     "programDateTime": s.program_date_time.timestamp() if s.program_date_time else None,
                     "mediaSequence": s.media_sequence} for s in p.segments]}
            print(json.dumps(out))
            """
        let base = "https://origin.example.com/path/to/index.m3u8"
        var compared = 0
        for path in PlaylistFixtures.files("valid") + PlaylistFixtures.files("quirks") {
            // The models differ by design on EXT-X-DEFINE (Python m3u8 does not substitute variables), on EXT-X-SKIP
            // (Python m3u8 does not advance the media sequence past skipped segments) and on parts after the last
            // segment (Python m3u8 lists them as one more segment; HLSPlaylist keeps them as trailing parts).
            let name = URL(fileURLWithPath: path).lastPathComponent
            if [
                "every-media-tag.m3u8", "variables-import.m3u8", "multivariant-define.m3u8", "ll-hls.m3u8",
            ].contains(name) {
                continue
            }
            let theirs = try await EndToEnd.run(python, ["-c", script, path, base])
            #expect(theirs.status == 0, "python m3u8 failed on \(name): \(theirs.err)")
            let ours = try await #require(try lint(["--dump-json", "--url", base, path]))
            let t = try json(theirs.stdout)
            let o = try json(ours.stdout)
            #expect(o["kind"] as? String == t["kind"] as? String, "\(name)")
            if t["kind"] as? String == "media" {
                #expect(o["targetDuration"] as? Int == t["targetDuration"] as? Int, "\(name)")
                #expect(o["mediaSequence"] as? Int == t["mediaSequence"] as? Int, "\(name)")
                #expect(o["endList"] as? Bool == t["endList"] as? Bool, "\(name)")
                #expect(o["iFramesOnly"] as? Bool == t["iFramesOnly"] as? Bool, "\(name)")
                let os = try #require(o["segments"] as? [[String: Any]])
                let ts = try #require(t["segments"] as? [[String: Any]])
                #expect(os.count == ts.count, "\(name)")
                for (a, b) in zip(os, ts) {
                    #expect(a["uri"] as? String == b["uri"] as? String, "\(name)")
                    #expect(a["duration"] as? Double == b["duration"] as? Double, "\(name)")
                    #expect(a["title"] as? String == b["title"] as? String, "\(name)")
                    #expect(a["discontinuity"] as? Bool == b["discontinuity"] as? Bool, "\(name)")
                    #expect(a["mediaSequence"] as? Int == b["mediaSequence"] as? Int, "\(name)")
                    let key = a["key"] as? [String: Any]
                    #expect(key?["method"] as? String == b["key"] as? String, "\(name)")
                    #expect(key?["uri"] as? String == b["keyUri"] as? String, "\(name)")
                    // The date written on the segment (Python m3u8's program_date_time), not the derived one.
                    let date = (a["programDateTime"] as? String).flatMap { Self.seconds(since1970: $0) }
                    #expect(date == b["programDateTime"] as? Double, "\(name) programDateTime")
                }
            } else {
                let ov = try #require(o["variants"] as? [[String: Any]])
                let tv = try #require(t["variants"] as? [[String: Any]])
                #expect(ov.count == tv.count, "\(name)")
                for (a, b) in zip(ov, tv) {
                    for field in ["bandwidth", "uri", "codecs", "resolution", "audio"] {
                        #expect("\(a[field] ?? "nil")" == "\(b[field] ?? "nil")", "\(name) \(field)")
                    }
                }
                let orr = try #require(o["renditions"] as? [[String: Any]])
                let trr = try #require(t["renditions"] as? [[String: Any]])
                #expect(orr.count == trr.count, "\(name)")
                for (a, b) in zip(orr, trr) {
                    for field in ["type", "groupId", "name", "language", "default", "uri"] {
                        #expect("\(a[field] ?? "nil")" == "\(b[field] ?? "nil")", "\(name) \(field)")
                    }
                }
                let oi = try #require(o["iFrameVariants"] as? [[String: Any]])
                let ti = try #require(t["iFrameVariants"] as? [[String: Any]])
                #expect(oi.map { $0["uri"] as? String } == ti.map { $0["uri"] as? String }, "\(name)")
            }
            compared += 1
        }
        #expect(compared >= 16)
    }
}

/// m3u8lint's http client (the toolkit's own, HLSDownload's) against a scripted loopback origin: statuses in
/// words, which answers are retried, redirects, a refused port and a server that never answers, with the time each
/// failure takes.
@Suite struct M3U8LintFetchTests {
    static let playlist = Array("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nseg.ts\n#EXT-X-ENDLIST\n".utf8)

    static func response(_ status: String, _ body: [UInt8] = [], extra: String = "") -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\n\(extra)\r\n".utf8) + body
    }

    /// Runs m3u8lint and returns its result and the seconds it took.
    func lint(_ arguments: [String]) async throws -> (result: ProcessResult, seconds: Double)? {
        guard let tool = EndToEnd.product("m3u8lint") else { return nil }
        let start = ContinuousClock.now
        let result = try await EndToEnd.run(tool, arguments)
        let elapsed = ContinuousClock.now - start
        return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    @Test func notFoundNamesTheURLAndTheStatusAndIsAskedOnce() async throws {
        let origin = try ScriptedOrigin { _ in Self.response("404 Not Found") }
        let url = origin.url("/missing.m3u8")
        let (result, seconds) = try #require(try await lint([url]))
        #expect(result.status == 2)
        #expect(result.out.isEmpty)
        #expect(result.err == "Error: \(url): 404 Not Found\n")
        #expect(origin.paths.withLock { $0 } == ["/missing.m3u8"])
        #expect(seconds < 2, "took \(seconds) s")
        // The same for --dump-json and --iptv-json, which fetch the same way; a 403 is not retried either.
        let forbidden = try ScriptedOrigin { _ in Self.response("403 Forbidden") }
        let dump = try #require(try await lint(["--iptv-json", forbidden.url("/list.m3u")]))
        #expect(dump.result.err == "Error: \(forbidden.url("/list.m3u")): 403 Forbidden\n")
        #expect(forbidden.paths.withLock { $0 }.count == 1)
    }

    /// 503, 429 and 408 may pass on a later try: each is retried (Retry-After honoured), within the deadline.
    @Test func busyAnswersAreRetried() async throws {
        let asked = LockedValue(0)
        let origin = try ScriptedOrigin { _ in
            switch asked.withLock({ n -> Int in
                n += 1
                return n
            }) {
            case 1: Self.response("503 Service Unavailable")
            case 2: Self.response("429 Too Many Requests", extra: "Retry-After: 0\r\n")
            default: Self.response("200 OK", Self.playlist)
            }
        }
        let url = origin.url("/live.m3u8")
        let (result, _) = try #require(try await lint(["--dump-json", url]))
        #expect(result.status == 0, "\(result.err)")
        #expect(origin.paths.withLock { $0 }.count == 3)
        let always = try ScriptedOrigin { _ in Self.response("503 Service Unavailable") }
        let (failed, _) = try #require(try await lint([always.url("/x.m3u8")]))
        // Each retry is shown on stderr as it happens, then the last answer.
        let lines = failed.err.split(separator: "\n")
        #expect(lines.count == 3, "\(failed.err)")
        #expect(
            lines.dropLast().allSatisfy {
                $0.hasPrefix("retrying in ") && $0.hasSuffix(": 503 Service Unavailable (\(always.url("/x.m3u8")))")
            })
        #expect(lines.last == "Error: \(always.url("/x.m3u8")): 503 Service Unavailable")
        #expect(always.paths.withLock { $0 }.count == 3)
        // A Retry-After longer than the deadline left is not waited for: the answer is reported at once.
        let later = try ScriptedOrigin { _ in Self.response("429 Too Many Requests", extra: "Retry-After: 3600\r\n") }
        let (limited, seconds) = try #require(try await lint([later.url("/x.m3u8")]))
        // (The status table names 429 since the wire layer took it over.)
        #expect(limited.err == "Error: \(later.url("/x.m3u8")): 429 Too Many Requests\n")
        #expect(later.paths.withLock { $0 }.count == 1)
        #expect(seconds < 2, "took \(seconds) s")
    }

    /// Redirects are followed, and the playlist's URIs resolve against where it ended up; more than five fail, and
    /// a redirect to a missing playlist names both URLs.
    @Test func redirectsAreFollowedAndBounded() async throws {
        let origin = try ScriptedOrigin { path in
            switch path {
            case "/start.m3u8": Self.response("302 Found", extra: "Location: /moved/here/index.m3u8\r\n")
            case "/moved/here/index.m3u8": Self.response("200 OK", Self.playlist)
            case "/gone.m3u8": Self.response("301 Moved Permanently", extra: "Location: /nowhere.m3u8\r\n")
            case "/file.m3u8": Self.response("302 Found", extra: "Location: file:///etc/passwd\r\n")
            default:
                if let n = Int(path.dropFirst("/loop".count)), path.hasPrefix("/loop") {
                    Self.response("302 Found", extra: "Location: /loop\(n + 1)\r\n")
                } else {
                    Self.response("404 Not Found")
                }
            }
        }
        let (moved, _) = try #require(try await lint(["--dump-json", origin.url("/start.m3u8")]))
        #expect(moved.status == 0, "\(moved.err)")
        let object = try #require(try JSONSerialization.jsonObject(with: moved.stdout) as? [String: Any])
        let segments = try #require(object["segments"] as? [[String: Any]])
        #expect(segments.first?["uri"] as? String == origin.url("/moved/here/seg.ts"))

        let (gone, _) = try #require(try await lint([origin.url("/gone.m3u8")]))
        #expect(gone.status == 2)
        #expect(
            gone.err == "Error: \(origin.url("/gone.m3u8")): 404 Not Found (at \(origin.url("/nowhere.m3u8")))\n")

        let (loop, _) = try #require(try await lint([origin.url("/loop0")]))
        #expect(loop.status == 2)
        #expect(
            loop.err
                == "Error: \(origin.url("/loop0")): more than 5 redirects, or a redirect to a URL that is not http(s)\n"
        )
        #expect(origin.paths.withLock { $0 }.filter { $0.hasPrefix("/loop") } == (0...5).map { "/loop\($0)" })

        let (file, _) = try #require(try await lint([origin.url("/file.m3u8")]))
        #expect(file.status == 2)
        #expect(file.err.hasPrefix("Error: \(origin.url("/file.m3u8")): more than 5 redirects, or a redirect"))
    }

    /// Nothing listens: the failure is reported at once (no retry, no waiting for a timeout).
    @Test func refusedPortFailsWithinASecond() async throws {
        let port = ScriptedOrigin.unusedPort()
        let url = "http://127.0.0.1:\(port)/index.m3u8"
        let (result, seconds) = try #require(try await lint([url]))
        #expect(result.status == 2)
        #expect(
            result.err.hasPrefix("Error: \(url): cannot connect to 127.0.0.1:\(port): ECONNREFUSED"), "\(result.err)")
        #expect(seconds < 1, "took \(seconds) s")
    }

    /// A server that accepts the connection and never answers: the fetch gives up when --timeout has passed, and
    /// by default after 8 s (the toolkit's first-fetch deadline).
    @Test func silentServerFailsWithinTheTimeout() async throws {
        let origin = try ScriptedOrigin { _ in nil }
        let url = origin.url("/silent.m3u8")
        let (result, seconds) = try #require(try await lint(["--timeout", "1", url]))
        #expect(result.status == 2)
        #expect(result.err == "Error: \(url): no complete answer within 1 s (--timeout)\n")
        #expect(seconds >= 1 && seconds < 2, "took \(seconds) s")
        let (byDefault, defaultSeconds) = try #require(try await lint([url]))
        #expect(byDefault.err == "Error: \(url): no complete answer within 8 s (--timeout)\n")
        #expect(defaultSeconds >= 8 && defaultSeconds < 9, "took \(defaultSeconds) s")
        let (bad, _) = try #require(try await lint(["--timeout", "0", url]))
        #expect(bad.status == 64)
        #expect(bad.err.hasPrefix("Error: '--timeout' needs a number of seconds above 0, not '0'\n"))
    }
}

/// A loopback origin whose answer to each request path is raw bytes (sent, then the connection closed) or nil:
/// the connection is held open and never answered. One thread per connection.
final class ScriptedOrigin: Sendable {
    let port: UInt16
    let paths = LockedValue<[String]>([])
    /// Each request's head (request line and fields), in order.
    let heads = LockedValue<[String]>([])
    private let listener: Int32
    private let held = LockedValue<[Int32]>([])

    init(_ reply: @escaping @Sendable (String) -> [UInt8]?) throws {
        let fd = LoopbackTCP.listener()
        try #require(fd >= 0)
        port = LoopbackTCP.localPort(fd)
        listener = fd
        LoopbackTCP.serveConnections(on: fd) { [self] client in serve(client, reply) }
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    private func serve(_ client: Int32, _ reply: @Sendable (String) -> [UInt8]?) {
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while head.firstRange(of: Array("\r\n\r\n".utf8)) == nil {
            let n = recv(client, &buffer, buffer.count, 0)
            if n <= 0 {
                close(client)
                return
            }
            head += buffer[0..<n]
        }
        let path = String(decoding: head, as: UTF8.self).split(separator: " ").dropFirst().first.map(String.init) ?? ""
        paths.withLock { $0.append(path) }
        heads.withLock { $0.append(String(decoding: head, as: UTF8.self)) }
        guard let bytes = reply(path) else {
            held.withLock { $0.append(client) }
            return
        }
        _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Platform.sendFlags) }
        close(client)
    }

    /// A loopback port nothing listens on: one the system just handed out and this process let go.
    static func unusedPort() -> UInt16 { LoopbackTCP.unusedPort() }

    deinit {
        LoopbackTCP.stopServing(listener)
        for fd in held.withLock({ $0 }) { close(fd) }
    }
}
