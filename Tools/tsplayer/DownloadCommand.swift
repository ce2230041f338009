import CLIToolkit
import FileRange
import Foundation
import HLSDownload
import HTTPClient

/// `tsplayer download`: downloads an HLS stream into a task folder for offline playback.
enum DownloadCommand {
    static let defaultStore = "downloads"

    static let command = Command(
        name: "tsplayer download", overview: "Download an HLS stream for offline playback.",
        discussion: """
            The stream goes into a task folder under the store (media, keys, index.m3u8, and master.m3u8 when alternate
            renditions are downloaded). Ctrl-C pauses and saves; running the same command again resumes. When done, the
            local playlist's path is printed on stdout. A live playlist is recorded until it ends (EXT-X-ENDLIST) or a
            limit is reached; its index.m3u8 grows as an EVENT playlist meanwhile and becomes a VOD playlist at the end.
            """,
        synopsis: [
            "tsplayer download <url> [-o <dir>] [--id <id>] [--variant <policy>] [--audio <policy>] [-H <header>] ...",
            "                  [--user-agent <ua>] [--concurrency <n>] [--stall-timeout <s>] [--skip-missing]",
            "                  [--max-duration <s>] [--max-bytes <n>] [--max-resource-bytes <n>] [--json]",
            "                  [--channel <channel>]",
        ],
        arguments: [
            Argument(
                "<url>",
                help: "The multivariant or media playlist (http or https); a Kodi suffix "
                    + "'|User-Agent=..&Referer=..' gives headers for every request. With --channel: an IPTV "
                    + "channel list (a file or an http(s) URL).")
        ],
        options: [
            .value(
                "--channel", value: "channel",
                help: "Download this channel of the list <url>: a title, tvg-name or tvg-id, a tvg-chno, or a "
                    + "position from 1; the headers the list gives it go on every request."),
            .value("-o", "--output", value: "dir", help: "The store folder (default: ./downloads)."),
            .value("--id", value: "id", help: "The task id (default: derived from the URL and the selection)."),
            .value(
                "--variant", value: "policy",
                help: "best, worst, a bandwidth in bits/s, WxH, or codec:<name> (default: best).",
                expects: "best, worst, a bandwidth in bits/s, WxH or codec:<name>", example: "1280x720"),
            .value(
                "--audio", value: "policy", help: "A language, all, none, or auto (default: auto).",
                expects: "a language, all, none or auto", example: "en"),
            .value(
                "--subtitles", value: "policy", help: "A language, all, none, or auto (default: none).",
                expects: "a language, all, none or auto", example: "en"),
            .value(
                "-H", "--header", value: "header",
                help: "'Name: value' sent on every request; repeatable. Credentials (Authorization, Cookie, "
                    + "Proxy-Authorization, --secret-header) go to <url>'s host only."),
            .value("--user-agent", value: "ua", help: "The User-Agent sent on every request."),
            .value(
                "--concurrency", value: "n", help: "Concurrent requests (default: 8).",
                expects: "a whole number from 1 to 64", example: "8"),
            .value(
                "--stall-timeout", value: "s",
                help: "Abandon and retry a transfer that stalls this long (default: 20).",
                expects: "seconds as a number", example: "20"),
            .flag("--skip-missing", help: "Skip segments that answer 404/410 instead of stopping."),
            .value(
                "--max-duration", value: "s", help: "Live: stop recording after this many seconds of media.",
                expects: "seconds as a number", example: "3600"),
            .value(
                "--max-bytes", value: "n",
                help: "The task's budget on disk. Live: stop recording after this many bytes; VOD: fail, removing "
                    + "the file being written, before writing past it.",
                expects: "a whole number of bytes", example: "1000000000"),
            .value(
                "--max-resource-bytes", value: "n",
                help: "Fail when one segment, key or map is larger than this (default: 268435456, 256 MiB).",
                expects: "a whole number of bytes", example: "268435456"),
            .flag("--json", help: "Print progress as JSON lines on stdout."),
        ] + ParsedArguments.credentialOptions)

