// The command-line behaviour the three tools share through the CLI toolkit, run on the built binaries: `--opt=value`
// and `--`, "did you mean", exit 64 with the short usage, the expected form of a value that does not parse, one
// version, and the door checks (a playlist reader given something else, tsinspect given a playlist).
import Foundation
import Testing

@Suite(.temporaryFolders) struct CLIToolkitEndToEndTests {
    static let playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.000,\nseg1.ts\n#EXTINF:4.000,\nseg2.ts\n"

    /// A fresh folder holding `-dash.m3u8` (a playlist whose name starts with a dash), `plain.m3u8` (the same),
    /// `binary.ts` (the built-in sample) and `cut.ts`; removed when the test ends.
    func folder() throws -> URL {
        let folder = TemporaryFolders.make(prefix: "cli-e2e-")
        try Data(Self.playlist.utf8).write(to: folder.appendingPathComponent("-dash.m3u8"))
        try Data(Self.playlist.utf8).write(to: folder.appendingPathComponent("plain.m3u8"))
        let sample = EndToEnd.repositoryRoot.appendingPathComponent("Tools/tsplayer/Resources/sample.ts")
        try FileManager.default.copyItem(at: sample, to: folder.appendingPathComponent("binary.ts"))
        try FileManager.default.copyItem(at: sample, to: folder.appendingPathComponent("-dash.ts"))
        return folder
    }

    func tools() throws -> (tsinspect: URL, m3u8lint: URL, tsplayer: URL) {
        (
            try #require(EndToEnd.product("tsinspect")), try #require(EndToEnd.product("m3u8lint")),
            try #require(EndToEnd.product("tsplayer"))
        )
    }

    /// Whether `bytes` are only printable ASCII and line feeds: nothing binary reached the terminal.
    static func printable(_ bytes: Data) -> Bool { bytes.allSatisfy { $0 == 0x0A || (0x20...0x7E).contains($0) } }

    @Test func optionValuesAfterAnEqualsSignInEveryTool() async throws {
        let (tsinspect, m3u8lint, tsplayer) = try tools()
        let spaced = try await EndToEnd.run(tsinspect, ["--make-slate", "1", "--start-pts", "90000"])
        let equals = try await EndToEnd.run(tsinspect, ["--make-slate=1", "--start-pts=90000"])
        #expect(spaced.status == 0 && equals.status == 0)
        #expect(!spaced.stdout.isEmpty && spaced.stdout == equals.stdout)

        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = "https://origin.example/live/index.m3u8"
        let lintSpaced = try await EndToEnd.run(
            m3u8lint, ["--dump-json", "--url", url, "plain.m3u8"], currentDirectory: dir)
        let lintEquals = try await EndToEnd.run(
            m3u8lint, ["--dump-json", "--url=\(url)", "plain.m3u8"], currentDirectory: dir)
        #expect(lintSpaced.status == 0 && lintSpaced.out.contains("https://origin.example/live/seg1.ts"))
        #expect(lintSpaced.out == lintEquals.out)

        let filterSpaced = try await EndToEnd.run(
            tsplayer, ["adfilter", "plain.m3u8", "--url", url, "--mode", "vod"], currentDirectory: dir)
        let filterEquals = try await EndToEnd.run(
            tsplayer, ["adfilter", "plain.m3u8", "--url=\(url)", "--mode=vod"], currentDirectory: dir)
        #expect(filterSpaced.status == 0 && filterSpaced.out.contains("seg2.ts"))
        #expect(filterSpaced.out == filterEquals.out)
        // A flag takes no value.
        let flagged = try await EndToEnd.run(tsplayer, ["adfilter", "plain.m3u8", "--url", url, "--json=yes"])
        #expect(flagged.status == 64 && flagged.err.hasPrefix("Error: '--json' takes no value\nUSAGE:"))
    }

