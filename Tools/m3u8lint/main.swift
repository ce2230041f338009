// m3u8lint: checks HLS playlists, dumps them as JSON, prints them canonically, reads IPTV channel lists.
import CLIToolkit
import FileRange
import HLSPlaylist

let command = Command(
    name: "m3u8lint",
    overview: "Check HLS playlists against RFC 8216bis and Apple's HLS authoring rules.",
    discussion: """
        Each finding is printed as FILE:LINE:COL: SEVERITY: message [RULE-ID] (spec section).
        Exit status: 0 no errors, 1 errors found (or warnings with --strict), 2 unreadable input or not a playlist,
        64 bad usage.
        """,
    arguments: [
        Argument("<input> ...", help: "A playlist file, - for standard input, or an http:// or https:// URL.")
    ],
    options: [
        .flag("--strict", help: "Treat warnings as failures (exit 1)."),
        .flag("--json", help: "Print findings as JSON, one object per input: {\"issues\":[...]}."),
        .value(
            "--previous", value: "file", help: "The previous poll of a live playlist; enables the live-update rules."),
        .flag("--dump-json", help: "Print the parsed, resolved playlist as JSON instead of linting."),
        .value(
            "--url", value: "url",
            help: "The playlist's URL, for resolving URIs and QUERYPARAM (default: the input URL)."),
        .value("--parent", value: "file", help: "The multivariant playlist, for EXT-X-DEFINE IMPORT."),
        .flag("--iptv-json", help: "Read an IPTV extended M3U channel list and print it as JSON."),
        .flag("--format", help: "Print the playlist in canonical form."),
        .value(
            "--timeout", value: "seconds",
            help: "The longest an http(s) fetch may take, redirects and retries included (default: 8).",
            expects: "seconds as a number", example: "10"),
        .value(
            "--benchmark", value: "n",
            help: "Parse (and resolve) the input n times in-process and report the time per parse.",
            expects: "a whole number of runs", example: "100"),
    ])

struct Options {
    var inputs: [String] = []
    var strict = false
    var json = false
    var previous: String?
    var dumpJSON = false
    var url: String?
    var parent: String?
    var iptvJSON = false
    var format = false
    var benchmark: Int?
    var timeout = Fetch.defaultTimeout
}

/// The options of a parsed command line; a combination that makes no sense is a usage error.
func readOptions(_ parsed: ParsedArguments) throws(UsageError) -> Options {
    var o = Options()
    o.inputs = parsed.positionals
    o.strict = parsed.flag("--strict")
    o.json = parsed.flag("--json")
    o.previous = parsed.value("--previous")
    o.dumpJSON = parsed.flag("--dump-json")
    o.url = parsed.value("--url")
    o.parent = parsed.value("--parent")
    o.iptvJSON = parsed.flag("--iptv-json")
    o.format = parsed.flag("--format")
    if let seconds = try parsed.number("--timeout") {
        guard seconds > 0, seconds <= 86_400 else {
            throw UsageError("'--timeout' needs a number of seconds above 0, not '\(parsed.value("--timeout") ?? "")'")
        }
        o.timeout = seconds
    }
    if let n = try parsed.integer("--benchmark", as: Int.self) {
        guard n > 0 else { throw UsageError("'--benchmark' needs a positive count, not '\(n)'") }
        o.benchmark = n
    }
    if o.inputs.isEmpty { throw UsageError("missing expected argument '<input> ...'") }
    let modes = [o.dumpJSON, o.iptvJSON, o.format].filter { $0 }.count
    if modes > 1 { throw UsageError("--dump-json, --iptv-json and --format cannot be combined") }
    if o.previous != nil, o.inputs.count != 1 { throw UsageError("--previous needs exactly one input") }
    return o
}

func isURL(_ s: String) -> Bool { s.hasPrefix("http://") || s.hasPrefix("https://") }

