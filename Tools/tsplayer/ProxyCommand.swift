import Foundation
import HLSAdFilter
import LoopbackHTTP
import TSPlayerKit

/// `tsplayer proxy`: an ad-stripping loopback proxy in front of a remote HLS stream.
enum ProxyCommand {
    static let usage = """
        OVERVIEW: Proxy a remote HLS stream on a loopback port with its ads removed.

        Prints the local playlist URL first on stdout, then serves until interrupted. VOD ad breaks are removed;
        live ad segments are replaced by slates of the same duration. Upstream failures are logged on stderr.

        USAGE: tsplayer proxy <url> [-H <header>]... [--user-agent <ua>] [--referer <url>] [--mode <mode>] [--port <port>] [--explain]

        ARGUMENTS:
          <url>                   The stream's multivariant or media playlist (http or https).

        OPTIONS:
          -H, --header <header>   An extra request header, 'Name: value' (repeatable); sent with every request.
          --user-agent <ua>       The User-Agent for every upstream request.
          --referer <url>         A Referer for every upstream request.
          --mode <mode>           stream (relay segments with the headers) or redirect (302 to the origin, which
                                  then gets no extra headers) (default: stream).
          --port <port>           The loopback port to listen on (default: an ephemeral port).
          --explain               Print each poll's decisions on stderr.
          --allow-private         Allow upstreams on loopback and private addresses.
          -h, --help              Show help information.

        """

    static let subcommand = Subcommand(
        name: "proxy", abstract: "Proxy a remote HLS stream with its ads removed.", usage: usage, run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        do {
            parsed = try ParsedArguments(
                arguments, valued: ["-H", "--header", "--user-agent", "--referer", "--mode", "--port"],
                flags: ["--explain", "--allow-private", "-h", "--help"])
        } catch {
            Console.usageError(error.message, usage: usage)
        }
        if parsed.flags.contains("-h") || parsed.flags.contains("--help") {
            print(usage, terminator: "")
            return 0
        }
        guard parsed.positionals.count == 1, let url = parsed.positionals.first else {
            Console.usageError(parsed.positionals.isEmpty ? "missing <url>" : "expected one <url>", usage: usage)
        }
        let scheme = url.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
        guard scheme == "http" || scheme == "https", URL(string: url)?.host != nil else {
            Console.usageError("<url> must be an absolute http or https URL", usage: usage)
        }
        var options = AdStrippingProxy.Options()
        for header in (parsed.values["-H"] ?? []) + (parsed.values["--header"] ?? []) {
            guard let colon = header.firstIndex(of: ":") else {
                Console.usageError("header '\(header)' is not 'Name: value'", usage: usage)
            }
            let name = header[..<colon].trimmingCharacters(in: .whitespaces)
            let value = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, !name.contains(" ") else {
                Console.usageError("header '\(header)' has no valid name", usage: usage)
            }
            options.fetch.headers.append((name: name, value: value))
        }
        if let ua = parsed.value("--user-agent") { options.fetch.userAgent = ua }
        if let referer = parsed.value("--referer") { options.fetch.headers.append((name: "Referer", value: referer)) }
        if let mode = parsed.value("--mode") {
            guard let m = AdStrippingProxy.SegmentMode(rawValue: mode) else {
                Console.usageError("--mode must be 'stream' or 'redirect'", usage: usage)
            }
            options.segmentMode = m
        }
        if let text = parsed.value("--port") {
            guard let port = UInt16(text) else { Console.usageError("invalid port '\(text)'", usage: usage) }
            options.server.port = port
        }
        options.fetch.allowPrivateUpstreams = parsed.flags.contains("--allow-private")
        let explain = parsed.flags.contains("--explain")

        let proxy = AdStrippingProxy(url: url, options: options)
        let local: String
        do {
            local = try await proxy.start()
        } catch {
            Console.error("\(error)")
            return 1
        }
        Console.output(local)
        let events = Task {
            for await event in proxy.events {
                switch event {
                case .poll(let playlist, let decisions, let warnings):
                    for warning in warnings { Console.log("warning: \(warning)") }
                    if explain {
                        Console.log("poll \(playlist)")
                        for line in AdFilterCommand.explanation(decisions) { Console.log("  " + line) }
                    }
                case .stalled(let playlist, let seconds):
                    Console.log("stalled: \(playlist) has not changed for \(Int(seconds)) s")
                case .resumed(let playlist):
                    Console.log("resumed: \(playlist)")
                case .upstreamError(let error):
                    Console.log("upstream error: \(error)")
                }
            }
        }
        await ServeCommand.waitForInterrupt()
        await proxy.stop()
        events.cancel()
        return 0
    }
}
