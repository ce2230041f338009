import FileRange
import Foundation
import LoopbackHTTP
import MPEGTS
import TSPlayerKit

/// `tsplayer serve`: serves .ts files as HLS on a loopback port until interrupted.
enum ServeCommand {
    static let usage = """
        OVERVIEW: Serve MPEG-TS files as HLS on a loopback port.

        With no file, serves a built-in sample (a test pattern with a tone). For each input it prints the
        multivariant playlist URL, then the URL of the raw .ts, on stdout; then it serves until interrupted.

        USAGE: tsplayer serve [<file> ...] [--port <port>] [--segment-duration <seconds>] [--container <container>]
                              [--cors <origin>] [--json] [-v]

        ARGUMENTS:
          <file>                  A .ts file, a folder of .ts files, or a folder holding an HLS presentation
                                  (default: the built-in sample).

        OPTIONS:
          --port <port>           The loopback port to listen on (default: an ephemeral port).
          --segment-duration <seconds>
                                  The target segment duration; segments are cut at the next keyframe (default: 6).
          --container <container> auto, ts or fmp4: TS byte ranges or fragmented MP4 segments; auto (the default)
                                  chooses fMP4 for HEVC or several audio tracks. The choice is printed on stderr.
          --cors <origin>         Allow cross-origin requests from this origin ('*' for any).
          --json                  Print the URLs as one JSON document.
          -v, --verbose           Log every request on stderr.
          -h, --help              Show help information.

        """

    static let subcommand = Subcommand(
        name: "serve", abstract: "Serve .ts files as HLS on a loopback port.", usage: usage, run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        do {
            parsed = try ParsedArguments(
                arguments, valued: ["--port", "--segment-duration", "--cors", "--container"],
                flags: ["--json", "-v", "--verbose", "-h", "--help"])
        } catch {
            Console.usageError(error.message, usage: usage)
        }
        if parsed.flags.contains("-h") || parsed.flags.contains("--help") {
            print(usage, terminator: "")
            return 0
        }
        var configuration = HTTPServerConfiguration()
        if let text = parsed.value("--port") {
            guard let port = UInt16(text) else { Console.usageError("invalid port '\(text)'", usage: usage) }
            configuration.port = port
        }
        var options = TSPlaybackSession.Options()
        if let text = parsed.value("--segment-duration") {
            guard let seconds = Double(text), seconds >= 1, seconds <= 60 else {
                Console.usageError("segment duration must be between 1 and 60 seconds", usage: usage)
            }
            options.segmentDuration = seconds
        }
        if let text = parsed.value("--container") {
            guard let container = PlaybackContainer(rawValue: text) else {
                Console.usageError("container must be auto, ts or fmp4", usage: usage)
            }
            options.container = container
        }
        if let origin = parsed.value("--cors") {
            configuration.cors = CORSOptions(allowedOrigin: origin)
        }
        if parsed.flags.contains("-v") || parsed.flags.contains("--verbose") {
            configuration.accessLog = { entry in
                let millis =
                    Double(entry.duration.components.attoseconds) / 1e15
                    + Double(entry.duration.components.seconds) * 1000
                Console.log(
                    "\(entry.method) \(entry.path) \(entry.status) \(entry.bytesSent) "
                        + String(format: "%.2fms", millis))
            }
        }
        var inputs = parsed.positionals
        if inputs.isEmpty {
            guard let sample = Bundle.module.path(forResource: "sample", ofType: "ts") else {
                Console.error("the built-in sample is missing from this build")
                return 1
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
                    Console.log("\(path): " + session.diagnostics.joined(separator: "; "))
                }
                let base = try await server.add(served.source)
                sessions.append(
                    Served(
                        path: path, source: served.source, base: base, entry: served.entry,
                        media: served.media, duration: served.duration))
            } catch {
                Console.error("\(error)")
                return 1
            }
        }
        if parsed.flags.contains("--json") {
            let items = sessions.map { item -> [String: Any] in
                var entry: [String: Any] = ["path": item.path, "playlist": item.base + item.entry]
                if let media = item.media { entry["media"] = item.base + media }
                if let duration = item.duration { entry["duration"] = duration }
                return entry
            }
            let data =
                (try? JSONSerialization.data(withJSONObject: ["inputs": items], options: [.sortedKeys])) ?? Data()
            Console.output(String(decoding: data, as: UTF8.self))
        } else {
            for item in sessions {
                Console.output(item.base + item.entry)
                if let media = item.media { Console.output(item.base + media) }
            }
        }
        let files = sessions.compactMap { $0.source as? TSPlaybackSession }
        if Console.stderrIsTerminal, !files.isEmpty {
            Task { await showProgress(files) }
        }
        await waitForInterrupt()
        for item in sessions {
            await server.remove(item.source)
            (item.source as? TSPlaybackSession)?.close()
        }
        return 0
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

    /// Shows indexing progress on a terminal until every input is indexed.
    static func showProgress(_ sessions: [TSPlaybackSession]) async {
        while true {
            let fractions = sessions.map { session -> Double in
                guard let index = session.index else { return 0 }
                return index.isComplete ? 1 : Double(index.bytesIndexed) / Double(max(1, index.fileSize))
            }
            let done = fractions.allSatisfy { $0 >= 1 }
            let text = fractions.map { String(format: "%3.0f%%", $0 * 100) }.joined(separator: " ")
            FileHandle.standardError.write(Data("\rindexing \(text)\(done ? "\n" : "")".utf8))
            if done { return }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Returns when SIGINT or SIGTERM arrives.
    static func waitForInterrupt() async {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = OnceFlag()
            for number in [SIGINT, SIGTERM] {
                let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
                source.setEventHandler {
                    if once.claim() { continuation.resume() }
                }
                source.resume()
                SignalSources.keep(source)
            }
        }
    }
}

/// Keeps signal sources alive for the life of the process.
enum SignalSources {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    static func keep(_ source: any DispatchSourceSignal) { sources.append(source) }
}

/// True once, then false.
final class OnceFlag: Sendable {
    private let flag = LockedValue(false)
    func claim() -> Bool {
        flag.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }
}
