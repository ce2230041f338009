// Test-only stand-in for Apple's AVFoundation, compiled only on Linux (the module is named `AVFoundation` so that
// TSPlayerKit's `#if canImport(AVFoundation)` glue compiles there unchanged). It declares only the subset of the API
// that the glue uses, spelled as Apple's current documentation declares it (the 2026 pages, which already list
// symbols of the 27-series SDKs): `AVPlayerItem` is `@MainActor` with `nonisolated` convenience initialisers
// `init(url:)` and `init(asset: any AVAsset & Sendable)`, while `init(asset: AVAsset)` and `asset` stay main-actor
// isolated; `AVAsset` is not `Sendable`; `AVURLAsset`, `AVAssetResourceLoader` and the three loading-request classes
// are `Sendable`; `AVAssetResourceLoaderDelegate` refines `NSObjectProtocol` only.
//
// Where the stand-in cannot match Apple:
// - Objective-C `optional` protocol requirements do not exist on Linux, so the two delegate methods are ordinary
//   requirements with default implementations in an extension (`false` and a no-op, which is what the resource
//   loader assumes when a delegate does not implement them).
// - `NSObject`, `NSObjectProtocol` and `URLRequest`/`URLResponse` come from swift-corelibs-foundation, where the last
//   two live in FoundationNetworking. Apple's AVFoundation re-exports Foundation (so `public import AVFoundation`
//   makes `NSObject` and `URL` public in the glue); this module re-exports Foundation and FoundationNetworking.
// - Apple's Sendable classes are imported from Objective-C; these non-final Swift subclasses of `NSObject` can only
//   be `@unchecked Sendable` (their mutable state is guarded by an `NSLock`).
// - `dispatch_queue_t` does not exist on Linux; the stand-in spells it `DispatchQueue`, the type it aliases on Apple.
// - `weak` (on `AVAssetResourceLoader.delegate`) and `@NSCopying` (on `AVAssetResourceLoadingRequest.response`)
//   cannot be written on lock-guarded computed properties; the storage is weak and the setter copies instead.
// - Apple's initialisers of the three loading-request classes are unavailable; the stand-in adds `public init`s for
//   them, and `standIn…` members, so that tests can build fakes, deliver them to a delegate and read what it did.
//   (A loader still comes only from an asset's `resourceLoader`.)
// - `AVPlayerItem`'s asset is kept in a `nonisolated(unsafe)` constant so that its `nonisolated` initialisers can set
//   it; the public `asset` getter is main-actor isolated, as Apple's is.
// - The classes are `open`, but their members are `public` (imported Objective-C members are `open`).
// - Everything else of these types (availability, `NSCopying` and key-value loading on `AVAsset`, other members) is
//   left out. `UTType` is in the sibling UniformTypeIdentifiers stand-in.
@_exported public import Foundation

#if canImport(FoundationNetworking)
    @_exported public import FoundationNetworking
#endif

/// Stand-in for the abstract base of timed audiovisual media; only what `AVURLAsset` needs.
open class AVAsset: NSObject {}

/// Stand-in for an asset at a local or remote URL; it owns the resource loader the glue configures.
open class AVURLAsset: AVAsset, @unchecked Sendable {
    /// The URL the asset was created with.
    public let url: URL
    /// The loader whose delegate answers requests for the asset's resources.
    public let resourceLoader = AVAssetResourceLoader()

    /// Creates an asset for `URL`; the stand-in ignores `options`.
    public init(url URL: URL, options: [String: Any]? = nil) {
        self.url = URL
        super.init()
    }
}

/// Stand-in for the main-actor object that holds an asset's presentation state.
@MainActor
open class AVPlayerItem: NSObject {
    // Written once, by the nonisolated designated initialiser, and then read only through the isolated `asset`.
    private nonisolated(unsafe) let storedAsset: AVAsset

    private nonisolated init(standInAsset asset: AVAsset) {
        self.storedAsset = asset
        super.init()
    }

    /// The asset the item was created with.
    public var asset: AVAsset {
        storedAsset
    }

    /// Creates an item for an `AVURLAsset` of `URL`, from any isolation.
    public nonisolated convenience init(url URL: URL) {
        self.init(standInAsset: AVURLAsset(url: URL))
    }

    /// Creates an item for `asset`; main-actor isolated because `AVAsset` is not `Sendable`.
    public convenience init(asset: AVAsset) {
        self.init(standInAsset: asset)
    }

    /// Creates an item for a `Sendable` asset such as `AVURLAsset`, from any isolation.
    public nonisolated convenience init(asset: any AVAsset & Sendable) {
        self.init(standInAsset: asset)
    }
}

/// Stand-in for the object that passes an asset's resource requests to a delegate on a dispatch queue.
open class AVAssetResourceLoader: NSObject, @unchecked Sendable {
    private let lock = NSLock()
    private weak var storedDelegate: (any AVAssetResourceLoaderDelegate)?
    private var storedQueue: DispatchQueue?

