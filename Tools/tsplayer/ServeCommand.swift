import CLIToolkit
import Foundation
import LoopbackHTTP
import MPEGTS
import TSPlayback

/// `tsplayer serve`: serves .ts files as HLS on a loopback port until interrupted.
enum ServeCommand {
    static let command = Command(
        name: "tsplayer serve", overview: "Serve MPEG-TS files as HLS on a loopback port.",
        discussion: """
            With no file, serves a built-in sample (a test pattern with a tone). For each input it prints the
            multivariant playlist URL, then the URL of the raw .ts, on stdout; then it serves until interrupted.
            """,
        synopsis: [
            "tsplayer serve [<file> ...] [--port <port>] [--segment-duration <seconds>] [--container <container>]",
            "               [--program <number>] [--cors <origin>] [--json] [-v]",
        ],
        arguments: [
            Argument(
                "<file>",
                help: "A .ts file, a folder of .ts files, or a folder holding an HLS presentation (default: the "
                    + "built-in sample).")
        ],
        options: [
            .value(
                "--port", value: "port", help: "The loopback port to listen on (default: an ephemeral port).",
                expects: "a number from 0 to 65535", example: "8080"),
            .value(
                "--segment-duration", value: "seconds",
                help: "The target segment duration; segments are cut at the next keyframe (default: 6).",
                expects: "seconds as a number", example: "6"),
            .value(
                "--container", value: "container",
                help: "auto, ts or fmp4: TS byte ranges or fragmented MP4 segments; auto (the default) chooses fMP4 "
                    + "for HEVC or several audio tracks. The choice is printed on stderr.",
                expects: "auto, ts or fmp4", example: "fmp4"),
            .value(
                "--program", value: "number",
                help: "In a file of several programs, the one to play (the PAT's program_number; default: the first "
                    + "with video, else the first with audio).",
                expects: "a program number from 0 to 65535", example: "2"),
            .value("--cors", value: "origin", help: "Allow cross-origin requests from this origin ('*' for any)."),
            .flag("--json", help: "Print the URLs as one JSON line."),
            .flag("-v", "--verbose", help: "Log every request on stderr."),
        ])

    static let subcommand = Subcommand(
        command: command, abstract: "Serve .ts files as HLS on a loopback port.", run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed = command.parseOrExit(arguments)
        var configuration = HTTPServerConfiguration()
        if let port = parsed.port(command) { configuration.port = port }
        var options = TSPlaybackSession.Options()
        if let seconds = parsed.number(command, "--segment-duration") {
            guard seconds >= 1, seconds <= 60 else {
                command.usageError("segment duration must be between 1 and 60 seconds, not \(seconds)")
            }
            options.segmentDuration = seconds
        }
        if let container = parsed.checked(command, "--container", PlaybackContainer.init(rawValue:)) {
            options.container = container
        }
        if let program = parsed.checked(command, "--program", { UInt16($0) }) {
            options.program = program
        }
        if let origin = parsed.value("--cors") {
            configuration.cors = CORSOptions(allowedOrigin: origin)
        }
        if parsed.flag("--verbose") {
            configuration.accessLog = { entry in
                let millis =
                    Double(entry.duration.components.attoseconds) / 1e15
                    + Double(entry.duration.components.seconds) * 1000
                Output.log(
                    "\(entry.method) \(entry.path) \(entry.status) \(entry.bytesSent) "
                        + String(format: "%.2fms", millis))
            }
        }
        var inputs = parsed.positionals
        if inputs.isEmpty {
            guard let sample = Bundle.module.path(forResource: "sample", ofType: "ts") else {
                Output.error("the built-in sample is missing from this build")
                return ExitCode.failure
            }
            inputs = [sample]
        }

        let server = PlaybackServer.shared
        server.setConfiguration(configuration)
        var sessions: [Served] = []
        for path in inputs {
            do {
                let served = try open(path, options: options)
                if let session = served.source as? TSPlaybackSession {
                    Output.log("\(path): " + session.diagnostics.joined(separator: "; "))
                }
                let base = try await server.add(served.source)
                sessions.append(
                    Served(
                        path: path, source: served.source, base: base, entry: served.entry,
                        media: served.media, duration: served.duration))
            } catch {
                // A program the file does not have is a usage mistake: the message lists the programs there are.
                if error.code == .unknownProgram {
                    command.usageError("\(path): \(error.detail)")
                }
                Output.error(ErrorText.describe(error))
                return ErrorText.exitCode(error)
            }
        }
        if parsed.flag("--json") {
            // One line: a reading process takes the first line as the whole announcement.
            let items: [JSON] = sessions.map { item in
                var entry: [(String, JSON)] = [
                    ("path", .string(item.path)), ("playlist", .string(item.base + item.entry)),
                ]
                if let media = item.media { entry.append(("media", .string(item.base + media))) }
                if let duration = item.duration { entry.append(("duration", .double(duration))) }
                return .object(entry)
            }
            Output.line(JSON.object([("inputs", .array(items))]).render(pretty: false))
        } else {
            for item in sessions {
                Output.line(item.base + item.entry)
                if let media = item.media { Output.line(item.base + media) }
            }
        }
        let files = sessions.compactMap { $0.source as? TSPlaybackSession }
        if Terminal.stderrIsTerminal, !files.isEmpty {
            Task { await showProgress(files) }
        }
        let watched = sessions.compactMap { item in (item.source as? TSPlaybackSession).map { (item.path, $0) } }
        if !watched.isEmpty {
            Task { await reportServingDiagnostics(watched) }
        }
        await Signals.waitForInterrupt()
        for item in sessions {
            await server.remove(item.source)
            (item.source as? TSPlaybackSession)?.close()
        }
        return ExitCode.success
    }