/// Reads a playlist; for URLs also returns the URL after redirects (the base for resolution). Input that is not a
/// playlist at all (binary, a `.ts` segment, an HTML page) is refused at the door with one error; text that starts
/// with a tag but not with `#EXTM3U` is a playlist with a bad header, which the linter reports (HLS-HEADER).
@MainActor func load(_ input: String) async throws(InputError) -> (bytes: [UInt8], url: String?) {
    let loaded: (bytes: [UInt8], url: String?)
    if isURL(input) {
        let fetched = try await Fetch.fetch(input, maxBytes: IO.maxBytes, timeout: options.timeout)
        loaded = (fetched.body, fetched.effectiveURL)
    } else {
        loaded = (try IO.readFile(input), nil)
    }
    if let message = PlaylistStart.check(loaded.bytes, complete: true).message, !startsWithTag(loaded.bytes) {
        throw .unreadable("\(displayName(input)): \(message)")
    }
    return loaded
}

/// Whether `bytes` start (after a byte order mark) with `#EXT`, the start of a tag.
func startsWithTag(_ bytes: [UInt8]) -> Bool {
    var body = bytes[...]
    if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
    return body.starts(with: Array("#EXT".utf8))
}

func displayName(_ input: String) -> String { input == "-" ? "<stdin>" : input }

let options: Options
do {
    options = try readOptions(command.parseOrExit(Command.processArguments()))
} catch {
    command.usageError(error.message)
}

/// Reads the parent playlist's variables for EXT-X-DEFINE IMPORT.
@MainActor func parentVariables() async -> Variables? {
    guard let parent = options.parent else { return nil }
    do {
        let loaded = try await load(parent)
        return try Playlist(bytes: loaded.bytes).multivariant(url: loaded.url).variables
    } catch let error as InputError {
        if case .unreadable(let m) = error { Output.line("Error: \(m)", to: 2) }
        ExitCode.exit(ExitCode.unreadable)
    } catch {
        Output.line("Error: \(displayName(parent)): \(error)", to: 2)
        ExitCode.exit(ExitCode.unreadable)
    }
}

@MainActor func runIPTV() async -> Int32 {
    var status: Int32 = 0
    for input in options.inputs {
        if isURL(input) {
            do {
                let bytes = try await Fetch.fetch(input, maxBytes: IO.maxBytes, timeout: options.timeout).body
                var parser = IPTVStreamParser()
                var j = ChannelStream()
                try streamIPTV(bytes[...], parser: &parser, json: &j, final: true)
                Output.write(bytes: j.out)
            } catch let e as InputError {
                if case .unreadable(let m) = e { Output.line("Error: \(m)", to: 2) }
                status = ExitCode.unreadable
            } catch {
                Output.line("Error: \(input): \(error)", to: 2)
                status = ExitCode.failure
            }
            continue
        }
        let reader: SequentialFileReader
        do {
            reader = try SequentialFileReader(path: input)
        } catch {
            Output.line("Error: \(input): \(error.errno.message)", to: 2)
            status = ExitCode.unreadable
            continue
        }
        defer { reader.close() }
        let iterations = options.benchmark ?? 1
        var totalBytes = 0
        var channels = 0
        let started = MonotonicClock.nanoseconds()
        let cpuStarted = ProcessUsage.cpuSeconds()
        for iteration in 0..<iterations {
            if iteration > 0 { try? reader.rewind() }
            var parser = IPTVStreamParser()
            var j = ChannelStream()
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            var began = false
            do {
                while true {
                    let read: Result<Int, FileSystemError> = chunk.withUnsafeMutableBytes { raw in
                        do throws(FileSystemError) {
                            return .success(try reader.read(into: raw))
                        } catch {
                            return .failure(error)
                        }
                    }
                    let n: Int
                    switch read {
                    case .success(let count): n = count
                    case .failure(let error): throw IO.unreadable(error)
                    }
                    if options.benchmark != nil {
                        if n == 0 {
                            try parser.finish { _ in channels += 1 }
                            break
                        }
                        try parser.consume(chunk[0..<n]) { _ in channels += 1 }
                        totalBytes += n
                        continue
                    }
                    if !began {
                        began = true
                    }
                    try streamIPTV(chunk[0..<n], parser: &parser, json: &j, final: n == 0)
                    Output.write(bytes: j.out)
                    j.out.removeAll(keepingCapacity: true)
                    if n == 0 { break }
                }
                for d in parser.diagnostics where options.benchmark == nil {
                    Output.line("\(displayName(input)):\(d.line):\(d.column): warning: \(d.message)", to: 2)
                }
            } catch let e as InputError {
                if case .unreadable(let m) = e { Output.line("Error: \(m)", to: 2) }
                status = ExitCode.unreadable
            } catch {
                Output.line("Error: \(displayName(input)): \(error)", to: 2)
                status = ExitCode.failure
            }
        }
        if let n = options.benchmark {
            let seconds = Double(MonotonicClock.nanoseconds() - started) / 1e9
            let cpu = ProcessUsage.cpuSeconds() - cpuStarted
            let mb = Double(totalBytes) / 1e6
            Output.line(
                "iptv bytes=\(totalBytes) channels=\(channels / n) seconds=\(seconds) cpu_seconds=\(cpu) "
                    + "mb_per_s=\(mb / seconds) mb_per_cpu_s=\(mb / cpu) peak_rss_kb=\(ProcessUsage.peakRSSKilobytes())"
            )
        }
    }
    return status
}