    override init() {
        super.init()
    }

    /// Stores `delegate` weakly and `delegateQueue` strongly, the queue every delegate call runs on.
    public func setDelegate(_ delegate: (any AVAssetResourceLoaderDelegate)?, queue delegateQueue: DispatchQueue?) {
        lock.withLock {
            storedDelegate = delegate
            storedQueue = delegateQueue
        }
    }

    /// The delegate, or nil once it has been released.
    public var delegate: (any AVAssetResourceLoaderDelegate)? {
        lock.withLock { storedDelegate }
    }

    /// The queue given with the delegate.
    public var delegateQueue: DispatchQueue? {
        lock.withLock { storedQueue }
    }

    /// Stand-in only: asks the delegate, on its queue, whether it will load `loadingRequest`; false without one.
    public func standInDeliver(_ loadingRequest: AVAssetResourceLoadingRequest) async -> Bool {
        guard let queue = delegateQueue else { return false }
        return await withCheckedContinuation { continuation in
            queue.async {
                let delegate = self.delegate
                let handled = delegate?.resourceLoader(self, shouldWaitForLoadingOfRequestedResource: loadingRequest)
                continuation.resume(returning: handled ?? false)
            }
        }
    }

    /// Stand-in only: marks `loadingRequest` cancelled, then tells the delegate so on its queue.
    public func standInCancel(_ loadingRequest: AVAssetResourceLoadingRequest) async {
        loadingRequest.standInMarkCancelled()
        guard let queue = delegateQueue else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.delegate?.resourceLoader(self, didCancel: loadingRequest)
                continuation.resume()
            }
        }
    }
}

/// Stand-in for the methods a resource loader calls to hand requests to the app.
public protocol AVAssetResourceLoaderDelegate: NSObjectProtocol {
    /// Returns whether the delegate takes on `loadingRequest` (and will finish it later).
    func resourceLoader(
        _ resourceLoader: AVAssetResourceLoader,
        shouldWaitForLoadingOfRequestedResource loadingRequest: AVAssetResourceLoadingRequest
    ) -> Bool

    /// Tells the delegate that an earlier `loadingRequest` is no longer wanted.
    func resourceLoader(
        _ resourceLoader: AVAssetResourceLoader, didCancel loadingRequest: AVAssetResourceLoadingRequest
    )
}

extension AVAssetResourceLoaderDelegate {
    /// Default for the optional requirement: the delegate does not load the resource.
    public func resourceLoader(
        _ resourceLoader: AVAssetResourceLoader,
        shouldWaitForLoadingOfRequestedResource loadingRequest: AVAssetResourceLoadingRequest
    ) -> Bool {
        false
    }

    /// Default for the optional requirement: nothing to do.
    public func resourceLoader(
        _ resourceLoader: AVAssetResourceLoader, didCancel loadingRequest: AVAssetResourceLoadingRequest
    ) {}
}

/// Stand-in for one request from a resource loader; it records how the delegate answered it.
open class AVAssetResourceLoadingRequest: NSObject, @unchecked Sendable {
    private struct State {
        var isFinished = false
        var isCancelled = false
        var response: URLResponse?
        var redirect: URLRequest?
        var finishError: (any Error)?
        var finishCount = 0
    }

    private let lock = NSLock()
    private var state = State()

    /// The URL request for the resource.
    public let request: URLRequest
    /// The content information to fill in, or nil when none is requested.
    public let contentInformationRequest: AVAssetResourceLoadingContentInformationRequest?
    /// The byte range to provide, or nil when no data is requested.
    public let dataRequest: AVAssetResourceLoadingDataRequest?

    /// Stand-in only (Apple's initialiser is unavailable): a request as a resource loader would make it.
    public init(
        request: URLRequest,
        contentInformationRequest: AVAssetResourceLoadingContentInformationRequest? = nil,
        dataRequest: AVAssetResourceLoadingDataRequest? = nil
    ) {
        self.request = request
        self.contentInformationRequest = contentInformationRequest
        self.dataRequest = dataRequest
        super.init()
    }

    /// Whether `finishLoading()` or `finishLoading(with:)` has been called.
    public var isFinished: Bool {
        lock.withLock { state.isFinished }
    }

    /// Whether the resource loader has cancelled the request.
    public var isCancelled: Bool {
        lock.withLock { state.isCancelled }
    }

    /// The URL response for the request; the setter stores a copy.
    public var response: URLResponse? {
        get { lock.withLock { state.response } }
        set {
            let copy = newValue.map { $0.copy() as? URLResponse ?? $0 }
            lock.withLock { state.response = copy }
        }
    }

    /// The request the loading was redirected to, if any.
    public var redirect: URLRequest? {
        get { lock.withLock { state.redirect } }
        set { lock.withLock { state.redirect = newValue } }
    }

    /// Marks the request as successfully finished.
    public func finishLoading() {
        lock.withLock {
            state.isFinished = true
            state.finishCount += 1
        }
    }