    /// An input being served.
    struct Served {
        var path: String
        var source: any PlaybackSource
        var base: String
        var entry: String
        var media: String?
        var duration: Double?
    }

    /// Opens a file as a TS session, a folder with a playlist as an HLS folder, and any other folder as a folder
    /// of .ts files.
    static func open(_ path: String, options: TSPlaybackSession.Options) throws(PlaybackError)
        -> (source: any PlaybackSource, entry: String, media: String?, duration: Double?)
    {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw PlaybackError(.cannotOpen, path: path, detail: "no such file or folder")
        }
        if !isDirectory.boolValue {
            let session = try TSPlaybackSession(tsFile: path, options: options)
            return (session, "master.m3u8", "media.ts", session.probe.duration)
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        if names.contains(where: { $0.hasSuffix(".m3u8") }) {
            let session = try HLSFolderSession(folder: path)
            return (session, session.entryPlaylist, nil, nil)
        }
        let session = try TSFolderSession(folder: path)
        return (session, "master.m3u8", nil, session.segments.reduce(0) { $0 + $1.duration })
    }

    /// Prints each new serving diagnostic of the sessions (audio frames a served segment left out) once on stderr,
    /// as segments are made, until serving ends.
    static func reportServingDiagnostics(_ sessions: [(path: String, session: TSPlaybackSession)]) async {
        var printed = sessions.map { _ in Set<String>() }
        while !Task.isCancelled {
            for (number, item) in sessions.enumerated() {
                for line in item.session.servingDiagnostics where printed[number].insert(line).inserted {
                    Output.log("\(item.path): " + line)
                }
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Shows indexing progress on a terminal until every input is indexed.
    static func showProgress(_ sessions: [TSPlaybackSession]) async {
        var line = ProgressLine(fd: 2, plainInterval: nil)
        while true {
            let fractions = sessions.map { session -> Double in
                guard let index = session.index else { return 0 }
                return index.isComplete ? 1 : Double(index.bytesIndexed) / Double(max(1, index.fileSize))
            }
            let text = "indexing " + fractions.map { String(format: "%3.0f%%", $0 * 100) }.joined(separator: " ")
            if fractions.allSatisfy({ $0 >= 1 }) { return line.finish(text) }
            line.update(text)
            try? await Task.sleep(for: .milliseconds(200))
        }
    }
}
