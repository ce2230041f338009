// `tsplayer proxy <list> --all-channels`: every channel of an IPTV list through the ad-stripping proxy. A local M3U
// list (`/<token>/channels.m3u`) names each channel as the source list does, its URL a route of this proxy
// (`/<token>/<n>/index.m3u8`); the first request for a channel starts its proxy, with the headers the list gives
// it, and is redirected (302) to that proxy's playlist. A list of thousands of channels costs nothing until played.
import CLIToolkit
import FileRange
import Foundation
import HLSPlaylist
import HLSProxy
import HTTPClient
import LoopbackHTTP

final class ChannelListProxy: PlaybackSource {
    let token = SessionToken.random()
    /// The channels served, by position in the source list (from 1); channels without an http(s) URL are left out.
    let channels: [Int: IPTVChannel]
    /// Each channel's proxy options.
    let options: @Sendable (IPTVChannel) -> AdStrippingProxy.Options
    let explain: Bool
    private let local = LockedValue<[UInt8]>([])
    private let proxies = LockedValue<[Int: (proxy: AdStrippingProxy, events: Task<Void, Never>)]>([:])

    init(
        channels: [Int: IPTVChannel], explain: Bool,
        options: @escaping @Sendable (IPTVChannel) -> AdStrippingProxy.Options
    ) {
        self.channels = channels
        self.explain = explain
        self.options = options
    }

    var answersLater: Bool { true }
    func prepare() {}
    func respond(to request: HTTPRequest) -> HTTPResponse { .error(.serviceUnavailable) }

    func answer(_ request: HTTPRequest, _ responder: HTTPResponder) {
        let path = request.wildcardSegments
        if path == ["channels.m3u"] {
            return responder.respond(.bytes(local.withLock { $0 }, contentType: "audio/x-mpegurl"))
        }
        guard path.count == 2, path[1] == "index.m3u8", let n = Int(path[0]), let channel = channels[n] else {
            return responder.respond(.error(.notFound))
        }
        let proxy = proxies.withLock { started in
            if let existing = started[n] { return existing.proxy }
            let proxy = AdStrippingProxy(url: channel.url, options: options(channel))
            started[n] = (proxy, ProxyCommand.report(proxy, explain: explain, label: "channel \(n): "))
            return proxy
        }
        // Registering takes the server's lock: off the event loop.
        Task {
            do {
                let url = try proxy.startServer()
                responder.respond(HTTPResponse(status: .found, headers: ["Location": url]))
            } catch {
                responder.respond(.text("502 Bad Gateway: \(ErrorText.describe(error))\n", status: .badGateway))
            }
        }
    }

    /// Stops every channel's proxy that was started.
    func stopAll() async {
        let started = proxies.withLock { started in
            defer { started = [:] }
            return Array(started.values)
        }
        for (proxy, events) in started {
            await proxy.stop()
            events.cancel()
        }
    }

    /// The local list: the source's header line, each served channel as the source names it (EXTINF attributes,
    /// title, group) with its URL on this proxy; no header options (the proxy sends them).
    static func localList(_ list: IPTVPlaylist, channels: [Int: IPTVChannel], base: String) -> [UInt8] {
        var out = list
        out.channels = channels.keys.sorted().compactMap { n in
            guard let channel = channels[n] else { return nil }
            var attributes = channel.attributes
            if let group = channel.group, channel["group-title"] == nil {
                attributes.append((name: "group-title", value: group))
            }
            var local = IPTVChannel(
                name: channel.name, url: base + "\(n)/index.m3u8", duration: channel.duration, attributes: attributes)
            // Attribute names as the source list spells them (`TVG-ID` stays `TVG-ID`).
            local.attributeSpellings = channel.attributeSpellings
            return local
        }
        out.trailingLines = []
        if out.header.line == nil {
            return Array("#EXTM3U\n".utf8) + out.write()
        }
        return out.write()
    }

    /// Runs `tsplayer proxy <list> --all-channels` until interrupted.
    static func run(_ parsed: ParsedArguments, _ command: Command, listHeaders: HTTPHeaders, explain: Bool) async
        -> Int32
    {
        // The options are checked before the list is read.
        let configuration = ProxyCommand.proxyOptions(parsed, headers: [])
        guard parsed.positionals.count == 1, let source = parsed.positionals.first else {
            command.usageError(parsed.positionals.isEmpty ? "missing <url>: the channel list" : "expected one <url>")
        }
        let list: IPTVPlaylist
        do {
            list = try await ChannelList.load(
                source, headers: listHeaders, allowPrivate: parsed.flag("--allow-private"))
        } catch {
            Output.error(error.message)
            return ExitCode.unreadable
        }
        var channels: [Int: IPTVChannel] = [:]
        for (offset, channel) in list.channels.enumerated() {
            let scheme = channel.url.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
            guard scheme == "http" || scheme == "https", URL(string: channel.url)?.host != nil else {
                Output.log(
                    "warning: channel '\(channel.name)' (line \(channel.lineNumber)) has no absolute http or https "
                        + "URL; left out")
                continue
            }
            channels[offset + 1] = channel
        }
        let server = PlaybackServer.shared
        let proxy = ChannelListProxy(channels: channels, explain: explain) { channel in
            ProxyCommand.proxyOptions(parsed, headers: channel.requestHeaders)
        }
        let base: String
        do {
            base = try server.register(proxy, startingWith: configuration.server)
        } catch {
            Output.error("cannot start the proxy: \(error)")
            return ExitCode.failure
        }
        proxy.local.withLock { $0 = localList(list, channels: channels, base: base) }
        Output.line(base + "channels.m3u")
        await Signals.waitForInterrupt()
        await proxy.stopAll()
        await server.remove(proxy)
        return ExitCode.success
    }
}
