public import Foundation
public import HLSProxy
public import HTTPClient

// The seed library's API beside the toolkit's own, so that its users switch by changing the package they depend on
// (Documentation/Migration.md maps each call). Each is a few lines over the platform-neutral types; the Apple-only
// part (TSPlayerItem, FileStreamerError) is in Apple/.

extension RemotePlaylistFetcher {
    /// A fetcher that sends `userAgent` and `extraHeaders` with every request and gives each request `timeout`
    /// seconds, as the seed library's did. Everything else is `HTTPClient.RemoteFetchOptions`' default (retries, size
    /// caps, private upstreams refused); use ``init(options:)`` to change it.
    public convenience init(userAgent: String, extraHeaders: [String: String] = [:], timeout: Double = 10) {
        var options = RemoteFetchOptions()
        options.userAgent = userAgent
        options.headers = extraHeaders.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        options.timeout = timeout
        self.init(options: options)
    }

    /// Fetches a playlist and returns its text and the URL that answered it, after redirects (relative URIs resolve
    /// against it), as the seed library's `fetchPlaylist(url:)` did.
    public func fetchPlaylist(url: URL) async throws(ProxyError) -> (text: String, finalURL: URL) {
        let (bytes, final) = try await fetchPlaylistBytes(url.absoluteString)
        return (String(decoding: bytes, as: UTF8.self), URL(string: final) ?? url)
    }
}

extension AdStrippingProxy {
    /// A proxy for `remoteURL` that fetches with `fetcher`, started at once on the calling thread, as the seed
    /// library's was: give ``localURL`` to the player, and keep the proxy alive while it plays (its server stops when
    /// it is released).
    public convenience init(remoteURL: URL, fetcher: RemotePlaylistFetcher) throws(ProxyError) {
        self.init(url: remoteURL.absoluteString, fetcher: fetcher)
        _ = try startServer()
    }

    /// The player's URL, `http://127.0.0.1:PORT/<token>/master.m3u8`, once the proxy is started (before that its
    /// port is 0, which no player can reach).
    public var localURL: URL {
        let text = "http://127.0.0.1:\(port ?? 0)\(masterPath)"
        return URL(string: text) ?? URL(fileURLWithPath: masterPath)
    }
}
