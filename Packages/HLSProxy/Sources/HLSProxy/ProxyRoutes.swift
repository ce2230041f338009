import FileRange
import Foundation
import FragmentedMP4
import HLSAdFilter
import HTTPClient
public import LoopbackHTTP
import MPEGTS

/// The ad-stripping proxy's routes, under its token: `master.m3u8` (the upstream URL), `p/<id>.m3u8` (playlists),
/// `s/<id>.<ext>` (segments and maps), `k/<id>.key` (keys), `r/<id>` (session data, steering),
/// `slate/<playlist>/<msn>.<ext>` and `slate/<playlist>/init.mp4` (slates).
extension AdStrippingProxy {
    /// Answers a request whose path starts with the token (also usable in process, without a server).
    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        guard let route = ProxyRoute(request.wildcardSegments) else { return .error(.notFound) }
        switch route {
        case .master, .playlist:
            guard let target = playlistTarget(route) else { return expired() }
            return await playlist(id: target.id, url: target.url)
        case .segment(let id):
            guard let entry = streams.lookup(id, kind: .segment) else { return expired() }
            return await segment(entry, request: request)
        case .key(let id):
            guard let entry = streams.lookup(id, kind: .key) else { return expired() }
            return await small(entry, contentType: "application/octet-stream")
        case .raw(let id):
            guard let entry = streams.lookup(id, kind: .raw) else { return expired() }
            return await small(entry, contentType: nil)
        case .slateInit(let playlist):
            let mapURI = streams.existing(playlist)?.state.withLock { $0.filter?.state.lastContentMap }
            let contentInit = await mapURI.asyncFlatMap { try? await self.contentInit($0) }
            guard let bytes = slates.fragmentedSlateInit(contentInit: contentInit) else { return .error(.notFound) }
            return .bytes(bytes, contentType: "video/mp4")
        case .slate(let playlist, let sequence):
            return await slate(playlist: playlist, msn: sequence)
        }
    }

    /// Answers a request from the server. A playlist poll is fetched, filtered and answered on a thread of
    /// FileRange's `BlockingPool` in one blocking socket call (two thread hand-offs in all: to the pool and back to
    /// the event loop); everything else, and a poll that needs the async path (https, a redirect, a retry), runs
    /// ``respond(to:)`` in a task.
    func answer(_ request: HTTPRequest, _ responder: HTTPResponder) {
        guard let route = ProxyRoute(request.wildcardSegments).flatMap(playlistTarget),
            fetcher.fetchesBlocking(route.url), route.id != nil || firstFetched.withLock({ $0 })
        else {
            Task { responder.respond(await self.respond(to: request)) }
            return
        }
        BlockingPool.shared.submit {
            var response: HTTPResponse?
            do throws(ProxyError) {
                if let (bytes, finalURL) = try self.fetcher.fetchPlaylistBytesBlocking(route.url) {
                    response = Self.playlistResponse(
                        try self.served(bytes: bytes, finalURL: finalURL, id: route.id, url: route.url))
                }
            } catch {
                response = self.failure(error)
            }
            if let response {
                responder.respond(response)
            } else {
                Task { responder.respond(await self.respond(to: request)) }
            }
        }
    }

    /// The playlist a route names: the upstream URL (`master`, no route ID) or a playlist route's URL; nil for any
    /// other route, or a playlist route that is unknown or expired.
    private func playlistTarget(_ route: ProxyRoute) -> (id: String?, url: String)? {
        switch route {
        case .master: return (nil, upstreamURL)
        case .playlist(let id): return streams.lookup(id, kind: .playlist).map { (id, $0) }
        default: return nil
        }
    }

    private func expired() -> HTTPResponse {
        .text("404 Not Found: this proxy route is unknown or expired\n", status: .notFound)
    }

    func failure(_ error: ProxyError) -> HTTPResponse {
        eventSink.yield(.upstreamError(error))
        let status: HTTPStatus = error.code == .timedOut ? HTTPStatus(code: 504) : .badGateway
        var response = HTTPResponse.text(
            "\(status.code) \(status.reasonPhrase): upstream \(error.code): \(error.detail)\n", status: status)
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    // MARK: Playlists

    private func playlist(id: String?, url: String) async -> HTTPResponse {
        do {
            // The stream's first fetch has its own, shorter deadline, retries included.
            let first = id == nil && !firstFetched.withLock { $0 }
            let (bytes, finalURL) =
                first ? try await fetcher.fetchFirstPlaylistBytes(url) : try await fetcher.fetchPlaylistBytes(url)
            if first { firstFetched.withLock { $0 = true } }
            return Self.playlistResponse(try served(bytes: bytes, finalURL: finalURL, id: id, url: url))
        } catch {
            return failure(error)
        }
    }

    static func playlistResponse(_ bytes: [UInt8]) -> HTTPResponse {
        var response = HTTPResponse.bytes(bytes, contentType: "application/vnd.apple.mpegurl")
        response.headers.add(name: "Cache-Control", value: "no-cache")
        return response
    }

    // MARK: Segments, keys, slates

    private func segment(_ url: String, request: HTTPRequest) async -> HTTPResponse {
        if segmentMode == .redirect {
            // The player follows the redirect itself, so it may be sent only where stream mode would fetch: an
            // http(s) URL on an address the policy allows (never `file:`, `gopher:` or a private address).
            do throws(ProxyError) {
                try fetcher.checkUpstream(url)
            } catch {
                return failure(error)
            }
            var response = HTTPResponse(status: .found)
            response.headers.add(name: "Location", value: url)
            return response
        }
        var headers: [(name: String, value: String)] = []
        if let range = request.headers["Range"] { headers.append((name: "Range", value: range)) }
        if let ifRange = request.headers["If-Range"] { headers.append((name: "If-Range", value: ifRange)) }
        let upstream: RemoteStream
        do {
            upstream = try await fetcher.open(url, headers: headers)
        } catch {
            return failure(error)
        }
        let status = upstream.head.status
        if let error = RemotePlaylistFetcher.statusError(status, url: url) {
            upstream.cancel()
            if status == 416 {
                var response = HTTPResponse.error(.rangeNotSatisfiable)
                if let cr = upstream.head.header("Content-Range") {
                    response.headers.add(name: "Content-Range", value: cr)
                }
                return response
            }
            return failure(error)
        }
        var response = HTTPResponse(status: HTTPStatus(code: status))
        let type = upstream.head.header("Content-Type") ?? ProxyURIs.contentType(for: url)
        response.headers.add(name: "Content-Type", value: type)
        if let contentRange = upstream.head.header("Content-Range") {
            response.headers.add(name: "Content-Range", value: contentRange)
        }
        let length = upstream.head.header("Content-Length").flatMap { UInt64($0) }
        response.body = upstream.relayBody(length: length)
        return response
    }

    /// A content init section (fMP4), fetched once and kept (a few, most recent).
    private func contentInit(_ url: String) async throws(ProxyError) -> [UInt8] {
        if let cached = streams.initSections.withLock({ $0[url] }) { return cached }
        let bytes = try await fetcher.fetchSmall(url, maxBytes: fetcher.options.maxSmallBodyBytes).1
        streams.initSections.withLock { sections in
            if sections.count >= 8 { sections.removeAll() }
            sections[url] = bytes
        }
        return bytes
    }

    private func small(_ url: String, contentType: String?) async -> HTTPResponse {
        do {
            let (head, bytes) = try await fetcher.fetchSmall(url, maxBytes: fetcher.options.maxSmallBodyBytes)
            let type = contentType ?? head.header("Content-Type") ?? "application/octet-stream"
            var response = HTTPResponse.bytes(bytes, contentType: type)
            response.headers.add(name: "Cache-Control", value: "no-cache")
            return response
        } catch {
            return failure(error)
        }
    }

    private func slate(playlist: String, msn: String) async -> HTTPResponse {
        guard let sequence = UInt64(msn) else { return .error(.notFound) }
        guard let stream = streams.existing(playlist) else { return expired() }
        let (slot, cached) = stream.state.withLock { ($0.filter?.slate(sequence), $0.slates[sequence]) }
        guard let slot else { return expired() }
        if let cached { return .bytes(cached, contentType: slot.isFragmentedMP4 ? "video/mp4" : "video/mp2t") }
        var anchor: [UInt8]?
        if let anchorURI = slot.anchorURI {
            anchor = try? await fetcher.fetchSmall(anchorURI, maxBytes: 64 << 20).1
        }
        if let encrypted = anchor, let keyURI = slot.anchorKeyURI, let iv = slot.anchorIV {
            // An AES-128 anchor is read in the clear (its key fetched like the player's, with the same headers).
            let key = try? await fetcher.fetchSmall(keyURI, maxBytes: 64).1
            anchor = key.flatMap { AES128.decryptCBC(encrypted, key: $0, iv: iv) }
        }
        let bytes: [UInt8]?
        let type: String
        if slot.isFragmentedMP4 {
            var anchorInit: [UInt8]?
            if let mapURI = slot.anchorMapURI { anchorInit = try? await contentInit(mapURI) }
            bytes = await slates.fragmentedSlate(for: slot, anchor: anchor, anchorInit: anchorInit)
            type = "video/mp4"
        } else {
            bytes = await slates.slate(for: slot, anchor: anchor)
            type = "video/mp2t"
        }
        guard let bytes else {
            return .text("503 Service Unavailable: no slate could be made for \(msn)\n", status: .serviceUnavailable)
        }
        // Once per playlist, with its first slate: say so when the slates cannot carry the content's audio.
        let check = stream.state.withLock { state in
            defer { state.slateAudioChecked = true }
            return !state.slateAudioChecked ? state.lastPoll?.url ?? playlist : nil
        }
        if let url = check, let reason = await slateAudioOmission(slot, anchor: anchor) {
            eventSink.yield(.slatesWithoutAudio(playlist: url, reason: reason))
        }
        stream.state.withLock { $0.keep(slate: bytes, sequence: sequence) }
        return .bytes(bytes, contentType: type)
    }
}

