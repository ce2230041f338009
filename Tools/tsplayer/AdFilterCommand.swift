import Foundation
import HLSAdFilter
import HLSPlaylist

/// `tsplayer adfilter`: offline ad filtering of one media playlist, as if fetched from a URL.
enum AdFilterCommand {
    static let usage = """
        OVERVIEW: Remove ads from one HLS media playlist, offline.

        Reads the playlist as if it had been fetched from <url> and prints the cleaned playlist on stdout. VOD: ad
        segments are removed. Live: each ad segment becomes a slate entry 'slate/<msn>.ts' of the same duration;
        with --state the filter remembers its decisions between invocations, so successive polls can be cleaned
        one call at a time.

        USAGE: tsplayer adfilter <file> --url <url> [--mode <mode>] [--state <dir>] [--explain] [--json]

        ARGUMENTS:
          <file>                  The media playlist ('-' for stdin).

        OPTIONS:
          --url <url>             The URL the playlist was fetched from (relative URIs resolve against it).
          --mode <mode>           vod or live (default: live unless the playlist has EXT-X-ENDLIST).
          --state <dir>           Keep the live filter's state in this directory between invocations.
          --explain               Print each segment's decision on stderr.
          --json                  Print JSON on stdout; with --explain only the decisions:
                                  {"segments":[{"uri","ad","reason","rule"}]}.
          -h, --help              Show help information.

        """

    static let subcommand = Subcommand(
        name: "adfilter", abstract: "Remove ads from one HLS media playlist, offline.", usage: usage, run: run)

    static let stateFileName = "adfilter-state.txt"

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        do {
            parsed = try ParsedArguments(
                arguments, valued: ["--url", "--mode", "--state"], flags: ["--explain", "--json", "-h", "--help"])
        } catch {
            Console.usageError(error.message, usage: usage)
        }
        if parsed.flags.contains("-h") || parsed.flags.contains("--help") {
            print(usage, terminator: "")
            return 0
        }
        guard parsed.positionals.count == 1, let file = parsed.positionals.first else {
            Console.usageError(
                parsed.positionals.isEmpty ? "missing <file>" : "expected one <file>", usage: usage)
        }
        guard let url = parsed.value("--url") else { Console.usageError("missing --url", usage: usage) }
        let reference = URIReference(url)
        guard let scheme = reference.scheme?.lowercased(), scheme == "http" || scheme == "https",
            reference.authority?.isEmpty == false
        else {
            Console.usageError("--url must be an absolute http or https URL", usage: usage)
        }
        let mode = parsed.value("--mode")
        if let mode, mode != "vod", mode != "live" {
            Console.usageError("--mode must be 'vod' or 'live'", usage: usage)
        }
        let explain = parsed.flags.contains("--explain")
        let json = parsed.flags.contains("--json")

        let bytes: [UInt8]
        if file == "-" {
            bytes = Array(FileHandle.standardInput.readDataToEndOfFile())
        } else {
            guard let data = FileManager.default.contents(atPath: file) else {
                Console.error("cannot read '\(file)'")
                return 1
            }
            bytes = Array(data)
        }
        let playlist: Playlist
        do {
            playlist = try Playlist(bytes: bytes)
        } catch {
            Console.error("\(file): \(error)")
            return 1
        }
        guard playlist.kind == .media else {
            Console.error("\(file) is not a media playlist")
            return 1
        }
        let live = mode.map { $0 == "live" } ?? !playlist.media(url: url).endList

        let result: AdFilterResult
        if live {
            var filter = LiveAdFilter()
            var statePath: String?
            if let directory = parsed.value("--state") {
                do {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                } catch {
                    Console.error("cannot create state directory '\(directory)': \(error.localizedDescription)")
                    return 1
                }
                let path = (directory as NSString).appendingPathComponent(stateFileName)
                statePath = path
                if let data = FileManager.default.contents(atPath: path) {
                    guard let state = LiveAdFilter.State(serialized: String(decoding: data, as: UTF8.self)) else {
                        Console.error("'\(path)' is not an adfilter state file")
                        return 1
                    }
                    filter.state = state
                }
            }
            result = filter.filter(playlist, url: url)
            if let statePath {
                do {
                    try Data(filter.state.serialized.utf8).write(to: URL(fileURLWithPath: statePath), options: .atomic)
                } catch {
                    Console.error("cannot write '\(statePath)': \(error.localizedDescription)")
                    return 1
                }
            }
        } else {
            result = AdFilter().cleanVOD(playlist, url: url)
        }

        for warning in result.warnings { Console.log("warning: \(warning)") }
        if explain && !json {
            for line in explanation(result.decisions) { Console.log(line) }
        }
        if json {
            let segments = result.decisions.map { d -> [String: Any] in
                var entry: [String: Any] = ["uri": d.uri, "ad": d.isAd, "reason": d.reason, "rule": d.rule.id]
                if let id = d.breakID { entry["break"] = id }
                entry["sequence"] = d.mediaSequence
                return entry
            }
            var document: [String: Any] = ["segments": segments]
            if !explain {
                document["playlist"] = String(decoding: result.playlist.write(), as: UTF8.self)
                document["warnings"] = result.warnings
            }
            let data =
                (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes]))
                ?? Data()
            Console.output(String(decoding: data, as: UTF8.self))
        } else {
            FileHandle.standardOutput.write(Data(result.playlist.write()))
        }
        return 0
    }

    /// One line per segment: `<msn> ad|content <rule> <uri> — <reason>`.
    static func explanation(_ decisions: [SegmentDecision]) -> [String] {
        decisions.map { d in
            let what = d.isAd ? "ad     " : "content"
            let rule = d.isAd ? " [\(d.rule.id)\(d.breakID.map { " break \($0)" } ?? "")]" : ""
            return "\(d.mediaSequence) \(what) \(d.uri)\(rule)\(d.isAd ? " — " + d.reason : "")"
        }
    }
}
