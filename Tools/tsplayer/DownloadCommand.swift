import FileRange
import Foundation
import HLSDownload
import HTTPClient

/// `tsplayer download`: downloads an HLS stream into a task folder for offline playback.
enum DownloadCommand {
    static let defaultStore = "downloads"

    static let usage = """
        OVERVIEW: Download an HLS stream for offline playback.

        The stream goes into a task folder under the store (media, keys, index.m3u8, and master.m3u8 when alternate
        renditions are downloaded). Ctrl-C pauses and saves; running the same command again resumes. When done, the
        local playlist's path is printed on stdout. A live playlist is recorded until it ends (EXT-X-ENDLIST) or a
        limit is reached; its index.m3u8 grows as an EVENT playlist meanwhile and becomes a VOD playlist at the end.

        USAGE: tsplayer download <url> [-o <dir>] [--id <id>] [--variant <policy>] [--audio <policy>] [-H <header>] ...
                                 [--user-agent <ua>] [--concurrency <n>] [--stall-timeout <s>] [--skip-missing]
                                 [--max-duration <s>] [--max-bytes <n>] [--json]

        ARGUMENTS:
          <url>                   The multivariant or media playlist (http or https).

        OPTIONS:
          -o, --output <dir>      The store folder (default: ./downloads).
          --id <id>               The task id (default: derived from the URL and the selection).
          --variant <policy>      best, worst, a bandwidth in bits/s, WxH, or codec:<name> (default: best).
          --audio <policy>        A language, all, none, or auto (default: auto).
          --subtitles <policy>    A language, all, none, or auto (default: none).
          -H, --header <header>   'Name: value' sent on every request; repeatable.
          --user-agent <ua>       The User-Agent sent on every request.
          --concurrency <n>       Concurrent requests (default: 8).
          --stall-timeout <s>     Abandon and retry a transfer that stalls this long (default: 20).
          --skip-missing          Skip segments that answer 404/410 instead of stopping.
          --max-duration <s>      Live: stop recording after this many seconds of media.
          --max-bytes <n>         Live: stop recording after this many bytes.
          --json                  Print progress as JSON lines on stdout.
          -h, --help              Show help information.

        """

    static let subcommand = Subcommand(
        name: "download", abstract: "Download an HLS stream for offline playback.", usage: usage, run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        do {
            parsed = try ParsedArguments(
                arguments,
                valued: [
                    "-o", "--output", "--id", "--variant", "--audio", "--subtitles", "-H", "--header", "--user-agent",
                    "--concurrency", "--stall-timeout", "--max-duration", "--max-bytes",
                ],
                flags: ["--json", "--skip-missing", "-h", "--help"])
        } catch {
            Console.usageError(error.message, usage: usage)
        }
        if parsed.flags.contains("-h") || parsed.flags.contains("--help") {
            print(usage, terminator: "")
            return 0
        }
        guard parsed.positionals.count == 1, let url = parsed.positionals.first else {
            Console.usageError(parsed.positionals.isEmpty ? "missing <url>" : "too many arguments", usage: usage)
        }
        var options = DownloadOptions()
        if let text = parsed.value("--variant") {
            guard let policy = VariantPolicy(argument: text) else {
                Console.usageError("invalid variant policy '\(text)'", usage: usage)
            }
            options.variant = policy
        }
        if let text = parsed.value("--audio") {
            guard let policy = RenditionPolicy(argument: text) else {
                Console.usageError("invalid audio policy '\(text)'", usage: usage)
            }
            options.audio = policy
        }
        if let text = parsed.value("--subtitles") {
            guard let policy = RenditionPolicy(argument: text) else {
                Console.usageError("invalid subtitles policy '\(text)'", usage: usage)
            }
            options.subtitles = policy
        }
        for line in (parsed.values["-H"] ?? []) + (parsed.values["--header"] ?? []) {
            guard let field = HTTPHeaders.Field(line: line) else {
                Console.usageError("invalid header '\(line)' (expected 'Name: value')", usage: usage)
            }
            options.headers.append(field)
        }
        options.userAgent = parsed.value("--user-agent")
        options.skipMissingSegments = parsed.flags.contains("--skip-missing")
        if let text = parsed.value("--max-duration") {
            guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
                Console.usageError("max duration must be a positive number of seconds", usage: usage)
            }
            options.maxDuration = seconds
        }
        if let text = parsed.value("--max-bytes") {
            guard let bytes = UInt64(text), bytes > 0 else {
                Console.usageError("max bytes must be a positive whole number", usage: usage)
            }
            options.maxBytes = bytes
        }
        var configuration = DownloadManagerConfiguration()
        if let text = parsed.value("--concurrency") {
            guard let n = Int(text), (1...64).contains(n) else {
                Console.usageError("concurrency must be between 1 and 64", usage: usage)
            }
            configuration.maxConcurrentRequests = n
        }
        if let text = parsed.value("--stall-timeout") {
            guard let seconds = Double(text), seconds >= 0.1, seconds <= 3600 else {
                Console.usageError("stall timeout must be between 0.1 and 3600 seconds", usage: usage)
            }
            configuration.stallTimeout = seconds
        }
        configuration.eventInterval = 0.2
        let store = parsed.value("-o", "--output") ?? defaultStore
        let manager: DownloadManager
        let info: DownloadTaskInfo
        let isNew: Bool
        do {
            manager = try DownloadManager(storeRoot: store, configuration: configuration)
            let id = parsed.value("--id") ?? DownloadManager.stableID(url: url, options: options)
            isNew = await manager.task(id) == nil
            info = try await manager.createTask(id: id, url: url, options: options)
            // Paused, stopped or queued (a run killed right after queueing it): run it now. A task another process
            // runs is refused here, before anything is written.
            if info.state != .completed { try await manager.resume(info.id) }
        } catch {
            Console.error("\(error)")
            return 1
        }
        let status = await follow(manager, id: info.id, json: parsed.flags.contains("--json"))
        // A URL that is not a playlist at all leaves no task behind.
        if isNew, status != 0, let final = await manager.task(info.id), final.error?.code == .invalidPlaylist,
            final.error?.message.hasPrefix("not an HLS playlist") == true
        {
            try? await manager.delete(info.id)
        }
        return status
    }

    /// Shows the task's progress until it settles; Ctrl-C pauses it. Returns the exit status.
    static func follow(_ manager: DownloadManager, id: String, json: Bool) async -> Int32 {
        let interrupted = InterruptFlag()
        DownloadSignals.onInterrupt {
            interrupted.set()
            Task { try? await manager.pause(id) }
        }
        let reporter = ProgressReporter(json: json)
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
            Console.error("the task was deleted (tsplayer tasks delete)")
            return 1
        }
        reporter.finish(final)
        switch final.state {
        case .completed:
            if !json { Console.output(final.playlistPath ?? final.folder) }
            return 0
        case .paused where interrupted.isSet:
            Console.log("paused; run the same command again to resume")
            return 130
        case .paused where final.error == nil:
            Console.log("paused by another process (tsplayer tasks pause); run the same command again to resume")
            return 1
        default:
            if let error = final.error { Console.error("\(error)") }
            return 1
        }
    }
}

