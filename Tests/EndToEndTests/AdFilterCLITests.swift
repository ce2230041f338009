// `tsplayer adfilter` end to end: the built binary on playlists from files and stdin, the live state kept in a
// directory between invocations, and `m3u8lint --previous` on each successive pair of outputs.
import Foundation
import Testing

@Suite(.temporaryFolders) struct AdFilterCLITests {
    static let url = "https://origin.example.com/live/index.m3u8"

    /// A live window of six 4 s segments from `first`, where 8...10 are an ad break marked by a bare CUE-OUT.
    static func poll(_ first: Int) -> String {
        MediaPlaylistText.window(
            first: first, count: 6, targetDuration: 4, duration: "4.000", uri: { "seg\($0).ts" },
            tags: { $0 == 8 ? "#EXT-X-CUE-OUT:12\n" : "" }
        ).text
    }

    func adfilter(_ arguments: [String], input: String? = nil) async throws -> ProcessResult {
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        return try await EndToEnd.run(tsplayer, ["adfilter"] + arguments, input: input.map { Data($0.utf8) })
    }

    @Test func vodFromStdinIsCleanedExactly() async throws {
        let input = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:4
            #EXTINF:4.000,
            c0.ts
            #EXT-X-CUE-OUT:8
            #EXTINF:4.000,
            a0.ts
            #EXTINF:4.000,
            a1.ts
            #EXT-X-CUE-IN
            #EXTINF:4.000,
            c1.ts
            #EXT-X-ENDLIST

            """
        let result = try await adfilter(["-", "--url", Self.url], input: input)
        #expect(result.status == 0, "\(result.err)")
        #expect(
            result.out == """
                #EXTM3U
                #EXT-X-VERSION:3
                #EXT-X-TARGETDURATION:4
                #EXTINF:4.000,
                c0.ts
                #EXT-X-DISCONTINUITY
                #EXTINF:4.000,
                c1.ts
                #EXT-X-ENDLIST

                """)
        #expect(result.err.isEmpty)
    }

    @Test func livePollsWithStateAreLintCleanPairwise() async throws {
        let lint = try #require(EndToEnd.product("m3u8lint"))
        let directory = TemporaryFolders.make(prefix: "adfilter-")
        let state = directory.appendingPathComponent("state").path
        var previousPath: String?
        var outputs: [String] = []
        for first in [4, 6, 8, 9, 10] {
            let result = try await adfilter(
                ["-", "--url", Self.url, "--mode", "live", "--state", state], input: Self.poll(first))
            #expect(result.status == 0, "\(result.err)")
            outputs.append(result.out)
            let path = directory.appendingPathComponent("out-\(first).m3u8").path
            try Data(result.out.utf8).write(to: URL(fileURLWithPath: path))
            var arguments = ["--url", Self.url, path]
            if let previousPath { arguments = ["--previous", previousPath] + arguments }
            let linted = try await EndToEnd.run(lint, arguments)
            #expect(linted.status == 0, "poll \(first): \(linted.out)\(linted.err)\n\(result.out)")
            previousPath = path
        }
        // The poll starting at 9 no longer holds the CUE-OUT; the state still knows 9 and 10 are ads.
        #expect(outputs[3].contains("slate/9.ts\n#EXTINF:4.000,\nslate/10.ts\n#EXTINF:4.000,\nseg11.ts"))
        #expect(outputs[4].hasPrefix("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXT-X-MEDIA-SEQUENCE:10\n"))
        #expect(outputs[4].contains("slate/10.ts"))
        #expect(!outputs.joined().contains("CUE-OUT"))
        // Without the state the same poll has no marker, and nothing is an ad.
        let stateless = try await adfilter(["-", "--url", Self.url, "--mode", "live"], input: Self.poll(9))
        #expect(!stateless.out.contains("slate/"))
    }

    @Test func explainJSONListsEverySegment() async throws {
        let result = try await adfilter(
            ["-", "--url", Self.url, "--mode", "live", "--explain", "--json"], input: Self.poll(6))
        #expect(result.status == 0)
        let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        let segments = try #require(object?["segments"] as? [[String: Any]])
        #expect(segments.count == 6)
        #expect(segments.map { $0["ad"] as? Bool } == [false, false, true, true, true, false])
        #expect(segments[2]["rule"] as? String == "EXT-X-CUE-OUT")
        #expect(segments[2]["uri"] as? String == "https://origin.example.com/live/seg8.ts")
        #expect((segments[2]["reason"] as? String)?.contains("EXT-X-CUE-OUT") == true)
        #expect(object?["playlist"] == nil)
    }

    @Test func explainWritesDecisionsOnStderr() async throws {
        let result = try await adfilter(["-", "--url", Self.url, "--mode", "live", "--explain"], input: Self.poll(6))
        #expect(result.status == 0)
        #expect(result.out.contains("slate/8.ts"))
        let lines = result.err.split(separator: "\n")
        #expect(lines.count == 6)
        #expect(lines[0] == "6 content https://origin.example.com/live/seg6.ts")
        #expect(lines[2].hasPrefix("8 ad      https://origin.example.com/live/seg8.ts [EXT-X-CUE-OUT break cue-out-8]"))
    }

    /// Usage errors exit 64 with the toolkit's short usage; input that cannot be read, or is not a media playlist,
    /// exits 2 (before the CLI toolkit, 1).
    @Test func usageErrorsExit64AndUnreadableInputExits2() async throws {
        let missingURL = try await adfilter(["-"], input: Self.poll(0))
        #expect(missingURL.status == 64)
        #expect(
            missingURL.err
                == "Error: missing --url\nUSAGE: tsplayer adfilter <file> --url <url> [--mode <mode>] [--state <dir>] "
                + "[--explain] [--json]\n  See 'tsplayer adfilter --help' for more information.\n")
        let badMode = try await adfilter(["-", "--url", Self.url, "--mode", "dvr"], input: Self.poll(0))
        #expect(badMode.status == 64)
        let fileURL = try await adfilter(["-", "--url", "file:///etc/passwd"], input: Self.poll(0))
        #expect(fileURL.status == 64)
        let missing = try await adfilter(["/nonexistent/playlist.m3u8", "--url", Self.url])
        #expect(missing.status == 2)
        #expect(missing.err == "Error: cannot read '/nonexistent/playlist.m3u8'\n")
        let multivariant = try await adfilter(
            ["-", "--url", Self.url], input: "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000\nv.m3u8\n")
        #expect(multivariant.status == 2)
        let help = try await adfilter(["--help"])
        #expect(help.status == 0)
        #expect(help.out.hasPrefix("OVERVIEW: Remove ads from one HLS media playlist, offline.\n"))
    }
}
