// Apple glue: compiled in TSPlayerKit on Apple platforms, and on Linux as the module TSPlayerKitAppleGlue against
// the stand-ins in Tests/AppleStandIn (see TSPlayerItem.swift). Not on watchOS, where Apple marks the resource-loader
// API unavailable.
#if canImport(AVFoundation) && !os(watchOS) && (canImport(Darwin) || TSPLAYERKIT_APPLE_GLUE)
    public import AVFoundation
    import Dispatch
    public import Foundation
    import UniformTypeIdentifiers
    #if TSPLAYERKIT_APPLE_GLUE
        public import TSPlayerKit
    #endif

    /// The `AVAssetResourceLoaderDelegate` route to a `MediaCache.CachingMediaProxy` cache, for apps that want AVPlayer
    /// to read a remote resource through a custom URL scheme instead of the loopback URL.
    ///
    /// A thin adapter: every request is answered by `MediaCache.CachingMediaProxy.read(_:headers:from:length:)`, the
    /// same cache and origin fetches that the loopback route uses (and that the tests on every platform exercise); this
    /// file only translates between AVFoundation's loading requests and that call. The loopback URL from
    /// `MediaCache.CachingMediaProxy.localURL(for:headers:)` is the better default: it works for every player, and
    /// AVFoundation calls a resource loader several times for one resource.
    ///
    /// Apple asks apps whose resource loader supplies media data to turn off the player's
    /// `automaticallyWaitsToMinimizeStalling` (its stall predictions do not work for data loaded this way):
    ///
    /// ```swift
    /// let loader = CachingResourceLoader(proxy: proxy)
    /// let asset = loader.asset(for: remoteURL, headers: [(name: "Authorization", value: "Bearer …")])
    /// let player = AVPlayer(playerItem: AVPlayerItem(asset: asset))   // keep `loader` alive while it plays
    /// player.automaticallyWaitsToMinimizeStalling = false
    /// ```
    ///
    /// - Every loading request is read, answered and finished on the loader's own serial delegate queue; only
    ///   `Sendable` values (bytes, numbers, strings) cross between that queue and the fetch. Before iOS 18 Apple
    ///   promises nothing about a loading request anywhere else.
    /// - The content type is a uniform type identifier: the origin's MIME type (without parameters) mapped to a
    ///   declared type, or the URL's file extension when the MIME type says nothing (`application/octet-stream`).
    ///   When the request has `allowedContentTypes`, the type is one of them (that type, or an allowed type it
    ///   conforms to); when none fits, the request finishes with
    ///   ``CachingResourceLoaderError/Code/contentTypeNotAllowed`` instead of a type AVFoundation would raise on.
    /// - The headers given to ``asset(for:headers:)`` go with every request of that asset's resource loader: the
    ///   resource itself and any other URL in this loader's scheme that AVFoundation asks it for (a segment or a
    ///   child playlist whose relative URI resolved against the asset's URL). Bytes pass through unchanged: URIs
    ///   inside a playlist are not rewritten, so an absolute `https` URI in it is fetched by AVFoundation itself,
    ///   without these headers.
    /// - A cancelled request is never answered again.
    public final class CachingResourceLoader: NSObject, AVAssetResourceLoaderDelegate {
        /// The scheme prefix of the URLs this loader answers (`<prefix>-https://…`).
        public static let schemePrefix = "tsplayer-cache"

        private let proxy: CachingMediaProxy
        private let queue: DispatchQueue
        private let confined: QueueConfined

        /// A loader over `proxy`'s cache. Keep it alive for as long as its assets play (AVFoundation holds the
        /// delegate weakly).
        public init(proxy: CachingMediaProxy) {
            let queue = DispatchQueue(label: "TSPlayerKit.CachingResourceLoader")
            self.proxy = proxy
            self.queue = queue
            self.confined = QueueConfined(queue: queue)
        }

        /// An asset for `remoteURL` whose bytes this loader provides, every request fetched with `headers`.
        public func asset(for remoteURL: URL, headers: [(name: String, value: String)] = []) -> AVURLAsset {
            var components = URLComponents(url: remoteURL, resolvingAgainstBaseURL: false)
            components?.scheme = Self.schemePrefix + "-" + (remoteURL.scheme ?? "https")
            let custom = components?.url ?? remoteURL
            let asset = AVURLAsset(url: custom)
            let resourceLoader = asset.resourceLoader
            let confined = self.confined
            queue.sync { confined.register(resourceLoader, headers: headers) }
            resourceLoader.setDelegate(self, queue: queue)
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

        /// The uniform type identifier to give AVFoundation for a resource, or nil when `allowed` is non-nil and
        /// nothing fits in it. `mimeType` is the origin's `Content-Type`; `pathExtension` the URL's.
        static func contentType(mimeType: String, pathExtension: String, allowed: [String]?) -> String? {
            let essence = String(mimeType.prefix { $0 != ";" }).trimmingCharacters(in: .whitespaces).lowercased()
            let byMIME = essence.isEmpty ? nil : UTType(mimeType: essence)
            let byExtension = pathExtension.isEmpty ? nil : UTType(filenameExtension: pathExtension.lowercased())
            // A declared type that says more than "bytes", from the MIME type first.
            let declared = [byMIME, byExtension].compactMap { $0 }.filter { !$0.isDynamic && $0 != .data }
            guard let allowed else {
                return (declared.first ?? byMIME ?? .data).identifier
            }
            let candidates = declared + [byMIME].compactMap { $0 }
            if let exact = candidates.first(where: { allowed.contains($0.identifier) }) {
                return exact.identifier
            }
            for type in declared {
                if let wider = allowed.first(where: { UTType($0).map(type.conforms(to:)) ?? false }) {
                    return wider
                }
            }
            return nil
        }

        public func resourceLoader(
            _ resourceLoader: AVAssetResourceLoader,
            shouldWaitForLoadingOfRequestedResource loadingRequest: AVAssetResourceLoadingRequest
        ) -> Bool {
            guard let custom = loadingRequest.request.url, let remote = Self.remoteURL(for: custom),
                let headers = confined.headers(for: resourceLoader)
            else { return false }
            var offset: UInt64 = 0
            var length: UInt64?
            if let data = loadingRequest.dataRequest {
                offset = UInt64(max(0, data.requestedOffset))
                if !data.requestsAllDataToEndOfResource { length = UInt64(max(0, data.requestedLength)) }
            }
            let information = loadingRequest.contentInformationRequest
            if information != nil, loadingRequest.dataRequest == nil { length = 0 }
            // What the fetch needs, as constants of Sendable types; the request itself stays on this queue.
            let load = Load(
                id: ObjectIdentifier(loadingRequest), remote: remote, headers: headers, offset: offset,
                length: length, wantsInformation: information != nil, allowedTypes: information?.allowedContentTypes,
                wantsData: loadingRequest.dataRequest != nil)
            let proxy = self.proxy
            let queue = self.queue
            let confined = self.confined
            // The task answers through `queue`, which runs nothing of it before this call returns: the load is
            // registered first, and its end always finds it.
            let task = Task { await Self.run(load, proxy: proxy, queue: queue, confined: confined) }
            confined.begin(loadingRequest, task: task)
            return true
        }

        public func resourceLoader(
            _ resourceLoader: AVAssetResourceLoader, didCancel loadingRequest: AVAssetResourceLoadingRequest
        ) {
            confined.cancel(ObjectIdentifier(loadingRequest))
        }

        /// How many loading requests are being answered (for tests: none are left once all are finished).
        var activeLoadCount: Int {
            let confined = self.confined
            return queue.sync { confined.activeCount }
        }

        /// One loading request's parameters.
        private struct Load: Sendable {
            var id: ObjectIdentifier
            var remote: URL
            var headers: [(name: String, value: String)]
            var offset: UInt64
            var length: UInt64?
            var wantsInformation: Bool
            var allowedTypes: [String]?
            var wantsData: Bool
        }

        /// Fetches one load and hands each step to the delegate queue, waiting for it there (so bytes are not read
        /// faster than they are given to AVFoundation).
        private static func run(_ load: Load, proxy: CachingMediaProxy, queue: DispatchQueue, confined: QueueConfined)
            async
        {
            func answer(_ step: Step) async {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    queue.async {
                        confined.answer(load.id, step)
                        continuation.resume()
                    }
                }
            }
            let read: CachedRead
            do {
                read = try await proxy.read(
                    load.remote.absoluteString, headers: load.headers, from: load.offset, length: load.length)
            } catch {
                return await answer(.failed(error))
            }
            if load.wantsInformation {
                guard
                    let type = contentType(
                        mimeType: read.info.contentType, pathExtension: load.remote.pathExtension,
                        allowed: load.allowedTypes)
                else {
                    let allowed = (load.allowedTypes ?? []).joined(separator: ", ")
                    return await answer(
                        .failed(
                            CachingResourceLoaderError(
                                .contentTypeNotAllowed,
                                detail: "\(load.remote.absoluteString) is \(read.info.contentType); the player "
                                    + "accepts only \(allowed)")))
                }
                await answer(.information(type: type, length: Int64(clamping: read.info.length)))
            }
            if load.wantsData {
                var chunks = read.bytes.makeAsyncIterator()
                while true {
                    if Task.isCancelled { return }
                    let chunk: [UInt8]?
                    do {
                        chunk = try await chunks.next()
                    } catch {
                        return await answer(.failed(error))
                    }
                    guard let chunk else { break }
                    await answer(.data(Data(chunk)))
                }
            }
            if !Task.isCancelled { await answer(.finished) }
        }

        /// What a fetch hands to the delegate queue for one loading request.
        private enum Step: Sendable {
            case information(type: String, length: Int64)
            case data(Data)
            case finished
            case failed(any Error & Sendable)
        }

        /// Everything that touches AVFoundation's objects: the loading requests being answered and the headers of
        /// each asset's resource loader. Confined to the delegate queue, which every member asserts; it is
        /// `@unchecked Sendable` only so that closures running on that queue can reach it.
        private final class QueueConfined: @unchecked Sendable {
            private struct Active {
                let request: AVAssetResourceLoadingRequest
                let task: Task<Void, Never>
            }

            private struct Registration {
                weak var resourceLoader: AVAssetResourceLoader?
                let headers: [(name: String, value: String)]
            }

            private let queue: DispatchQueue
            private var active: [ObjectIdentifier: Active] = [:]
            private var registrations: [ObjectIdentifier: Registration] = [:]

            init(queue: DispatchQueue) { self.queue = queue }

            /// Remembers the headers for every request of `resourceLoader` (held weakly).
            func register(_ resourceLoader: AVAssetResourceLoader, headers: [(name: String, value: String)]) {
                dispatchPrecondition(condition: .onQueue(queue))
                registrations = registrations.filter { $0.value.resourceLoader != nil }
                registrations[ObjectIdentifier(resourceLoader)] = Registration(
                    resourceLoader: resourceLoader, headers: headers)
            }

            /// The headers of `resourceLoader`'s asset, or nil when this loader did not make that asset.
            func headers(for resourceLoader: AVAssetResourceLoader) -> [(name: String, value: String)]? {
                dispatchPrecondition(condition: .onQueue(queue))
                guard let registration = registrations[ObjectIdentifier(resourceLoader)],
                    registration.resourceLoader === resourceLoader
                else { return nil }
                return registration.headers
            }

            func begin(_ request: AVAssetResourceLoadingRequest, task: Task<Void, Never>) {
                dispatchPrecondition(condition: .onQueue(queue))
                active[ObjectIdentifier(request)] = Active(request: request, task: task)
            }

            /// Forgets the request and stops its fetch; nothing answers it afterwards.
            func cancel(_ id: ObjectIdentifier) {
                dispatchPrecondition(condition: .onQueue(queue))
                active.removeValue(forKey: id)?.task.cancel()
            }

            var activeCount: Int {
                dispatchPrecondition(condition: .onQueue(queue))
                return active.count
            }

            /// Applies one step to the request, unless it was cancelled; a finished request is forgotten.
            func answer(_ id: ObjectIdentifier, _ step: Step) {
                dispatchPrecondition(condition: .onQueue(queue))
                guard let request = active[id]?.request else { return }
                switch step {
                case .information(let type, let length):
                    if let information = request.contentInformationRequest {
                        information.contentType = type
                        information.contentLength = length
                        information.isByteRangeAccessSupported = true
                    }
                case .data(let data):
                    request.dataRequest?.respond(with: data)
                case .finished:
                    active.removeValue(forKey: id)
                    request.finishLoading()
                case .failed(let error):
                    active.removeValue(forKey: id)
                    request.finishLoading(with: error)
                }
            }
        }
    }

    #if TSPLAYERKIT_APPLE_GLUE
        // swift-corelibs-foundation's NSObject is a Swift class, which a checked Sendable class may not inherit
        // from; with Apple's Objective-C NSObject the compiler checks the conformance below.
        extension CachingResourceLoader: @unchecked Sendable {}
    #else
        extension CachingResourceLoader: Sendable {}
    #endif

    /// An error of ``CachingResourceLoader`` itself (the cache's and the origin's are `MediaCache.CachingProxyError`s):
    /// an opaque ``Code`` plus context.
    public struct CachingResourceLoaderError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What went wrong.
        public struct Code: Hashable, Sendable, CustomStringConvertible {
            private enum Value: Hashable, Sendable {
                case contentTypeNotAllowed
            }

            private let value: Value
            private init(_ value: Value) { self.value = value }

            /// The loading request allows only content types that the resource is not.
            public static let contentTypeNotAllowed = Code(.contentTypeNotAllowed)

            public var description: String {
                switch value {
                case .contentTypeNotAllowed: "content type not allowed"
                }
            }
        }

        /// What went wrong.
        public var code: Code
        /// The resource and what was expected of it.
        public var detail: String

        /// An error with `code` and `detail`.
        public init(_ code: Code, detail: String) {
            self.code = code
            self.detail = detail
        }

        public var description: String { "\(code): \(detail)" }
    }
#endif
