import Foundation
public import HLSPlaylist
public import HTTPClient
import LoopbackHTTP

// The playlist-specific and server-specific part of the origin-fetching layer, whose generic part
// (`RemotePlaylistFetcher`, `RemoteFetchOptions`, `RemoteStream`, `ProxyError`) is HTTPClient's, so that the caching
// proxy (MediaCache) fetches without depending on this package.

/// A playlist fetched from upstream.
public struct FetchedPlaylist: Sendable {
    public var bytes: [UInt8]
    public var playlist: Playlist
    /// The URL after redirects (relative URIs resolve against it).
    public var url: String
}

extension RemotePlaylistFetcher {
    /// Fetches and parses a playlist. A 2xx body that does not start with `#EXTM3U` (after an optional BOM and
    /// whitespace) is `ProxyError.Code.notAPlaylist`.
    public func fetchPlaylist(_ url: String) async throws(ProxyError) -> FetchedPlaylist {
        let (bytes, finalURL) = try await fetchPlaylistBytes(url)
        return try Self.parsed(bytes, url: finalURL)
    }

    /// A playlist's bytes, checked as ``fetchPlaylist(_:)`` checks them but not parsed, and the URL that answered
    /// (after redirects).
    public func fetchPlaylistBytes(_ url: String) async throws(ProxyError) -> (bytes: [UInt8], url: String) {
        let (head, bytes) = try await fetchSmall(url, maxBytes: options.maxPlaylistBytes)
        try RemotePlaylistFetcher.checkPlaylist(bytes, url: url, contentType: head.header("Content-Type"))
        return (bytes, head.finalURL)
    }

    /// ``fetchPlaylistBytes(_:)`` bounded by `RemoteFetchOptions.firstFetchTimeout` in all, retries included: the
    /// first fetch of a stream, which must fail quickly when the upstream is dead or silent.
    public func fetchFirstPlaylistBytes(_ url: String) async throws(ProxyError) -> (bytes: [UInt8], url: String) {
        try await withinFirstFetchTimeout(url) { () async throws(ProxyError) in try await self.fetchPlaylistBytes(url) }
    }

    /// ``fetchPlaylistBytes(_:)`` in one blocking call on the calling thread, which must be one that may block (a
    /// dispatch queue's, never Swift's cooperative pool). Nil when the async path is needed: the URL is not plain
    /// http, the answer is a redirect, or a failure that a retry may cure (the async path retries with backoff).
    public func fetchPlaylistBytesBlocking(_ url: String) throws(ProxyError) -> (bytes: [UInt8], url: String)? {
        do throws(ProxyError) {
            guard let (head, bytes) = try fetchSmallBlocking(url, maxBytes: options.maxPlaylistBytes) else {
                return nil
            }
            try RemotePlaylistFetcher.checkPlaylist(bytes, url: url, contentType: head.header("Content-Type"))
            return (bytes, url)
        } catch {
            if error.isTransient && options.retries > 0 { return nil }
            throw error
        }
    }

    /// Parses checked playlist bytes fetched from `url`.
    static func parsed(_ bytes: [UInt8], url: String) throws(ProxyError) -> FetchedPlaylist {
        do {
            let playlist = try Playlist(bytes: bytes)
            return FetchedPlaylist(bytes: bytes, playlist: playlist, url: url)
        } catch {
            throw ProxyError(.notAPlaylist, url: url, detail: "the playlist cannot be read: \(error)")
        }
    }

    /// Whether bytes look like an HLS playlist; throws a clear error when they do not.
    static func checkPlaylist(_ bytes: [UInt8], url: String, contentType: String?) throws(ProxyError) {
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        while let f = body.first, f == 0x20 || f == 0x09 || f == 0x0D || f == 0x0A { body = body.dropFirst() }
        if body.starts(with: Array("#EXTM3U".utf8)) { return }
        let type = contentType.map { " (Content-Type: \($0))" } ?? ""
        if body.first == UInt8(ascii: "<") {
            throw ProxyError(
                .notAPlaylist, url: url, detail: "upstream sent an HTML or XML page, not a playlist\(type)")
        }
        if body.isEmpty { throw ProxyError(.notAPlaylist, url: url, detail: "upstream sent an empty body\(type)") }
        throw ProxyError(.notAPlaylist, url: url, detail: "the body does not start with #EXTM3U\(type)")
    }
}

extension RemoteStream {
    /// The body of a response that relays this one: moved socket to socket by the server where it can
    /// (`splice`), else pulled chunk by chunk.
    func relayBody(length: UInt64?) -> HTTPResponse.Body {
        if let length, let socketBody, socketBody.length == length {
            return .stream(HTTPResponse.StreamBody(length: length, body, spliceSource: SocketSplice(socketBody)))
        }
        return .stream(HTTPResponse.StreamBody(length: length, body))
    }
}

/// An upstream socket body as a server splice source.
private final class SocketSplice: SpliceSource {
    let body: SocketBody
    init(_ body: SocketBody) { self.body = body }
    func claim() -> (descriptor: Int32, buffered: [UInt8])? { body.claim() }
    func release(complete: Bool) { body.release(complete: complete) }
}
