import Foundation
import HLSDownload
import LoopbackHTTP
import TSPlayerKit

/// `tsplayer tasks`: lists and manages the download tasks of a store.
enum TasksCommand {
    static let usage = """
        OVERVIEW: List and manage download tasks.

        USAGE: tsplayer tasks [list | pause <id> | resume <id> | delete <id> | play <id> | export <id> <file>]
                      [--store <dir>] [--port <port>] [--json]

        SUBCOMMANDS:
          list                    List the tasks in creation order (the default).
          pause <id>              Pause a task (one another process runs pauses within about a second).
          resume <id>             Resume a task and follow it until it completes, stops or is interrupted.
          delete <id>             Delete a task and its files (stopping the process that runs it).
          play <id>               Serve a completed task on loopback: prints its playlist URL, serves until Ctrl-C.
          export <id> <file>      Concatenate a completed, unencrypted TS task into one .ts file.

        OPTIONS:
          --store <dir>           The store folder (default: ./downloads).
          --port <port>           The loopback port for play (default: an ephemeral port).
          --json                  Print JSON.
          -h, --help              Show help information.

        """

    static let subcommand = Subcommand(
        name: "tasks", abstract: "List and manage download tasks.", usage: usage, run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        do {
            parsed = try ParsedArguments(arguments, valued: ["--store", "--port"], flags: ["--json", "-h", "--help"])
        } catch {
            Console.usageError(error.message, usage: usage)
        }
        if parsed.flags.contains("-h") || parsed.flags.contains("--help") {
            print(usage, terminator: "")
            return 0
        }
        let json = parsed.flags.contains("--json")
        let action = parsed.positionals.first ?? "list"
        let operands = Array(parsed.positionals.dropFirst())
        let expected: Int
        switch action {
        case "list": expected = 0
        case "pause", "resume", "delete", "play": expected = 1
        case "export": expected = 2
        default: Console.usageError("unknown action '\(action)'", usage: usage)
        }
        guard operands.count == expected else {
            Console.usageError("'\(action)' takes \(expected) argument\(expected == 1 ? "" : "s")", usage: usage)
        }
        let manager: DownloadManager
        do {
            manager = try DownloadManager(storeRoot: parsed.value("--store") ?? DownloadCommand.defaultStore)
        } catch {
            Console.error("\(error)")
            return 1
        }
        do {
            switch action {
            case "list":
                let tasks = await manager.allTasks()
                if json {
                    Console.output(
                        "[" + tasks.map { ProgressReporter.json($0, event: "task") }.joined(separator: ",") + "]")
                } else {
                    for task in tasks {
                        var line = task.id + "  " + ProgressReporter.summary(task) + "  " + task.url
                        if let error = task.error { line += "  (\(error))" }
                        Console.output(line)
                    }
                }
            case "pause":
                try await manager.pause(operands[0])
                try report(await manager.task(operands[0]), json: json)
            case "resume":
                try await manager.resume(operands[0])
                return await DownloadCommand.follow(manager, id: operands[0], json: json)
            case "play":
                guard await manager.playlistPath(forTask: operands[0]) != nil else {
                    Console.error("task '\(operands[0])' is not a completed task of this store")
                    return 1
                }
                return await play(manager, id: operands[0], port: parsed.value("--port"), json: json)
            case "delete":
                try await manager.delete(operands[0])
                if json { Console.output("{\"deleted\":\"\(operands[0])\"}") }
            default:
                try await manager.export(operands[0], to: operands[1])
                if json { Console.output("{\"exported\":\"\(operands[0])\"}") }
            }
        } catch {
            Console.error("\(error)")
            return 1
        }
        return 0
    }

    static func report(_ info: DownloadTaskInfo?, json: Bool) throws {
        guard let info else { return }
        Console.output(
            json ? ProgressReporter.json(info, event: "task") : info.id + "  " + ProgressReporter.summary(info))
    }

    /// Serves a completed task through the shared playback server (``DownloadManager/playURL(forTask:server:)``)
    /// until Ctrl-C.
    static func play(_ manager: DownloadManager, id: String, port: String?, json: Bool) async -> Int32 {
        var configuration = HTTPServerConfiguration()
        if let port {
            guard let number = UInt16(port) else { Console.usageError("invalid port '\(port)'", usage: usage) }
            configuration.port = number
        }
        let server = PlaybackServer.shared
        server.setConfiguration(configuration)
        let url: String
        do {
            url = try await manager.playURL(forTask: id, server: server)
        } catch {
            Console.error("\(error)")
            return 1
        }
        if json {
            let object = ["url": url, "folder": manager.folder(forTask: id)]
            let data = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
            Console.output(String(decoding: data, as: UTF8.self))
        } else {
            Console.output(url)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DownloadSignals.onInterrupt { continuation.resume() }
        }
        await manager.stopPlayback(forTask: id, server: server)
        return 0
    }
}