/// Streams one chunk of channels as JSON; the header goes out before the first channel.
/// `opened`/`first` live in the JSON writer's state between chunks.
func streamIPTV(_ chunk: ArraySlice<UInt8>, parser: inout IPTVStreamParser, json: inout ChannelStream, final: Bool)
    throws(PlaylistError)
{
    func open(_ parser: IPTVStreamParser, _ stream: inout ChannelStream) {
        guard !stream.opened else { return }
        stream.opened = true
        stream.first = true
        stream.writer.raw("{\"header\":")
        Dump.pairs(parser.header.attributes, &stream.writer)
        stream.writer.raw(",\"channels\":[")
    }
    var emitted: [IPTVChannel] = []
    try parser.consume(chunk) { emitted.append($0) }
    if final { try parser.finish { emitted.append($0) } }
    if !emitted.isEmpty || final { open(parser, &json) }
    for c in emitted {
        if !json.first { json.writer.raw(",") }
        json.first = false
        json.writer.raw("\n")
        Dump.channel(c, &json.writer)
    }
    if final {
        json.writer.raw("\n]}\n")
        json.opened = false
    }
}

/// The channel list as it streams out: one document whose channels are written as they are parsed, one compact
/// object per line (the house style for output that streams).
struct ChannelStream {
    var writer = JSONWriter(pretty: false)
    var opened = false
    var first = true
    var out: [UInt8] {
        get { writer.out }
        set { writer.out = newValue }
    }
}

