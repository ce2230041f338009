import CLIToolkit
import Foundation
import HLSAdFilter
import HLSPlaylist

/// `tsplayer adfilter`: offline ad filtering of one media playlist, as if fetched from a URL.
enum AdFilterCommand {
    static let command = Command(
        name: "tsplayer adfilter", overview: "Remove ads from one HLS media playlist, offline.",
        discussion: """
            Reads the playlist as if it had been fetched from <url> and prints the cleaned playlist on stdout. VOD: ad
            segments are removed. Live: each ad segment becomes a slate entry 'slate/<msn>.ts' of the same duration;
            with --state the filter remembers its decisions between invocations, so successive polls can be cleaned
            one call at a time.
            """,
        synopsis: ["tsplayer adfilter <file> --url <url> [--mode <mode>] [--state <dir>] [--explain] [--json]"],
        arguments: [Argument("<file>", help: "The media playlist ('-' for stdin).")],
        options: [
            .value(
                "--url", value: "url", help: "The URL the playlist was fetched from (relative URIs resolve against it)."
            ),
            .value("--mode", value: "mode", help: "vod or live (default: live unless the playlist has EXT-X-ENDLIST)."),
            .value(
                "--state", value: "dir", help: "Keep the live filter's state in this directory between invocations."),
            .flag("--explain", help: "Print each segment's decision on stderr."),
            .flag(
                "--json",
                help: "Print JSON on stdout; with --explain only the decisions: "
                    + "{\"segments\":[{\"uri\",\"ad\",\"reason\",\"rule\"}]}."),
        ])

    static let subcommand = Subcommand(
        command: command, abstract: "Remove ads from one HLS media playlist, offline.", run: run)

    static let stateFileName = "adfilter-state.txt"

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed = command.parseOrExit(arguments)
        guard parsed.positionals.count == 1, let file = parsed.positionals.first else {
            command.usageError(parsed.positionals.isEmpty ? "missing <file>" : "expected one <file>")
        }
        guard let url = parsed.value("--url") else { command.usageError("missing --url") }
        let reference = URIReference(url)
        guard let scheme = reference.scheme?.lowercased(), scheme == "http" || scheme == "https",
            reference.authority?.isEmpty == false
        else {
            command.usageError("--url must be an absolute http or https URL")
        }
        let mode = parsed.value("--mode")
        if let mode, mode != "vod", mode != "live" {
            let guess = Suggestion.closest(to: mode, among: ["vod", "live"]).map { "; did you mean '\($0)'?" } ?? ""
            command.usageError("--mode must be 'vod' or 'live', not '\(mode)'\(guess)")
        }
        let explain = parsed.flag("--explain")
        let json = parsed.flag("--json")

        let bytes: [UInt8]
        if file == "-" {
            bytes = Array(FileHandle.standardInput.readDataToEndOfFile())
        } else {
            guard let data = FileManager.default.contents(atPath: file) else {
                Output.error("cannot read '\(file)'")
                return ExitCode.unreadable
            }
            bytes = Array(data)
        }
        if let message = PlaylistStart.check(bytes, complete: true).message {
            Output.error("\(file): \(message)")
            return ExitCode.unreadable
        }
        let playlist: Playlist
        do {
            playlist = try Playlist(bytes: bytes)
        } catch {
            Output.error("\(file): \(error)")
            return ExitCode.unreadable
        }
        guard playlist.kind == .media else {
            Output.error(
                "\(file) is not a media playlist but a multivariant playlist; pass one of its variants' media playlists"
            )
            return ExitCode.unreadable
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
                    Output.error("cannot create state directory '\(directory)': \(ErrorText.file(error))")
                    return ExitCode.failure
                }
                let path = (directory as NSString).appendingPathComponent(stateFileName)
                statePath = path
                if let data = FileManager.default.contents(atPath: path) {
                    guard let state = LiveAdFilter.State(serialized: String(decoding: data, as: UTF8.self)) else {
                        Output.error("'\(path)' is not an adfilter state file")
                        return ExitCode.failure
                    }
                    filter.state = state
                }
            }
            result = filter.filter(playlist, url: url)
            if let statePath {
                do {
                    try Data(filter.state.serialized.utf8).write(to: URL(fileURLWithPath: statePath), options: .atomic)
                } catch {
                    Output.error("cannot write '\(statePath)': \(ErrorText.file(error))")
                    return ExitCode.failure
                }
            }
        } else {
            result = AdFilter().cleanVOD(playlist, url: url)
        }

        for warning in result.warnings { Output.log("warning: \(warning)") }
        if explain && !json {
            for line in explanation(result.decisions) { Output.log(line) }
        }
        if json {
            let segments: [JSON] = result.decisions.map { d in
                var entry: [(String, JSON)] = [
                    ("uri", .string(d.uri)), ("ad", .bool(d.isAd)), ("reason", .string(d.reason)),
                    ("rule", .string(d.rule.id)),
                ]
                if let id = d.breakID { entry.append(("break", .string(id))) }
                entry.append(("sequence", .int(d.mediaSequence)))
                return .object(entry)
            }
            var document: [(String, JSON)] = [("segments", .array(segments))]
            if !explain {
                document.append(("playlist", .string(String(decoding: result.playlist.write(), as: UTF8.self))))
                document.append(("warnings", .array(result.warnings.map { .string($0) })))
            }
            Output.line(JSON.object(document).render())
        } else {
            Output.write(bytes: result.playlist.write())
        }
        return ExitCode.success
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
