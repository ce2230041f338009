import CLIToolkit
import Foundation
import HLSAdFilter
import HLSPlaylist
import HLSProxy
import HTTPClient
import LoopbackHTTP

/// `tsplayer proxy`: an ad-stripping loopback proxy in front of a remote HLS stream.
enum ProxyCommand {
    static let command = Command(
        name: "tsplayer proxy", overview: "Proxy a remote HLS stream on a loopback port with its ads removed.",
        discussion: """
            Prints the local playlist URL first on stdout, then serves until interrupted. VOD ad breaks are removed;
            live ad segments are replaced by slates of the same duration. Upstream failures are logged on stderr.
            """,
        synopsis: [
            "tsplayer proxy <url> [-H <header>]... [--user-agent <ua>] [--referer <url>] [--mode <mode>] "
                + "[--port <port>] [--cors <origin>] [--explain] [--channel <channel>]",
            "tsplayer proxy <list> --all-channels [options]",
        ],
        arguments: [
            Argument(
                "<url>",
                help: "The stream's multivariant or media playlist (http or https); a Kodi suffix "
                    + "'|User-Agent=..&Referer=..' gives headers for every request. With --channel: an IPTV "
                    + "channel list (a file or an http(s) URL).")
        ],
        options: [
            .value(
                "--channel", value: "channel",
                help: "Proxy this channel of the list <url>: a title, tvg-name or tvg-id, a tvg-chno, or a "
                    + "position from 1; the headers the list gives it go on every upstream request."),
            .flag(
                "--all-channels",
                help: "Serve every channel of the list <url>: prints the URL of a local M3U list whose channels play "
                    + "through the proxy, each with the headers the list gives it."),
            .value(
                "-H", "--header", value: "header",
                help: "An extra request header, 'Name: value' (repeatable); sent with every request, credentials "
                    + "(Authorization, Cookie, Proxy-Authorization, --secret-header) only to <url>'s host."),
            .value("--user-agent", value: "ua", help: "The User-Agent for every upstream request."),
            .value("--referer", value: "url", help: "A Referer for every upstream request."),
            .value(
                "--mode", value: "mode",
                help: "stream (relay segments with the headers) or redirect (302 to the origin, which then gets no "
                    + "extra headers; only to what stream mode would fetch) (default: stream)."),
            .value(
                "--port", value: "port", help: "The loopback port to listen on (default: an ephemeral port).",
                expects: "a number from 0 to 65535", example: "8080"),
            .value(
                "--cors", value: "origin",
                help: "Allow a web player on this origin ('*' for any) to read every answer: playlists, segments, "
                    + "slates, errors.",
                expects: "'*' or an origin such as http://127.0.0.1:8000", example: "http://localhost:8000"),
            .flag("--explain", help: "Print each poll's decisions on stderr."),
            .flag("--allow-private", help: "Allow upstreams on loopback and private addresses."),
        ] + ParsedArguments.credentialOptions)

    static let subcommand = Subcommand(
        command: command, abstract: "Proxy a remote HLS stream with its ads removed.", run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed = command.parseOrExit(arguments)
        // Kodi's `url|User-Agent=..&Referer=..` headers, or those a channel list gives the --channel, go on every
        // upstream request; -H, --user-agent and --referer win over them. The list itself is read with those three.
        let listHeaders = parsed.userHeaders(command)
        let explain = parsed.flag("--explain")
        if parsed.flag("--all-channels") {
            if parsed.value("--channel") != nil {
                command.usageError("--all-channels cannot be combined with --channel")
            }
            return await ChannelListProxy.run(parsed, command, listHeaders: listHeaders, explain: explain)
        }
        let (url, urlHeaders) = await parsed.streamInput(
            command, listHeaders: listHeaders, allowPrivate: parsed.flag("--allow-private"))
        let options = proxyOptions(parsed, headers: urlHeaders)

        // The first fetch checks the door: a URL that answers with something other than a playlist stops here,
        // with one error. Other failures are the player's to see (the proxy answers 502 and says why), so the
        // proxy still starts; they are logged.
        // One try with a short timeout and the first fetch's deadline in all (however slowly the upstream trickles):
        // the door check must not hold the local URL back for long.
        var door = options.fetch
        door.retries = 0
        door.timeout = min(door.timeout, 5)
        door.deadline = min(door.deadline, door.firstFetchTimeout)
        do {
            let (_, bytes) = try await RemotePlaylistFetcher(options: door).fetchSmall(
                url, maxBytes: options.fetch.maxPlaylistBytes)
            if let message = PlaylistStart.check(bytes, complete: true).message {
                Output.error("\(url): \(message)")
                return ExitCode.unreadable
            }
        } catch {
            Output.log("warning: " + ErrorText.describe(error))
        }

        let proxy = AdStrippingProxy(url: url, options: options)
        let local: String
        do {
            local = try await proxy.start()
        } catch {
            Output.error(ErrorText.describe(error))
            return ErrorText.exitCode(error)
        }
        Output.line(local)
        let events = report(proxy, explain: explain)
        await Signals.waitForInterrupt()
        await proxy.stop()
        events.cancel()
        return ExitCode.success
    }