    /// Marks the request as finished with `error`.
    public func finishLoading(with error: (any Error)?) {
        lock.withLock {
            state.isFinished = true
            state.finishError = error
            state.finishCount += 1
        }
    }

    /// Stand-in only: the error passed to the last `finishLoading(with:)`, nil after `finishLoading()` alone.
    public var standInFinishError: (any Error)? {
        lock.withLock { state.finishError }
    }

    /// Stand-in only: how many times either `finishLoading` method was called.
    public var standInFinishCount: Int {
        lock.withLock { state.finishCount }
    }

    /// Stand-in only: sets `isCancelled`, as the resource loader does before it calls `resourceLoader(_:didCancel:)`.
    public func standInMarkCancelled() {
        lock.withLock { state.isCancelled = true }
    }
}

/// Stand-in for the part of a loading request that asks what the resource is; it keeps what the delegate sets.
open class AVAssetResourceLoadingContentInformationRequest: NSObject, @unchecked Sendable {
    private struct State {
        var contentType: String?
        var contentLength: Int64 = 0
        var isByteRangeAccessSupported = false
        var isEntireLengthAvailableOnDemand = false
    }

    private let lock = NSLock()
    private var state = State()

    /// The uniform type identifiers that `contentType` may take, or nil when any is accepted.
    public let allowedContentTypes: [String]?

    /// Stand-in only (Apple's initialiser is unavailable): an empty content-information request.
    public init(allowedContentTypes: [String]? = nil) {
        self.allowedContentTypes = allowedContentTypes
        super.init()
    }

    /// The uniform type identifier of the resource's data.
    public var contentType: String? {
        get { lock.withLock { state.contentType } }
        set { lock.withLock { state.contentType = newValue } }
    }

    /// The resource's length in bytes.
    public var contentLength: Int64 {
        get { lock.withLock { state.contentLength } }
        set { lock.withLock { state.contentLength = newValue } }
    }

    /// Whether arbitrary byte ranges of the resource can be requested.
    public var isByteRangeAccessSupported: Bool {
        get { lock.withLock { state.isByteRangeAccessSupported } }
        set { lock.withLock { state.isByteRangeAccessSupported = newValue } }
    }

    /// Whether all of the resource's data is available at once (cached or local).
    public var isEntireLengthAvailableOnDemand: Bool {
        get { lock.withLock { state.isEntireLengthAvailableOnDemand } }
        set { lock.withLock { state.isEntireLengthAvailableOnDemand = newValue } }
    }
}

/// Stand-in for the part of a loading request that asks for bytes; it accumulates what the delegate provides.
open class AVAssetResourceLoadingDataRequest: NSObject, @unchecked Sendable {
    private let lock = NSLock()
    private var offset: Int64
    private var received = Data()
    private var responses = 0

    /// The offset of the first byte requested.
    public let requestedOffset: Int64
    /// The number of bytes requested (to be ignored when `requestsAllDataToEndOfResource` is true).
    public let requestedLength: Int
    /// Whether everything from `requestedOffset` to the end of the resource is requested.
    public let requestsAllDataToEndOfResource: Bool

    /// Stand-in only (Apple's initialiser is unavailable): a request for bytes starting at `requestedOffset`.
    public init(requestedOffset: Int64 = 0, requestedLength: Int, requestsAllDataToEndOfResource: Bool = false) {
        self.requestedOffset = requestedOffset
        self.requestedLength = requestedLength
        self.requestsAllDataToEndOfResource = requestsAllDataToEndOfResource
        self.offset = requestedOffset
        super.init()
    }

    /// The offset of the next byte to provide.
    public var currentOffset: Int64 {
        lock.withLock { offset }
    }

    /// Provides the next `data.count` bytes, advancing `currentOffset`.
    public func respond(with data: Data) {
        lock.withLock {
            received.append(data)
            offset += Int64(data.count)
            responses += 1
        }
    }

    /// Stand-in only: every byte given to `respond(with:)` so far, in order.
    public var standInReceivedData: Data {
        lock.withLock { received }
    }

    /// Stand-in only: how many times `respond(with:)` was called.
    public var standInResponseCount: Int {
        lock.withLock { responses }
    }
}

/// Stand-in for the main-actor player, so that snippets handing an item to a player compile; it plays nothing.
@MainActor
open class AVPlayer: NSObject {
    // Set once, by the nonisolated initialiser (a main-actor class is Sendable).
    private let item: AVPlayerItem?

    /// The item the player was given.
    public var currentItem: AVPlayerItem? { item }
    /// The playback rate: 1 after ``play()``, 0 after ``pause()``.
    public private(set) var rate: Float = 0

    /// Creates a player for `item`.
    public nonisolated init(playerItem item: AVPlayerItem?) {
        self.item = item
        super.init()
    }

    /// Starts playback (the stand-in only records it).
    public func play() { rate = 1 }

    /// Pauses playback (the stand-in only records it).
    public func pause() { rate = 0 }
}
