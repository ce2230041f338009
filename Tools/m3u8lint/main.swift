// m3u8lint: checks HLS playlists, dumps them as JSON, prints them canonically, reads IPTV channel lists.
import HLSPlaylist

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let toolVersion = "1.0.0"

let usage =
    "USAGE: m3u8lint [--strict] [--json] [--previous <file>] [--dump-json [--url <url>] [--parent <file>]] "
    + "[--iptv-json] [--format] [--timeout <seconds>] <input> ..."

let help = """
    OVERVIEW: Check HLS playlists against RFC 8216bis and Apple's HLS authoring rules.

    Each finding is printed as FILE:LINE:COL: SEVERITY: message [RULE-ID] (spec section).
    Exit status: 0 no errors, 1 errors found (or warnings with --strict), 2 unreadable input, 64 bad usage.

    \(usage)

    ARGUMENTS:
      <input>                 A playlist file, - for standard input, or an http:// or https:// URL.

    OPTIONS:
      --strict                Treat warnings as failures (exit 1).
      --json                  Print findings as JSON, one object per input: {"issues":[...]}.
      --previous <file>       The previous poll of a live playlist; enables the live-update rules.
      --dump-json             Print the parsed, resolved playlist as JSON instead of linting.
      --url <url>             The playlist's URL, for resolving URIs and QUERYPARAM (default: the input URL).
      --parent <file>         The multivariant playlist, for EXT-X-DEFINE IMPORT.
      --iptv-json             Read an IPTV extended M3U channel list and print it as JSON.
      --format                Print the playlist in canonical form.
      --timeout <seconds>     The longest an http(s) fetch may take, redirects and retries included
                              (default: 10).
      --benchmark <n>         Parse (and resolve) the input n times in-process and report the time per parse.
      --version               Show the version.
      -h, --help              Show help information.

    """

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

func usageError(_ message: String) -> Never {
    IO.print("Error: \(message)\n\(usage)\n  See 'm3u8lint --help' for more information.", to: 2)
    exit(64)
}

func parseArguments(_ args: [String]) -> Options {
    var o = Options()
    var i = 0
    func value(_ name: String) -> String {
        i += 1
        guard i < args.count else { usageError("missing value for '\(name)'") }
        return args[i]
    }
    var onlyInputs = false
    while i < args.count {
        let a = args[i]
        if onlyInputs || a == "-" || !a.hasPrefix("-") {
            o.inputs.append(a)
        } else {
            switch a {
            case "--": onlyInputs = true
            case "-h", "--help":
                IO.write(Array(help.utf8))
                exit(0)
            case "--version":
                IO.print(toolVersion)
                exit(0)
            case "--strict": o.strict = true
            case "--json": o.json = true
            case "--previous": o.previous = value(a)
            case "--dump-json": o.dumpJSON = true
            case "--url": o.url = value(a)
            case "--parent": o.parent = value(a)
            case "--iptv-json": o.iptvJSON = true
            case "--format": o.format = true
            case "--timeout":
                let v = value(a)
                guard let seconds = Double(v), seconds > 0, seconds <= 86_400 else {
                    usageError("'--timeout' needs a number of seconds above 0, not '\(v)'")
                }
                o.timeout = seconds
            case "--benchmark":
                let v = value(a)
                guard let n = Int(v), n > 0 else { usageError("'--benchmark' needs a positive count, not '\(v)'") }
                o.benchmark = n
            default: usageError("unknown option '\(a)'")
            }
        }
        i += 1
    }
    if o.inputs.isEmpty { usageError("missing expected argument '<input> ...'") }
    let modes = [o.dumpJSON, o.iptvJSON, o.format].filter { $0 }.count
    if modes > 1 { usageError("--dump-json, --iptv-json and --format cannot be combined") }
    if o.url != nil || o.parent != nil, !o.dumpJSON, o.benchmark == nil, o.previous == nil {
        // --url and --parent also apply to linting (resolution of variables); allowed.
    }
    if o.previous != nil, o.inputs.count != 1 { usageError("--previous needs exactly one input") }
    return o
}

func isURL(_ s: String) -> Bool { s.hasPrefix("http://") || s.hasPrefix("https://") }

