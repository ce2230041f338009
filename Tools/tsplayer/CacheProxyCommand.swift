import CLIToolkit
import Foundation
import HTTPClient
import LoopbackHTTP
import MediaCache

/// `tsplayer cache-proxy`: a loopback URL for a remote media file that needs headers, cached on disk by byte range.
enum CacheProxyCommand {
    static let command = Command(
        name: "tsplayer cache-proxy",
        overview: "Serve a remote media file on a loopback port, with request headers, cached on disk.",
        discussion: """
            Prints the local URL first on stdout, then serves until interrupted. Bytes already cached are served from
            disk (also when the origin is unreachable); the gaps are fetched with the given headers and cached.
            """,
        synopsis: [
            "tsplayer cache-proxy <url> [-H <header>]... [--cache-dir <dir>] [--max-size <size>] [--port <port>]"
                + " [--cors <origin>]",
            "tsplayer cache-proxy --list [--cache-dir <dir>] [--json]",
        ],
        arguments: [
            Argument("<url>", help: "The remote file (http or https): mp3, m4a, mp4, aac, flac, a single .ts.")
        ],
        options: [
            .value(
                "-H", "--header", value: "header",
                help: "An extra request header, 'Name: value' (repeatable); sent with every request, credentials "
                    + "(Authorization, Cookie, Proxy-Authorization, --secret-header) only to <url>'s host."),
            .value(
                "--cache-dir", value: "dir",
                help: "The cache folder (default: $XDG_CACHE_HOME/tsplayer/media, else ~/.cache/tsplayer/media; on "
                    + "macOS ~/Library/Caches/tsplayer/media)."),
            .value(
                "--max-size", value: "size",
                help: "The cache's size budget, in bytes or with K, M, G (default: 2G); whole least recently used "
                    + "files are evicted beyond it, and a file larger than the budget is streamed through uncached.",
                expects: "a size in bytes or with K, M, G, T", example: "500M"),
            .value(
                "--port", value: "port", help: "The loopback port to listen on (default: an ephemeral port).",
                expects: "a number from 0 to 65535", example: "8080"),
            .value(
                "--cors", value: "origin", help: "Allow a web player on this origin ('*' for any) to read the file.",
                expects: "'*' or an origin such as http://127.0.0.1:8000", example: "http://localhost:8000"),
            .flag("--allow-private", help: "Allow origins on loopback and private addresses."),
            .flag("--list", help: "List what the cache holds: fraction held, size in bytes, URL."),
            .flag("--json", help: "With --list, print JSON."),
        ] + ParsedArguments.credentialOptions)

    static let subcommand = Subcommand(
        command: command, abstract: "Serve a remote media file with headers, cached on disk.", run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed = command.parseOrExit(arguments)
        let directory = parsed.value("--cache-dir") ?? defaultDirectory()
        if parsed.flag("--list") {
            guard parsed.positionals.isEmpty else { command.usageError("--list takes no <url>") }
            return list(directory, json: parsed.flag("--json"))
        }
        let url = parsed.httpURL(command)
        var options = CachingMediaProxy.Options(cacheDirectory: directory)
        let headers = parsed.headers(command)
        if let size = parsed.checked(command, "--max-size", parseSize) { options.maxCacheBytes = size }
        if let port = parsed.port(command) { options.server.port = port }
        if let origin = parsed.checked(command, "--cors", ProxyCommand.corsOrigin) {
            options.server.cors = CORSOptions(allowedOrigin: origin)
        }
        options.fetch.allowPrivateUpstreams = parsed.flag("--allow-private")
        options.fetch.secretHeaders = parsed.secretHeaders(command)
        options.fetch.credentialHosts = parsed.credentialHosts(command)
        options.fetch.onRetry = ErrorText.showRetry

        let proxy: CachingMediaProxy
        let local: String
        do {
            proxy = try CachingMediaProxy(options: options)
            local = try await proxy.localURL(for: url, headers: headers)
        } catch {
            Output.error(ErrorText.describe(error))
            return ErrorText.exitCode(error)
        }
        Output.line(local)
        await Signals.waitForInterrupt()
        await proxy.stop()
        return ExitCode.success
    }

    /// Prints the cache's resources: `HELD  SIZE  URL` (fraction held as a percentage, complete length in bytes).
    static func list(_ directory: String, json: Bool) -> Int32 {
        let resources = CachingMediaProxy.cachedResources(in: directory)
        if json {
            let objects: [JSON] = resources.map { resource in
                var object: [(String, JSON)] = [
                    ("url", .string(resource.url)), ("heldBytes", .int(resource.heldBytes)),
                    ("fractionHeld", .double(resource.fractionHeld)),
                ]
                if let length = resource.length { object.append(("length", .int(length))) }
                return .object(object)
            }
            Output.line(JSON.array(objects).render())
            return ExitCode.success
        }
        Output.line("HELD    SIZE        URL")
        for resource in resources {
            let percent = String(format: "%5.1f%%", resource.fractionHeld * 100)
            let size = resource.length.map(String.init) ?? "?"
            Output.line(
                percent + "  " + size.padding(toLength: max(10, size.count), withPad: " ", startingAt: 0) + "  "
                    + resource.url)
        }
        return ExitCode.success
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