@MainActor func runPlaylists() async -> Int32 {
    var status: Int32 = 0
    let parent = await parentVariables()
    var previous: Playlist?
    if let p = options.previous {
        do {
            previous = try Playlist(bytes: try await load(p).bytes)
        } catch let e as InputError {
            if case .unreadable(let m) = e { Output.line("Error: \(m)", to: 2) }
            return ExitCode.unreadable
        } catch {
            Output.line("Error: \(displayName(p)): \(error)", to: 2)
            return ExitCode.unreadable
        }
    }
    for input in options.inputs {
        let bytes: [UInt8]
        var fetchedURL: String?
        do {
            (bytes, fetchedURL) = try await load(input)
        } catch {
            if case .unreadable(let m) = error { Output.line("Error: \(m)", to: 2) }
            status = max(status, ExitCode.unreadable)
            continue
        }
        let url = options.url ?? fetchedURL
        let playlist: Playlist
        do {
            playlist = try Playlist(bytes: bytes)
        } catch {
            // Only the hostile-input caps throw in tolerant mode.
            Output.line("\(displayName(input)):\(error.line):\(error.column): error: \(error.message)", to: 2)
            status = max(status, ExitCode.unreadable)
            continue
        }
        if let n = options.benchmark {
            // Each run parses and resolves from the bytes; the fastest run and the median are reported
            // (the fastest is the least disturbed by other load on the machine).
            var sink = 0
            var totals: [Double] = []
            var parses: [Double] = []
            var withURIs: [Double] = []
            var uriBytes = 0
            for _ in 0..<n {
                let t0 = MonotonicClock.nanoseconds()
                do {
                    let p = try Playlist(bytes: bytes)
                    parses.append(Double(MonotonicClock.nanoseconds() - t0) / 1e6)
                    if p.kind == .multivariant {
                        sink &+= p.multivariant(url: url).variants.count
                    } else {
                        sink &+= p.media(url: url, parent: parent).segments.count
                    }
                } catch {
                    sink &+= 1
                }
                totals.append(Double(MonotonicClock.nanoseconds() - t0) / 1e6)
            }
            for _ in 0..<n {
                // Also every URI read as resolved text (built when first read): what a client that fetches the
                // segments pays, and what the Python peer's absolute_uri gives.
                let t0 = MonotonicClock.nanoseconds()
                if let p = try? Playlist(bytes: bytes) {
                    if p.kind == .multivariant {
                        for v in p.multivariant(url: url).variants { uriBytes &+= v.uri.utf8.count }
                    } else {
                        for s in p.media(url: url, parent: parent).segments { uriBytes &+= s.uri.utf8.count }
                    }
                }
                withURIs.append(Double(MonotonicClock.nanoseconds() - t0) / 1e6)
            }
            totals.sort()
            parses.sort()
            withURIs.sort()
            Output.line(
                "benchmark \(displayName(input)): parse+resolve min \(totals[0]) ms median \(totals[n / 2]) ms; "
                    + "parse min \(parses.first ?? 0) ms; with uris min \(withURIs[0]) ms median "
                    + "\(withURIs[n / 2]) ms (\(n) runs, \(sink / n) items, \(uriBytes / n) URI bytes)")
            continue
        }
        if options.format {
            Output.write(bytes: playlist.writeCanonical())
            continue
        }
        if options.dumpJSON {
            if playlist.kind == .multivariant {
                Output.write(bytes: Dump.multivariant(playlist.multivariant(url: url)))
            } else {
                Output.write(bytes: Dump.media(playlist.media(url: url, parent: parent)))
            }
            continue
        }
        let findings = PlaylistLinter(url: url, parent: parent).lint(playlist, previous: previous)
        if options.json {
            var j = JSONWriter()
            j.object { j in
                j.key("issues")
                j.array { j in
                    for f in findings {
                        j.element()
                        j.object { j in
                            j.key("severity")
                            j.string(f.severity.rawValue)
                            j.key("line")
                            j.number(f.line)
                            j.key("column")
                            j.number(f.column)
                            j.key("rule")
                            j.string(f.rule.id)
                            j.key("message")
                            j.string(f.message)
                            j.key("section")
                            j.string(f.section)
                        }
                    }
                }
            }
            j.raw("\n")
            Output.write(bytes: j.out)
        } else {
            var out = ""
            for f in findings {
                out +=
                    "\(displayName(input)):\(f.line):\(f.column): \(f.severity.rawValue): \(f.message) "
                    + "[\(f.rule.id)] (\(f.section))\n"
            }
            Output.write(bytes: Array(out.utf8))
        }
        let failing = findings.contains { $0.severity == .error || (options.strict && $0.severity == .warning) }
        if failing { status = max(status, ExitCode.failure) }
    }
    return status
}

ExitCode.exit(options.iptvJSON ? await runIPTV() : await runPlaylists())