/// Reads an input; for URLs also returns the URL after redirects (the base for resolution).
func load(_ input: String) throws(InputError) -> (bytes: [UInt8], url: String?) {
    if isURL(input) {
        let fetched = try Fetch.fetch(input, maxBytes: IO.maxBytes, timeout: options.timeout)
        return (fetched.body, fetched.effectiveURL)
    }
    return (try IO.readFile(input), nil)
}

func displayName(_ input: String) -> String { input == "-" ? "<stdin>" : input }

let options = parseArguments(Array(CommandLine.arguments.dropFirst()))

/// Reads the parent playlist's variables for EXT-X-DEFINE IMPORT.
func parentVariables() -> Variables? {
    guard let parent = options.parent else { return nil }
    do {
        let loaded = try load(parent)
        return try Playlist(bytes: loaded.bytes).multivariant(url: loaded.url).variables
    } catch let error as InputError {
        if case .unreadable(let m) = error { IO.print("Error: \(m)", to: 2) }
        exit(2)
    } catch {
        IO.print("Error: \(displayName(parent)): \(error)", to: 2)
        exit(2)
    }
}

func runIPTV() -> Int32 {
    var status: Int32 = 0
    for input in options.inputs {
        let fd: Int32
        if isURL(input) {
            do {
                let bytes = try Fetch.fetch(input, maxBytes: IO.maxBytes, timeout: options.timeout).body
                var parser = IPTVStreamParser()
                var j = JSONWriter()
                try streamIPTV(bytes[...], parser: &parser, json: &j, final: true)
                IO.write(j.out)
            } catch let e as InputError {
                if case .unreadable(let m) = e { IO.print("Error: \(m)", to: 2) }
                status = 2
            } catch {
                IO.print("Error: \(input): \(error)", to: 2)
                status = 1
            }
            continue
        }
        fd = input == "-" ? 0 : open(input, O_RDONLY)
        guard fd >= 0 else {
            IO.print("Error: \(input): \(String(cString: strerror(errno)))", to: 2)
            status = 2
            continue
        }
        defer { if fd != 0 { close(fd) } }
        let iterations = options.benchmark ?? 1
        var totalBytes = 0
        var channels = 0
        let started = IO.monotonicNanoseconds()
        let cpuStarted = IO.cpuSeconds()
        for iteration in 0..<iterations {
            if iteration > 0 { lseek(fd, 0, SEEK_SET) }
            var parser = IPTVStreamParser()
            var j = JSONWriter()
            var chunk = [UInt8](repeating: 0, count: 1 << 20)
            var began = false
            do {
                while true {
                    let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw InputError.unreadable("\(input): \(String(cString: strerror(errno)))")
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
                    IO.write(j.out)
                    j.out.removeAll(keepingCapacity: true)
                    if n == 0 { break }
                }
                for d in parser.diagnostics where options.benchmark == nil {
                    IO.print("\(displayName(input)):\(d.line):\(d.column): warning: \(d.message)", to: 2)
                }
            } catch let e as InputError {
                if case .unreadable(let m) = e { IO.print("Error: \(m)", to: 2) }
                status = 2
            } catch {
                IO.print("Error: \(displayName(input)): \(error)", to: 2)
                status = 1
            }
        }
        if let n = options.benchmark {
            let seconds = Double(IO.monotonicNanoseconds() - started) / 1e9
            let cpu = IO.cpuSeconds() - cpuStarted
            let mb = Double(totalBytes) / 1e6
            IO.print(
                "iptv bytes=\(totalBytes) channels=\(channels / n) seconds=\(seconds) cpu_seconds=\(cpu) "
                    + "mb_per_s=\(mb / seconds) mb_per_cpu_s=\(mb / cpu) peak_rss_kb=\(IO.peakRSSKilobytes())")
        }
    }
    return status
}