    /// The proxy's options from the command line, with `headers` (a URL suffix's or a channel's) on every upstream
    /// request; -H, --user-agent and --referer win over them.
    static func proxyOptions(_ parsed: ParsedArguments, headers: [(name: String, value: String)])
        -> AdStrippingProxy.Options
    {
        var options = AdStrippingProxy.Options()
        options.fetch.headers += headers.filter { $0.name.lowercased() != "user-agent" }
        options.fetch.headers += parsed.headers(command)
        options.fetch.userAgent =
            parsed.value("--user-agent") ?? headers.first { $0.name.lowercased() == "user-agent" }?.value
            ?? "tsplayer/\(Toolkit.version)"
        options.fetch.onRetry = ErrorText.showRetry
        if let referer = parsed.value("--referer") { options.fetch.headers.append((name: "Referer", value: referer)) }
        if let mode = parsed.value("--mode") {
            guard let m = AdStrippingProxy.SegmentMode(rawValue: mode) else {
                command.usageError("--mode must be 'stream' or 'redirect', not '\(mode)'")
            }
            options.segmentMode = m
        }
        if let port = parsed.port(command) { options.server.port = port }
        if let origin = parsed.checked(command, "--cors", corsOrigin) {
            options.server.cors = CORSOptions(allowedOrigin: origin)
        }
        options.fetch.allowPrivateUpstreams = parsed.flag("--allow-private")
        options.fetch.secretHeaders = parsed.secretHeaders(command)
        options.fetch.credentialHosts = parsed.credentialHosts(command)
        return options
    }

    /// Prints `proxy`'s events on stderr (each poll's decisions too with `explain`) until it stops.
    static func report(_ proxy: AdStrippingProxy, explain: Bool, label: String = "") -> Task<Void, Never> {
        Task {
            for await event in proxy.events {
                switch event {
                case .poll(let playlist, let decisions, let warnings):
                    for warning in warnings { Output.log("warning: \(label)\(warning)") }
                    if explain {
                        Output.log("poll \(label)\(playlist)")
                        for line in AdFilterCommand.explanation(decisions) { Output.log("  " + line) }
                    }
                case .stalled(let playlist, let seconds):
                    Output.log("stalled: \(label)\(playlist) has not changed for \(Int(seconds)) s")
                case .resumed(let playlist):
                    Output.log("resumed: \(label)\(playlist)")
                case .upstreamError(let error):
                    Output.log("upstream error: \(label)" + ErrorText.describe(error))
                case .slatesWithoutAudio(let playlist, let reason):
                    Output.log("warning: \(label)\(playlist): \(reason)")
                }
            }
        }
    }

    /// A `--cors` value: `*`, or an origin (`scheme://host[:port]`, nothing after it) that can go into a header as is.
    static func corsOrigin(_ text: String) -> String? {
        if text == "*" { return text }
        guard let separator = text.range(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound]
        let authority = text[separator.upperBound...]
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
            !authority.isEmpty,
            authority.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F && $0 != "/" })
        else { return nil }
        return text
    }
}