extension AdStrippingProxy {
    /// Why the default slates for `slot` carry no audio though its content has some (the codec named), or nil.
    func slateAudioOmission(_ slot: SlateSlot, anchor: [UInt8]?) async -> String? {
        guard slates is ProxySlateMaker else { return nil }
        if slot.isFragmentedMP4 {
            guard let mapURI = slot.anchorMapURI, let contentInit = try? await contentInit(mapURI) else { return nil }
            return FragmentedSlateTemplate.silentAudioUnavailable(initSection: contentInit)
        }
        guard let anchor else { return nil }
        return (try? SlateBuilder(continuing: anchor))?.audioOmitted
    }
}

/// A path under an ad-stripping proxy's token (`request.wildcardSegments`), parsed: the routes the proxy answers. A
/// route's file extension (`.ts`, `.m3u8`, `.key`) is for players only: the ID is the name up to its first dot.
enum ProxyRoute: Hashable {
    /// `master.m3u8`: the upstream URL itself.
    case master
    /// `p/<id>.m3u8`: a playlist the multivariant playlist names.
    case playlist(String)
    /// `s/<id>.<ext>`: a segment or an init section.
    case segment(String)
    /// `k/<id>.key`: a key.
    case key(String)
    /// `r/<id>`: session data or content steering, passed through.
    case raw(String)
    /// `slate/<playlist>/init.mp4`: the init section of a playlist's fMP4 slates.
    case slateInit(playlist: String)
    /// `slate/<playlist>/<msn>.<ext>`: the slate for one ad segment.
    case slate(playlist: String, sequence: String)

    /// The route of a path's segments; nil for a path the proxy does not answer.
    init?(_ parts: [String]) {
        switch (parts.first, parts.count) {
        case ("master.m3u8", 1): self = .master
        case ("p", 2): self = .playlist(Self.stem(parts[1]))
        case ("s", 2): self = .segment(Self.stem(parts[1]))
        case ("k", 2): self = .key(Self.stem(parts[1]))
        case ("r", 2): self = .raw(Self.stem(parts[1]))
        case ("slate", 3):
            self =
                parts[2] == "init.mp4"
                ? .slateInit(playlist: parts[1]) : .slate(playlist: parts[1], sequence: Self.stem(parts[2]))
        default: return nil
        }
    }

    /// A name up to its first dot.
    static func stem(_ name: String) -> String {
        guard let dot = name.firstIndex(of: ".") else { return name }
        return String(name[..<dot])
    }
}

extension Optional {
    func asyncFlatMap<U>(_ transform: (Wrapped) async -> U?) async -> U? {
        guard let value = self else { return nil }
        return await transform(value)
    }
}
