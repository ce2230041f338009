import Foundation
import LoopbackHTTP
import TSPlayerKit

/// `tsplayer cache-proxy`: a loopback URL for a remote media file that needs headers, cached on disk by byte range.
enum CacheProxyCommand {
    static let usage = """
        OVERVIEW: Serve a remote media file on a loopback port, with request headers, cached on disk.

        Prints the local URL first on stdout, then serves until interrupted. Bytes already cached are served from
        disk (also when the origin is unreachable); the gaps are fetched with the given headers and cached.

        USAGE: tsplayer cache-proxy <url> [-H <header>]... [--cache-dir <dir>] [--max-size <size>] [--port <port>]
               tsplayer cache-proxy --list [--cache-dir <dir>] [--json]

        ARGUMENTS:
          <url>                   The remote file (http or https): mp3, m4a, mp4, aac, flac, a single .ts.

        OPTIONS:
          -H, --header <header>   An extra request header, 'Name: value' (repeatable); sent with every request.
          --cache-dir <dir>       The cache folder (default: $XDG_CACHE_HOME/tsplayer/media, else
                                  ~/.cache/tsplayer/media; on macOS ~/Library/Caches/tsplayer/media).
          --max-size <size>       The cache's size budget, in bytes or with K, M, G (default: 2G); whole least
                                  recently used files are evicted beyond it.
          --port <port>           The loopback port to listen on (default: an ephemeral port).
          --allow-private         Allow origins on loopback and private addresses.
          --list                  List what the cache holds: fraction held, size in bytes, URL.
          --json                  With --list, print JSON.
          -h, --help              Show help information.

        """

    static let subcommand = Subcommand(
        name: "cache-proxy", abstract: "Serve a remote media file with headers, cached on disk.", usage: usage,
        run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        do {
            parsed = try ParsedArguments(
                arguments, valued: ["-H", "--header", "--cache-dir", "--max-size", "--port"],
                flags: ["--list", "--json", "--allow-private", "-h", "--help"])
        } catch {
            Console.usageError(error.message, usage: usage)
        }
        if parsed.flags.contains("-h") || parsed.flags.contains("--help") {
            print(usage, terminator: "")
            return 0
        }
        let directory = parsed.value("--cache-dir") ?? defaultDirectory()
        if parsed.flags.contains("--list") {
            guard parsed.positionals.isEmpty else { Console.usageError("--list takes no <url>", usage: usage) }
            return list(directory, json: parsed.flags.contains("--json"))
        }
        guard parsed.positionals.count == 1, let url = parsed.positionals.first else {
            Console.usageError(parsed.positionals.isEmpty ? "missing <url>" : "expected one <url>", usage: usage)
        }
        let scheme = url.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
        guard scheme == "http" || scheme == "https", URL(string: url)?.host != nil else {
            Console.usageError("<url> must be an absolute http or https URL", usage: usage)
        }
        var options = CachingMediaProxy.Options(cacheDirectory: directory)
        var headers: [(name: String, value: String)] = []
        for header in (parsed.values["-H"] ?? []) + (parsed.values["--header"] ?? []) {
            guard let colon = header.firstIndex(of: ":") else {
                Console.usageError("header '\(header)' is not 'Name: value'", usage: usage)
            }
            let name = header[..<colon].trimmingCharacters(in: .whitespaces)
            let value = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, !name.contains(" ") else {
                Console.usageError("header '\(header)' has no valid name", usage: usage)
            }
            headers.append((name: name, value: value))
        }
        if let text = parsed.value("--max-size") {
            guard let size = parseSize(text) else { Console.usageError("invalid size '\(text)'", usage: usage) }
            options.maxCacheBytes = size
        }
        if let text = parsed.value("--port") {
            guard let port = UInt16(text) else { Console.usageError("invalid port '\(text)'", usage: usage) }
            options.server.port = port
        }
        options.fetch.allowPrivateUpstreams = parsed.flags.contains("--allow-private")

        let proxy: CachingMediaProxy
        let local: String
        do {
            proxy = try CachingMediaProxy(options: options)
            local = try await proxy.localURL(for: url, headers: headers)
        } catch {
            Console.error("\(error)")
            return 1
        }
        Console.output(local)
        await ServeCommand.waitForInterrupt()
        await proxy.stop()
        return 0
    }

    /// Prints the cache's resources: `HELD  SIZE  URL` (fraction held as a percentage, complete length in bytes).
    static func list(_ directory: String, json: Bool) -> Int32 {
        let resources = CachingMediaProxy.cachedResources(in: directory)
        if json {
            let objects: [[String: Any]] = resources.map { resource in
                var object: [String: Any] = [
                    "url": resource.url, "heldBytes": resource.heldBytes, "fractionHeld": resource.fractionHeld,
                ]
                if let length = resource.length { object["length"] = length }
                return object
            }
            guard
                let data = try? JSONSerialization.data(
                    withJSONObject: objects, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            else { return 1 }
            Console.output(String(decoding: data, as: UTF8.self))
            return 0
        }
        Console.output("HELD    SIZE        URL")
        for resource in resources {
            let percent = String(format: "%5.1f%%", resource.fractionHeld * 100)
            let size = resource.length.map(String.init) ?? "?"
            Console.output(
                percent + "  " + size.padding(toLength: max(10, size.count), withPad: " ", startingAt: 0) + "  "
                    + resource.url)
        }
        return 0
    }

    /// `123`, `64K`, `500M`, `2G` (powers of 1024).
    static func parseSize(_ text: String) -> UInt64? {
        let units: [Character: UInt64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        var digits = text.uppercased()
        var multiplier: UInt64 = 1
        if digits.hasSuffix("B") { digits.removeLast() }
        if let last = digits.last, let unit = units[last] {
            multiplier = unit
            digits.removeLast()
        }
        guard let value = UInt64(digits) else { return nil }
        let (product, overflow) = value.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : product
    }

    static func defaultDirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty { return xdg + "/tsplayer/media" }
        #if canImport(Darwin)
            // Apple's place for caches a program can rebuild (File System Programming Guide: Library/Caches).
            if let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first {
                return caches.appendingPathComponent("tsplayer/media").path
            }
        #endif
        return NSHomeDirectory() + "/.cache/tsplayer/media"
    }
}