/// Streams one chunk of channels as JSON; the header goes out before the first channel.
/// `opened`/`first` live in the JSON writer's state between chunks.
func streamIPTV(_ chunk: ArraySlice<UInt8>, parser: inout IPTVStreamParser, json: inout JSONWriter, final: Bool)
    throws(PlaylistError)
{
    func open(_ parser: IPTVStreamParser, _ j: inout JSONWriter) {
        guard !j.streamOpened else { return }
        j.streamOpened = true
        j.streamFirst = true
        j.raw("{\"header\":")
        Dump.pairs(parser.header.attributes, &j)
        j.raw(",\"channels\":[")
    }
    var emitted: [IPTVChannel] = []
    try parser.consume(chunk) { emitted.append($0) }
    if final { try parser.finish { emitted.append($0) } }
    if !emitted.isEmpty || final { open(parser, &json) }
    for c in emitted {
        if !json.streamFirst { json.raw(",") }
        json.streamFirst = false
        json.raw("\n")
        Dump.channel(c, &json)
    }
    if final {
        json.raw("\n]}\n")
        json.streamOpened = false
    }
}

func runPlaylists() -> Int32 {
    var status: Int32 = 0
    let parent = parentVariables()
    var previous: Playlist?
    if let p = options.previous {
        do {
            previous = try Playlist(bytes: try load(p).bytes)
        } catch let e as InputError {
            if case .unreadable(let m) = e { IO.print("Error: \(m)", to: 2) }
            return 2
        } catch {
            IO.print("Error: \(displayName(p)): \(error)", to: 2)
            return 2
        }
    }
    for input in options.inputs {
        let bytes: [UInt8]
        var fetchedURL: String?
        do {
            (bytes, fetchedURL) = try load(input)
        } catch {
            if case .unreadable(let m) = error { IO.print("Error: \(m)", to: 2) }
            status = max(status, 2)
            continue
        }
        let url = options.url ?? fetchedURL
        let playlist: Playlist
        do {
            playlist = try Playlist(bytes: bytes)
        } catch {
            // Only the hostile-input caps throw in tolerant mode.
            IO.print("\(displayName(input)):\(error.line):\(error.column): error: \(error.message)", to: 2)
            status = max(status, 2)
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
                let t0 = IO.monotonicNanoseconds()
                do {
                    let p = try Playlist(bytes: bytes)
                    parses.append(Double(IO.monotonicNanoseconds() - t0) / 1e6)
                    if p.kind == .multivariant {
                        sink &+= p.multivariant(url: url).variants.count
                    } else {
                        sink &+= p.media(url: url, parent: parent).segments.count
                    }
                } catch {
                    sink &+= 1
                }
                totals.append(Double(IO.monotonicNanoseconds() - t0) / 1e6)
            }
            for _ in 0..<n {
                // Also every URI read as resolved text (built when first read): what a client that fetches the
                // segments pays, and what the Python peer's absolute_uri gives.
                let t0 = IO.monotonicNanoseconds()
                if let p = try? Playlist(bytes: bytes) {
                    if p.kind == .multivariant {
                        for v in p.multivariant(url: url).variants { uriBytes &+= v.uri.utf8.count }
                    } else {
                        for s in p.media(url: url, parent: parent).segments { uriBytes &+= s.uri.utf8.count }
                    }
                }
                withURIs.append(Double(IO.monotonicNanoseconds() - t0) / 1e6)
            }
            totals.sort()
            parses.sort()
            withURIs.sort()
            IO.print(
                "benchmark \(displayName(input)): parse+resolve min \(totals[0]) ms median \(totals[n / 2]) ms; "
                    + "parse min \(parses.first ?? 0) ms; with uris min \(withURIs[0]) ms median "
                    + "\(withURIs[n / 2]) ms (\(n) runs, \(sink / n) items, \(uriBytes / n) URI bytes)")
            continue
        }
        if options.format {
            IO.write(playlist.writeCanonical())
            continue
        }
        if options.dumpJSON {
            if playlist.kind == .multivariant {
                IO.write(Dump.multivariant(playlist.multivariant(url: url)))
            } else {
                IO.write(Dump.media(playlist.media(url: url, parent: parent)))
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
            IO.write(j.out)
        } else {
            var out = ""
            for f in findings {
                out +=
                    "\(displayName(input)):\(f.line):\(f.column): \(f.severity.rawValue): \(f.message) "
                    + "[\(f.rule.id)] (\(f.section))\n"
            }
            IO.write(Array(out.utf8))
        }
        let failing = findings.contains { $0.severity == .error || (options.strict && $0.severity == .warning) }
        if failing { status = max(status, 1) }
    }
    return status
}

exit(options.iptvJSON ? runIPTV() : runPlaylists())