    @Test func doubleDashEndsTheOptions() async throws {
        let (tsinspect, m3u8lint, tsplayer) = try tools()
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let inspected = try await EndToEnd.run(tsinspect, ["--", "-dash.ts"], currentDirectory: dir)
        #expect(inspected.status == 0 && inspected.out.hasPrefix("File:          -dash.ts\n"), "\(inspected.err)")
        let withoutDashes = try await EndToEnd.run(tsinspect, ["-dash.ts"], currentDirectory: dir)
        #expect(withoutDashes.status == 64 && withoutDashes.err.hasPrefix("Error: unknown option '-dash.ts'\n"))

        let linted = try await EndToEnd.run(m3u8lint, ["--", "-dash.m3u8"], currentDirectory: dir)
        #expect(linted.status == 1 && linted.err.isEmpty, "\(linted.err)")
        // A live playlist: first the info that the live-update rules were not checked, then the file's own error.
        let lines = linted.out.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("-dash.m3u8:1:1: info: a live playlist") == true, "\(linted.out)")
        #expect(lines.first?.hasSuffix("[LIVE-UNCHECKED] (6.2.1)") == true, "\(linted.out)")
        #expect(
            lines.dropFirst().first?.hasPrefix(
                "-dash.m3u8:3:1: error: a decimal EXTINF duration (line 3) needs EXT-X-VERSION 3") == true,
            "\(linted.out)")

        let filtered = try await EndToEnd.run(
            tsplayer, ["adfilter", "--url", "https://o.example/a.m3u8", "--", "-dash.m3u8"], currentDirectory: dir)
        #expect(filtered.status == 0 && filtered.out.contains("seg1.ts"), "\(filtered.err)")
    }

    @Test func unknownOptionsGetADidYouMean() async throws {
        let (tsinspect, m3u8lint, tsplayer) = try tools()
        let cases: [(URL, [String], String)] = [
            (
                tsinspect, ["--jsno", "a.ts"],
                "Error: unknown option '--jsno'; did you mean '--json'?\nUSAGE: tsinspect "
            ),
            (
                m3u8lint, ["--strcit", "a.m3u8"],
                "Error: unknown option '--strcit'; did you mean '--strict'?\nUSAGE: m3u8lint "
            ),
            (
                tsplayer, ["serve", "--prot", "80"],
                "Error: unknown option '--prot'; did you mean '--port'?\nUSAGE: tsplayer serve "
            ),
            (
                tsplayer, ["download", "http://127.0.0.1:1/x.m3u8", "--concurency", "2"],
                "Error: unknown option '--concurency'; did you mean '--concurrency'?\nUSAGE: tsplayer download "
            ),
            (tsplayer, ["serv"], "Error: unknown subcommand 'serv'; did you mean 'serve'?\nUSAGE: tsplayer "),
            (tsplayer, ["tasks", "lst"], "Error: unknown action 'lst'; did you mean 'list'?\nUSAGE: tsplayer tasks "),
        ]
        for (tool, arguments, prefix) in cases {
            let result = try await EndToEnd.run(tool, arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.err.hasPrefix(prefix), "\(arguments): \(result.err)")
            #expect(result.out.isEmpty)
        }
    }

    @Test func usageMistakesExit64WithTheShortUsageInEveryTool() async throws {
        let (tsinspect, m3u8lint, tsplayer) = try tools()
        let cases: [(URL, [String], String)] = [
            (tsinspect, [], "tsinspect"), (tsinspect, ["--pts"], "tsinspect"),
            (m3u8lint, [], "m3u8lint"), (m3u8lint, ["--previous"], "m3u8lint"),
            (tsplayer, [], "tsplayer"), (tsplayer, ["serve", "--port"], "tsplayer serve"),
            (tsplayer, ["proxy"], "tsplayer proxy"),
            (tsplayer, ["cache-proxy", "--list", "x"], "tsplayer cache-proxy"),
            (tsplayer, ["download"], "tsplayer download"), (tsplayer, ["tasks", "pause"], "tsplayer tasks"),
            (tsplayer, ["adfilter", "-"], "tsplayer adfilter"),
        ]
        for (tool, arguments, name) in cases {
            let result = try await EndToEnd.run(tool, arguments)
            #expect(result.status == 64, "\(name) \(arguments)")
            let lines = result.err.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.first?.hasPrefix("Error: ") == true, "\(arguments): \(result.err)")
            #expect(lines.dropFirst().first?.hasPrefix("USAGE: \(name)") == true, "\(arguments): \(result.err)")
            #expect(result.err.hasSuffix("\n  See '\(name) --help' for more information.\n"), "\(result.err)")
            // Short: the usage, not the whole help.
            #expect(!result.err.contains("OPTIONS:") && result.out.isEmpty, "\(arguments)")
        }
    }

    @Test func aValueThatIsNotANumberIsToldTheExpectedForm() async throws {
        let (tsinspect, m3u8lint, tsplayer) = try tools()
        let cases: [(URL, [String], String)] = [
            (
                m3u8lint, ["--timeout", "abc", "x.m3u8"],
                "--timeout expects seconds as a number, e.g. --timeout 10; got 'abc'"
            ),
            (
                m3u8lint, ["--timeout=ten", "x.m3u8"],
                "--timeout expects seconds as a number, e.g. --timeout 10; got 'ten'"
            ),
            (
                tsinspect, ["--make-slate", "two"],
                "--make-slate expects a duration in seconds, e.g. --make-slate 2; got 'two'"
            ),
            (
                tsplayer, ["serve", "--segment-duration", "six"],
                "--segment-duration expects seconds as a number, e.g. --segment-duration 6; got 'six'"
            ),
            (
                tsplayer, ["download", "http://127.0.0.1:1/x.m3u8", "--concurrency", "many"],
                "--concurrency expects a whole number from 1 to 64, e.g. --concurrency 8; got 'many'"
            ),
            (
                tsplayer, ["download", "http://127.0.0.1:1/x.m3u8", "--stall-timeout", "1s"],
                "--stall-timeout expects seconds as a number, e.g. --stall-timeout 20; got '1s'"
            ),
            (
                tsplayer, ["proxy", "http://127.0.0.1:1/x.m3u8", "--port", "http"],
                "invalid port 'http': --port expects a number from 0 to 65535, e.g. --port 8080"
            ),
        ]
        for (tool, arguments, message) in cases {
            let result = try await EndToEnd.run(tool, arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.err.hasPrefix("Error: \(message)\nUSAGE: "), "\(arguments): \(result.err)")
        }
        // A number out of range keeps its own message.
        let range = try await EndToEnd.run(tsplayer, ["serve", "--segment-duration", "90"])
        #expect(range.status == 64 && range.err.hasPrefix("Error: segment duration must be between 1 and 60 seconds"))
    }

    @Test func oneVersionPrintedTheSameWayByEveryTool() async throws {
        let (tsinspect, m3u8lint, tsplayer) = try tools()
        let outputs = try [
            await EndToEnd.run(tsinspect, ["--version"]), await EndToEnd.run(m3u8lint, ["--version"]),
            await EndToEnd.run(tsplayer, ["--version"]), await EndToEnd.run(tsplayer, ["serve", "--version"]),
            await EndToEnd.run(tsplayer, ["download", "--version"]),
        ]
        for output in outputs {
            #expect(output.status == 0 && output.err.isEmpty)
            #expect(output.out == outputs[0].out)
        }
        let parts = outputs[0].out.dropLast().split(separator: ".")
        #expect(outputs[0].out.hasSuffix("\n") && parts.count == 3 && parts.allSatisfy { Int($0) != nil })
    }

    @Test func playlistReadersRefuseWhatIsNotAPlaylistWithOneError() async throws {
        let (tsinspect, m3u8lint, tsplayer) = try tools()
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let start = "(starts with \"G@\\x11\\x10\\x00B\\xf0%\\x00\\x01\\xc1\\x00\\x00\\xff\\x01\\xff\")"
        let linted = try await EndToEnd.run(m3u8lint, ["binary.ts"], currentDirectory: dir)
        #expect(linted.status == 2 && linted.out.isEmpty)
        #expect(linted.err == "Error: binary.ts: not an HLS playlist \(start)\n")
        let filtered = try await EndToEnd.run(
            tsplayer, ["adfilter", "binary.ts", "--url", "https://o.example/a.m3u8"], currentDirectory: dir)
        #expect(filtered.status == 2 && filtered.out.isEmpty)
        #expect(filtered.err == "Error: binary.ts: not an HLS playlist \(start)\n")
        let piped = try await EndToEnd.run(
            tsplayer, ["adfilter", "-", "--url", "https://o.example/a.m3u8"], input: Data([0, 1, 2, 0xFF, 0x1B]))
        #expect(
            piped.status == 2
                && piped.err == "Error: -: not an HLS playlist (starts with \"\\x00\\x01\\x02\\xff\\x1b\")\n")
        let empty = try await EndToEnd.run(m3u8lint, ["-"], input: Data())
        #expect(empty.status == 2 && empty.err == "Error: <stdin>: not an HLS playlist (starts with \"\")\n")
        for result in [linted, filtered, piped, empty] { #expect(Self.printable(result.stderr)) }
        // A playlist with a broken header is still linted: the header rule reports it.
        let headless = try await EndToEnd.run(m3u8lint, ["-"], input: Data("#EXT-X-VERSION:3\n#EXTINF:4,\na.ts\n".utf8))
        #expect(headless.status == 1 && headless.out.hasPrefix("<stdin>:1:1: error: the first line must be #EXTM3U"))

        // tsinspect says that a playlist is one.
        let inspected = try await EndToEnd.run(tsinspect, ["plain.m3u8"], currentDirectory: dir)
        #expect(inspected.status == 2)
        #expect(
            inspected.err
                == "Error: plain.m3u8 is an HLS playlist, not an MPEG-TS stream: check it with m3u8lint, or fetch its "
                + "media with tsplayer download\n")
        let probed = try await EndToEnd.run(tsinspect, ["--probe", "plain.m3u8"], currentDirectory: dir)
        #expect(probed.status == 2 && probed.err == inspected.err)
    }

    @Test func theProxysFirstFetchChecksTheDoorAndNamesAllowPrivate() async throws {
        let (_, _, tsplayer) = try tools()
        let dir = try folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        guard let nginx = try await NginxOrigin(root: dir) else { return }
        defer { nginx.stop() }
        let started = Date()
        let binary = try await EndToEnd.run(tsplayer, ["proxy", nginx.url("binary.ts"), "--allow-private"])
        #expect(binary.status == 2 && binary.out.isEmpty)
        #expect(
            binary.err
                == "Error: \(nginx.url("binary.ts")): not an HLS playlist (starts with \"G@\\x11\\x10\\x00B\\xf0%\\x00"
                + "\\x01\\xc1\\x00\\x00\\xff\\x01\\xff\")\n")
        #expect(Date().timeIntervalSince(started) < 10)
        // A refused private upstream: the proxy still serves (and answers 502), and says what to pass.
        let strict = try await ProxyTestProcess(tsplayer, ["proxy", nginx.url("plain.m3u8")])
        defer { strict.stop() }
        #expect(strict.firstLine.hasSuffix("/master.m3u8"))
        let deadline = Date().addingTimeInterval(5)
        while !strict.stderr.contains("\n"), Date() < deadline { await suspend(0.02) }
        #expect(strict.stderr.hasPrefix("warning: \(nginx.url("plain.m3u8")): "), "\(strict.stderr)")
        #expect(strict.stderr.contains("pass --allow-private to allow upstreams on loopback and private addresses"))
        #expect(!strict.stderr.contains("addressNotAllowed") && !strict.stderr.contains("ProxyError"))
    }

    @Test func errorsSayWhatFailedWithoutTypeNamesOrCodes() async throws {
        let (_, _, tsplayer) = try tools()
        let store = TemporaryFolders.make(prefix: "cli-store-")
        let file = store.appendingPathComponent("tasks.json")
        let hint = "; repair it, or move it away to start an empty store\n"
        try Data("{\"tasks\": [1,2".utf8).write(to: file)
        let corrupt = try await EndToEnd.run(tsplayer, ["tasks", "--store", store.path])
        #expect(corrupt.status == 1)
        #expect(corrupt.err == "Error: \(file.path): the task store cannot be read (it is not valid JSON)" + hint)
        try Data("{\"version\":1,\"tasks\":[]}".utf8).write(to: file)
        let incomplete = try await EndToEnd.run(tsplayer, ["tasks", "--store", store.path])
        #expect(incomplete.err == "Error: \(file.path): the task store cannot be read (nextOrder is missing)" + hint)
        try FileManager.default.removeItem(at: file)
        let unknown = try await EndToEnd.run(tsplayer, ["tasks", "pause", "nosuch", "--store", store.path])
        #expect(unknown.status == 1)
        #expect(
            unknown.err
                == "Error: no task with id 'nosuch'; 'tsplayer tasks list' shows the tasks of the store (--store)\n")
        for result in [corrupt, incomplete, unknown] {
            for word in ["DecodingError", "invalidURL", "fileSystem", "Error(", "CodingKeys"] {
                #expect(!result.err.contains(word), "\(result.err)")
            }
        }
    }
}