    static let subcommand = Subcommand(
        command: command, abstract: "Download an HLS stream for offline playback.", run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed = command.parseOrExit(arguments)
        guard parsed.positionals.count <= 1 else { command.usageError("too many arguments") }
        // Kodi's `url|User-Agent=..&Referer=..` suffix, or the headers a channel list gives the --channel: those
        // headers go on every request (-H and --user-agent win). The list itself is read with -H and --user-agent.
        let listHeaders = parsed.userHeaders(command)
        let (url, urlHeaders) = await parsed.streamInput(command, listHeaders: listHeaders, allowPrivate: true)
        var options = DownloadOptions()
        if let text = parsed.value("--variant") {
            guard let policy = VariantPolicy(argument: text) else {
                command.usageError("invalid variant policy '\(text)': " + (parsed.invalid("--variant", text).message))
            }
            options.variant = policy
        }
        if let text = parsed.value("--audio") {
            guard let policy = RenditionPolicy(argument: text) else {
                command.usageError("invalid audio policy '\(text)': " + parsed.invalid("--audio", text).message)
            }
            options.audio = policy
        }
        if let text = parsed.value("--subtitles") {
            guard let policy = RenditionPolicy(argument: text) else {
                command.usageError("invalid subtitles policy '\(text)': " + parsed.invalid("--subtitles", text).message)
            }
            options.subtitles = policy
        }
        let given = parsed.headers(command)
        for (name, value) in urlHeaders where name.lowercased() != "user-agent" {
            guard !given.contains(where: { $0.name.lowercased() == name.lowercased() }) else { continue }
            options.headers.append(HTTPHeaders.Field(name: name, value: value))
        }
        for (name, value) in given {
            options.headers.append(HTTPHeaders.Field(name: name, value: value))
        }
        options.userAgent =
            parsed.value("--user-agent") ?? urlHeaders.first { $0.name.lowercased() == "user-agent" }?.value
        options.skipMissingSegments = parsed.flag("--skip-missing")
        options.secretHeaders = parsed.secretHeaders(command)
        options.credentialHosts = parsed.credentialHosts(command)
        if let seconds = parsed.number(command, "--max-duration") {
            guard seconds > 0 else {
                command.usageError("max duration must be a positive number of seconds, not \(seconds)")
            }
            options.maxDuration = seconds
        }
        if let bytes = parsed.checked(command, "--max-bytes", { UInt64($0) }) {
            guard bytes > 0 else { command.usageError("max bytes must be a positive whole number") }
            options.maxBytes = bytes
        }
        if let bytes = parsed.checked(command, "--max-resource-bytes", { UInt64($0) }) {
            guard bytes > 0 else { command.usageError("max resource bytes must be a positive whole number") }
            options.maxResourceBytes = bytes
        }
        var configuration = DownloadManagerConfiguration()
        if let n = parsed.checked(command, "--concurrency", { Int($0) }) {
            guard (1...64).contains(n) else { command.usageError("concurrency must be between 1 and 64, not \(n)") }
            configuration.maxConcurrentRequests = n
        }
        if let seconds = parsed.number(command, "--stall-timeout") {
            guard seconds >= 0.1, seconds <= 3600 else {
                command.usageError("stall timeout must be between 0.1 and 3600 seconds, not \(seconds)")
            }
            configuration.stallTimeout = seconds
        }
        configuration.eventInterval = 0.2
        // Retries print through the progress line, so a retry never breaks the bar on a terminal.
        let reporter = ProgressReporter(json: parsed.flag("--json"))
        configuration.onRetry = { reporter.message(ErrorText.retry($0)) }
        let store = parsed.value("--output") ?? defaultStore
        let manager: DownloadManager
        let info: DownloadTaskInfo
        let isNew: Bool
        do {
            manager = try DownloadManager(storeRoot: store, configuration: configuration)
            let id = parsed.value("--id") ?? DownloadManager.stableID(url: url, options: options)
            isNew = await manager.task(id) == nil
            info = try await manager.createTask(id: id, url: url, options: options)
            // An existing task that is paused, stopped or queued (a run killed right after queueing it): run it now.
            // A task another process runs is refused here, before anything is written. A new task was queued by
            // createTask; resuming it too would run it a second time if its first run had already failed.
            if !isNew, info.state != .completed { try await manager.resume(info.id) }
        } catch {
            Output.error(ErrorText.describe(error))
            return ErrorText.exitCode(error)
        }
        let status = await follow(manager, id: info.id, reporter: reporter)
        // A URL that is not a playlist at all leaves no task behind.
        if isNew, status != ExitCode.success, let final = await manager.task(info.id),
            final.error?.code == .invalidPlaylist,
            final.error?.message.hasPrefix("not an HLS playlist") == true
        {
            try? await manager.delete(info.id)
        }
        return status
    }

    /// Shows the task's progress until it settles; Ctrl-C pauses it. Returns the exit status.
    static func follow(_ manager: DownloadManager, id: String, reporter: ProgressReporter) async -> Int32 {
        let json = reporter.json
        let interrupted = InterruptFlag()
        Signals.onInterrupt {
            interrupted.set()
            Task { try? await manager.pause(id) }
        }
        let events = Task {
            for await event in manager.events where event.id == id {
                reporter.show(event)
            }
        }
        let final = await manager.waitUntilSettled(id)
        events.cancel()
        // Wait until the progress printer has stopped, so no progress line can follow the final one.
        await events.value
        guard let final, await manager.task(id) != nil else {
            Output.error("the task was deleted (tsplayer tasks delete)")
            return ExitCode.failure
        }
        reporter.finish(final)
        switch final.state {
        case .completed:
            if !json { Output.line(final.playlistPath ?? final.folder) }
            return ExitCode.success
        case .paused where interrupted.isSet:
            Output.log("paused; run the same command again to resume")
            return ExitCode.interrupted
        case .paused where final.error == nil:
            Output.log("paused by another process (tsplayer tasks pause); run the same command again to resume")
            return ExitCode.failure
        default:
            guard let error = final.error else { return ExitCode.failure }
            Output.error(ErrorText.describe(error))
            return ErrorText.exitCode(error)
        }
    }
}

