import CLIToolkit
import Foundation
import HLSDownload
import LoopbackHTTP
import TSPlayerKit

/// `tsplayer tasks`: lists and manages the download tasks of a store.
enum TasksCommand {
    /// The actions and how many operands each takes.
    static let actions: [(name: String, operands: Int, abstract: String)] = [
        ("list", 0, "List the tasks in creation order (the default)."),
        ("pause", 1, "Pause a task (one another process runs pauses within about a second)."),
        ("resume", 1, "Resume a task and follow it until it completes, stops or is interrupted."),
        ("delete", 1, "Delete a task and its files (stopping the process that runs it)."),
        ("play", 1, "Serve a completed task on loopback: prints its playlist URL, serves until Ctrl-C."),
        (
            "export", 2,
            "Concatenate a completed, unencrypted TS task into one .ts file, or remux it into one fragmented MP4 "
                + "file when <file> ends in .mp4."
        ),
    ]

    static let command = Command(
        name: "tsplayer tasks", overview: "List and manage download tasks.",
        synopsis: [
            "tsplayer tasks [list | pause <id> | resume <id> | delete <id> | play <id> | export <id> <file>]",
            "               [--store <dir>] [--port <port>] [--json]",
        ],
        options: [
            .value("--store", value: "dir", help: "The store folder (default: ./downloads)."),
            .value(
                "--port", value: "port", help: "The loopback port for play (default: an ephemeral port).",
                expects: "a number from 0 to 65535", example: "8080"),
            .flag("--json", help: "Print JSON."),
        ],
        subcommands: [
            SubcommandSummary("list", abstract: actions[0].abstract),
            SubcommandSummary("pause <id>", abstract: actions[1].abstract),
            SubcommandSummary("resume <id>", abstract: actions[2].abstract),
            SubcommandSummary("delete <id>", abstract: actions[3].abstract),
            SubcommandSummary("play <id>", abstract: actions[4].abstract),
            SubcommandSummary("export <id> <file>", abstract: actions[5].abstract),
        ])

    static let subcommand = Subcommand(command: command, abstract: "List and manage download tasks.", run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed = command.parseOrExit(arguments)
        let json = parsed.flag("--json")
        let action = parsed.positionals.first ?? "list"
        let operands = Array(parsed.positionals.dropFirst())
        guard let expected = actions.first(where: { $0.name == action })?.operands else {
            let guess = Suggestion.closest(to: action, among: actions.map(\.name)).map { "; did you mean '\($0)'?" }
            command.usageError("unknown action '\(action)'" + (guess ?? ""))
        }
        guard operands.count == expected else {
            command.usageError("'\(action)' takes \(expected) argument\(expected == 1 ? "" : "s")")
        }
        let port = parsed.port(command)
        let reporter = ProgressReporter(json: json)
        let manager: DownloadManager
        do {
            var configuration = DownloadManagerConfiguration()
            configuration.onRetry = { reporter.message(ErrorText.retry($0)) }
            manager = try DownloadManager(
                storeRoot: parsed.value("--store") ?? DownloadCommand.defaultStore, configuration: configuration)
        } catch {
            Output.error(ErrorText.describe(error))
            return ErrorText.exitCode(error)
        }
        do {
            switch action {
            case "list":
                let tasks = await manager.allTasks()
                if json {
                    Output.line(JSON.array(tasks.map { ProgressReporter.json($0, event: "task") }).render())
                } else {
                    for task in tasks {
                        var line = task.id + "  " + ProgressReporter.summary(task) + "  " + task.url
                        if let error = task.error { line += "  (\(ErrorText.describe(error)))" }
                        Output.line(line)
                    }
                }
            case "pause":
                try await manager.pause(operands[0])
                try report(await manager.task(operands[0]), json: json)
            case "resume":
                try await manager.resume(operands[0])
                return await DownloadCommand.follow(manager, id: operands[0], reporter: reporter)
            case "play":
                guard await manager.playlistPath(forTask: operands[0]) != nil else {
                    Output.error(
                        "task '\(operands[0])' is not a completed task of this store; 'tsplayer tasks list' shows them")
                    return ExitCode.failure
                }
                return await play(manager, id: operands[0], port: port, json: json)
            case "delete":
                try await manager.delete(operands[0])
                if json { Output.line(JSON.object([("deleted", .string(operands[0]))]).render(pretty: false)) }
            default:
                if operands[1].lowercased().hasSuffix(".mp4") {
                    return await exportMP4(manager, id: operands[0], to: operands[1], json: json)
                }
                do {
                    try await manager.export(operands[0], to: operands[1])
                } catch {
                    Output.error("task '\(operands[0])': \(ErrorText.describe(error))")
                    return ErrorText.exitCode(error)
                }
                if json { Output.line(JSON.object([("exported", .string(operands[0]))]).render(pretty: false)) }
            }
        } catch {
            Output.error(ErrorText.describe(error))
            return ErrorText.exitCode(error)
        }
        return ExitCode.success
    }

    /// Exports a completed TS task as one fragmented MP4 file: its segments are joined in playlist order into a
    /// temporary `.ts` beside `destination` (the `.ts` export), which the remuxer then reads; time stamp resets
    /// between segments (discontinuities) become one continuous timeline. The temporary file is removed.
    static func exportMP4(_ manager: DownloadManager, id: String, to destination: String, json: Bool) async -> Int32 {
        let joined = destination + ".ts.partial"
        defer { try? FileManager.default.removeItem(atPath: joined) }
        do {
            try await manager.export(id, to: joined)
        } catch {
            Output.error("task '\(id)': \(ErrorText.describe(error))")
            return ErrorText.exitCode(error)
        }
        do {
            try RemuxCommand.remux(input: joined, output: destination, language: nil, label: "task '\(id)'")
        } catch let error as RemuxError {
            Output.error("task '\(id)': \(error)")
            return error.status
        } catch {
            Output.error("task '\(id)': \(ErrorText.describe(error))")
            return ExitCode.failure
        }
        if json { Output.line(JSON.object([("exported", .string(id))]).render(pretty: false)) }
        return ExitCode.success
    }

    static func report(_ info: DownloadTaskInfo?, json: Bool) throws {
        guard let info else { return }
        Output.line(
            json
                ? ProgressReporter.json(info, event: "task").render(pretty: false)
                : info.id + "  " + ProgressReporter.summary(info))
    }

    /// Serves a completed task through the shared playback server (``DownloadManager/playURL(forTask:server:)``)
    /// until Ctrl-C.
    static func play(_ manager: DownloadManager, id: String, port: UInt16?, json: Bool) async -> Int32 {
        var configuration = HTTPServerConfiguration()
        if let port { configuration.port = port }
        let server = PlaybackServer.shared
        server.setConfiguration(configuration)
        let url: String
        do {
            url = try await manager.playURL(forTask: id, server: server)
        } catch {
            Output.error(ErrorText.describe(error))
            return ErrorText.exitCode(error)
        }
        if json {
            let object = JSON.object([("url", .string(url)), ("folder", .string(manager.folder(forTask: id)))])
            Output.line(object.render(pretty: false))
        } else {
            Output.line(url)
        }
        await Signals.waitForInterrupt()
        await manager.stopPlayback(forTask: id, server: server)
        return ExitCode.success
    }
}
