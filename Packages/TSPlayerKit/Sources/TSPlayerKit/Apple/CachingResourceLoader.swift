// Apple glue: compiled in TSPlayerKit on Apple platforms, and on Linux as the module TSPlayerKitAppleGlue against
// the stand-ins in Tests/AppleStandIn (see TSPlayerItem.swift).
#if canImport(AVFoundation) && (canImport(Darwin) || TSPLAYERKIT_APPLE_GLUE)
    public import AVFoundation
    import FileRange
    public import Foundation
    import UniformTypeIdentifiers
    #if TSPLAYERKIT_APPLE_GLUE
        public import TSPlayerKit
    #endif

    /// The `AVAssetResourceLoaderDelegate` route to a ``CachingMediaProxy`` cache, for apps that want AVPlayer to
    /// read a remote resource through a custom URL scheme instead of the loopback URL.
    ///
    /// A thin adapter: every request is answered by ``CachingMediaProxy/read(_:headers:from:length:)``, the same
    /// cache and origin fetches that the loopback route uses (and that the tests on every platform exercise); this
    /// file only translates between AVFoundation's loading requests and that call. It is built, and its logic tested,
    /// on Linux against a stand-in of AVFoundation (Tests/AppleStandIn), not against AVFoundation itself. The loopback
    /// URL from ``CachingMediaProxy/localURL(for:headers:)`` is the better default: it works for every player, and
    /// AVFoundation calls a resource loader several times for one resource.
    ///
    /// ```swift
    /// let loader = CachingResourceLoader(proxy: proxy)
    /// let asset = loader.asset(for: remoteURL, headers: [(name: "Authorization", value: "Bearer …")])
    /// let player = AVPlayer(playerItem: AVPlayerItem(asset: asset))   // keep `loader` alive while it plays
    /// ```
    public final class CachingResourceLoader: NSObject, AVAssetResourceLoaderDelegate, @unchecked Sendable {
        /// The scheme prefix of the URLs this loader answers (`<prefix>-https://…`).
        public static let schemePrefix = "tsplayer-cache"

        private struct State {
            var headers: [String: [(name: String, value: String)]] = [:]
            var loads: [ObjectIdentifier: Task<Void, Never>] = [:]
        }

        private let proxy: CachingMediaProxy
        private let queue = DispatchQueue(label: "TSPlayerKit.CachingResourceLoader")
        private let state = LockedValue(State())

        /// A loader over `proxy`'s cache. Keep it alive for as long as its assets play (AVFoundation holds the
        /// delegate weakly).
        public init(proxy: CachingMediaProxy) {
            self.proxy = proxy
        }

        /// An asset for `remoteURL` whose bytes this loader provides, fetched with `headers`.
        public func asset(for remoteURL: URL, headers: [(name: String, value: String)] = []) -> AVURLAsset {
            var components = URLComponents(url: remoteURL, resolvingAgainstBaseURL: false)
            components?.scheme = Self.schemePrefix + "-" + (remoteURL.scheme ?? "https")
            let custom = components?.url ?? remoteURL
            state.withLock { $0.headers[remoteURL.absoluteString] = headers }
            let asset = AVURLAsset(url: custom)
            asset.resourceLoader.setDelegate(self, queue: queue)
            return asset
        }

        /// The remote URL behind one of this loader's custom URLs.
        static func remoteURL(for custom: URL) -> URL? {
            guard let scheme = custom.scheme, scheme.hasPrefix(schemePrefix + "-"),
                var components = URLComponents(url: custom, resolvingAgainstBaseURL: false)
            else { return nil }
            components.scheme = String(scheme.dropFirst(schemePrefix.count + 1))
            return components.url
        }

        public func resourceLoader(
            _ resourceLoader: AVAssetResourceLoader,
            shouldWaitForLoadingOfRequestedResource loadingRequest: AVAssetResourceLoadingRequest
        ) -> Bool {
            guard let custom = loadingRequest.request.url, let remote = Self.remoteURL(for: custom) else {
                return false
            }
            let headers = state.withLock { $0.headers[remote.absoluteString] } ?? []
            var offset: UInt64 = 0
            var length: UInt64?
            if let data = loadingRequest.dataRequest {
                offset = UInt64(max(0, data.requestedOffset))
                if !data.requestsAllDataToEndOfResource { length = UInt64(max(0, data.requestedLength)) }
            }
            if loadingRequest.contentInformationRequest != nil, loadingRequest.dataRequest == nil { length = 0 }
            let id = ObjectIdentifier(loadingRequest)
            let request = loadingRequest
            let proxy = self.proxy
            let task = Task { [weak self] in
                do {
                    let read = try await proxy.read(
                        remote.absoluteString, headers: headers, from: offset, length: length)
                    if let information = request.contentInformationRequest {
                        information.contentType =
                            UTType(mimeType: read.info.contentType)?.identifier ?? read.info.contentType
                        information.contentLength = Int64(read.info.length)
                        information.isByteRangeAccessSupported = true
                    }
                    if let data = request.dataRequest {
                        for try await chunk in read.bytes {
                            if Task.isCancelled { break }
                            data.respond(with: Data(chunk))
                        }
                    }
                    if !Task.isCancelled { request.finishLoading() }
                } catch {
                    if !Task.isCancelled { request.finishLoading(with: error) }
                }
                self?.state.withLock { _ = $0.loads.removeValue(forKey: id) }
            }
            state.withLock { $0.loads[id] = task }
            return true
        }

        public func resourceLoader(
            _ resourceLoader: AVAssetResourceLoader, didCancel loadingRequest: AVAssetResourceLoadingRequest
        ) {
            let task = state.withLock { $0.loads.removeValue(forKey: ObjectIdentifier(loadingRequest)) }
            task?.cancel()
        }
    }
#endif