/// Progress output: a bar on a terminal, plain lines otherwise, JSON lines with --json.
final class ProgressReporter: Sendable {
    let json: Bool
    private let line = LockedValue(ProgressLine(fd: 2, plainInterval: 1))

    init(json: Bool) {
        self.json = json
    }

    func show(_ info: DownloadTaskInfo) {
        if json {
            Output.line(Self.json(info, event: "progress").render(pretty: false))
            return
        }
        line.withLock { line in
            if line.terminal {
                let width = 30
                let filled = Int((info.progress * Double(width)).rounded(.down))
                let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: max(0, width - filled))
                line.update("[\(bar)] \(Self.summary(info))")
            } else if info.state == .downloading {
                // Lines start once media flows: fetching the playlists has no figures to show.
                line.update(Self.summary(info))
            }
        }
    }

    /// A line of its own on stderr (a retry): above the bar on a terminal; with --json, stdout keeps only JSON.
    func message(_ text: String) {
        if json { return Output.log(text) }
        line.withLock { $0.message(text) }
    }

    func finish(_ info: DownloadTaskInfo) {
        if json {
            Output.line(Self.json(info, event: info.state.rawValue).render(pretty: false))
            return
        }
        // Stopped before any media (the URL is not a playlist, the origin refused it): the error says it all.
        let empty = info.state == .stopped && info.filesTotal == 0 && info.bytesDone == 0
        line.withLock { $0.finish(empty ? nil : Self.summary(info)) }
    }

    static func summary(_ info: DownloadTaskInfo) -> String {
        var state = info.state.rawValue
        if let pid = info.runnerPID { state = (info.state.isRunning ? "running" : state) + " (pid \(pid))" }
        var text = state + " " + String(format: "%5.1f%%", info.progress * 100)
        text += " " + bytes(info.bytesDone)
        if let total = info.bytesTotal { text += "/" + (info.totalIsEstimate ? "~" : "") + bytes(total) }
        text += " \(info.filesDone)/\(info.filesTotal) files"
        if info.speed > 0 { text += " " + bytes(UInt64(info.speed)) + "/s" }
        if let eta = info.eta, eta.isFinite { text += " ETA " + duration(eta) }
        return text
    }

    static func bytes(_ count: UInt64) -> String {
        let value = Double(count)
        if value >= 1e9 { return String(format: "%.2f GB", value / 1e9) }
        if value >= 1e6 { return String(format: "%.1f MB", value / 1e6) }
        if value >= 1e3 { return String(format: "%.1f kB", value / 1e3) }
        return "\(count) B"
    }

    static func duration(_ seconds: Double) -> String {
        let s = Int(min(seconds, 359_999).rounded())
        return s >= 3600 ? "\(s / 3600)h\(s % 3600 / 60)m" : s >= 60 ? "\(s / 60)m\(s % 60)s" : "\(s)s"
    }

    /// A task as JSON: one line of `--json` progress, or one element of `tasks list --json`.
    static func json(_ info: DownloadTaskInfo, event: String) -> JSON {
        var object: [(String, JSON)] = [
            ("event", .string(event)), ("id", .string(info.id)), ("url", .string(info.url)),
            ("state", .string(info.state.rawValue)), ("progress", .double(info.progress)),
            ("bytesDone", .int(info.bytesDone)), ("filesDone", .int(info.filesDone)),
            ("filesTotal", .int(info.filesTotal)), ("speed", .double(info.speed)), ("folder", .string(info.folder)),
            ("metadata", .object(info.metadata.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
        ]
        if let total = info.bytesTotal { object.append(("bytesTotal", .int(total))) }
        object.append(("totalIsEstimate", .bool(info.totalIsEstimate)))
        if let eta = info.eta, eta.isFinite { object.append(("eta", .double(eta))) }
        if let path = info.playlistPath { object.append(("playlist", .string(path))) }
        if let pid = info.runnerPID { object.append(("pid", .int(pid))) }
        if let error = info.error {
            var e: [(String, JSON)] = [
                ("code", .string(error.code.description)), ("message", .string(error.message)),
            ]
            if let url = error.url { e.append(("url", .string(url))) }
            if let path = error.path { e.append(("path", .string(path))) }
            if let status = error.status { e.append(("status", .int(status))) }
            if let pid = error.pid { e.append(("pid", .int(pid))) }
            object.append(("error", .object(e)))
        }
        return .object(object)
    }
}

/// Set once Ctrl-C arrived.
final class InterruptFlag: Sendable {
    private let flag = LockedValue(false)
    func set() { flag.withLock { $0 = true } }
    var isSet: Bool { flag.withLock { $0 } }
}