/// Progress output: a bar on a terminal, plain lines otherwise, JSON lines with --json.
final class ProgressReporter: Sendable {
    private let json: Bool
    private let terminal: Bool
    private let lastLine = LockedValue(0.0)

    init(json: Bool) {
        self.json = json
        self.terminal = Console.stderrIsTerminal
    }

    func show(_ info: DownloadTaskInfo) {
        if json {
            Console.output(Self.json(info, event: "progress"))
            return
        }
        if terminal {
            let width = 30
            let filled = Int((info.progress * Double(width)).rounded(.down))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: max(0, width - filled))
            FileHandle.standardError.write(Data("\r[\(bar)] \(Self.summary(info))\u{1B}[K".utf8))
            return
        }
        let now = Date().timeIntervalSince1970
        let due = lastLine.withLock { last -> Bool in
            // Lines start once media flows: fetching the playlists has no figures to show.
            guard info.state == .downloading, now - last >= 1 else { return false }
            last = now
            return true
        }
        if due { Console.log(Self.summary(info)) }
    }

    func finish(_ info: DownloadTaskInfo) {
        // Stopped before any media (the URL is not a playlist, the origin refused it): the error says it all.
        let empty = info.state == .stopped && info.filesTotal == 0 && info.bytesDone == 0
        if json {
            Console.output(Self.json(info, event: info.state.rawValue))
        } else if empty {
            if terminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        } else if terminal {
            FileHandle.standardError.write(Data("\r\(Self.summary(info))\u{1B}[K\n".utf8))
        } else {
            Console.log(Self.summary(info))
        }
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

    static func json(_ info: DownloadTaskInfo, event: String) -> String {
        var object: [String: Any] = [
            "event": event, "id": info.id, "url": info.url, "state": info.state.rawValue, "progress": info.progress,
            "bytesDone": info.bytesDone, "filesDone": info.filesDone, "filesTotal": info.filesTotal,
            "speed": info.speed, "folder": info.folder, "metadata": info.metadata,
        ]
        if let total = info.bytesTotal { object["bytesTotal"] = total }
        object["totalIsEstimate"] = info.totalIsEstimate
        if let eta = info.eta, eta.isFinite { object["eta"] = eta }
        if let path = info.playlistPath { object["playlist"] = path }
        if let pid = info.runnerPID { object["pid"] = pid }
        if let error = info.error {
            var e: [String: Any] = ["code": error.code.description, "message": error.message]
            if let url = error.url { e["url"] = url }
            if let path = error.path { e["path"] = path }
            if let status = error.status { e["status"] = status }
            if let pid = error.pid { e["pid"] = pid }
            object["error"] = e
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

/// Set once Ctrl-C arrived.
final class InterruptFlag: Sendable {
    private let flag = LockedValue(false)
    func set() { flag.withLock { $0 = true } }
    var isSet: Bool { flag.withLock { $0 } }
}

/// SIGINT/SIGTERM handling for the download commands.
enum DownloadSignals {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    /// Calls `handler` on the first SIGINT or SIGTERM (later ones are ignored while the task pauses).
    static func onInterrupt(_ handler: @escaping @Sendable () -> Void) {
        let once = InterruptFlag()
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                guard !once.isSet else { return }
                once.set()
                handler()
            }
            source.resume()
            sources.append(source)
        }
    }
}
