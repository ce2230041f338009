// Test-only stand-in for Apple's AVFoundation, compiled only on Linux (the module is named `AVFoundation` so that
// TSPlayerKit's `#if canImport(AVFoundation)` glue compiles there unchanged). It declares only the subset of the API
// that the glue uses. `AVPlayerItem` and `AVPlayer` follow Apple's current documentation (the 2026 pages, which
// already list symbols of the 27-series SDKs): `AVPlayerItem` is `@MainActor` with `nonisolated` convenience
// initialisers `init(url:)` and `init(asset: any AVAsset & Sendable)`, while `init(asset: AVAsset)` and `asset` stay
// main-actor isolated; `AVAsset` is not `Sendable`, `AVURLAsset` is. The resource loader follows the iOS 16 and 17
// SDKs, the oldest the toolkit supports (AVAssetResourceLoader.h of the iOS 17.4 SDK, read for this): neither
// `AVAssetResourceLoader` nor the three loading-request classes are `Sendable` (the iOS 18 SDK's overlay makes the
// requests `Sendable` from iOS 18 only), so the glue is checked under the rule that holds on every supported system;
// every resource-loader class is unavailable on watchOS; `allowedContentTypes` is a nullable array of identifiers,
// and "if allowedContentTypes is nonnil and the contentType property is not in allowedContentTypes, an exception
// will be raised": the stand-in's `finishLoading()` then records the exception and does not finish the request
// (see `standInException`), so a test waiting for the request fails. `AVAssetResourceLoaderDelegate` refines
// `NSObjectProtocol` only. Every call the glue makes on a delivered request is checked against the queue the
// delegate was given (`standInCallsOffDelegateQueue`): Apple calls the delegate there and promises nothing about
// the requests anywhere else before iOS 18.
//
// Where the stand-in cannot match Apple:
// - Objective-C `optional` protocol requirements do not exist on Linux, so the two delegate methods are ordinary
//   requirements with default implementations in an extension (`false` and a no-op, which is what the resource
//   loader assumes when a delegate does not implement them).
// - `NSObject`, `NSObjectProtocol` and `URLRequest`/`URLResponse` come from swift-corelibs-foundation, where the last
//   two live in FoundationNetworking. Apple's AVFoundation re-exports Foundation (so `public import AVFoundation`
//   makes `NSObject` and `URL` public in the glue); this module re-exports Foundation and FoundationNetworking.
// - Apple's Sendable classes are imported from Objective-C; these non-final Swift subclasses of `NSObject` can only
//   be `@unchecked Sendable`. Every class guards its mutable state with an `NSLock`, so that tests may read what the
//   glue did from their own task (the non-Sendable ones too; the compiler still treats those as non-Sendable).
// - `AVAssetResourceLoader` hands a request to its delegate queue itself (in Objective-C, outside Swift's checks);
//   `standInDeliver` and `standInCancel` do that through `nonisolated(unsafe)` constants.
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
@available(watchOS, unavailable)
open class AVAssetResourceLoader: NSObject {
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
        loadingRequest.standInSetDelegateQueue(queue)
        nonisolated(unsafe) let loader = self
        nonisolated(unsafe) let request = loadingRequest
        return await withCheckedContinuation { continuation in
            queue.async {
                let delegate = loader.delegate
                let handled = delegate?.resourceLoader(loader, shouldWaitForLoadingOfRequestedResource: request)
                continuation.resume(returning: handled ?? false)
            }
        }
    }

    /// Stand-in only: marks `loadingRequest` cancelled, then tells the delegate so on its queue.
    public func standInCancel(_ loadingRequest: AVAssetResourceLoadingRequest) async {
        loadingRequest.standInMarkCancelled()
        guard let queue = delegateQueue else { return }
        nonisolated(unsafe) let loader = self
        nonisolated(unsafe) let request = loadingRequest
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                loader.delegate?.resourceLoader(loader, didCancel: request)
                continuation.resume()
            }
        }
    }
}

/// Stand-in for the methods a resource loader calls to hand requests to the app.
@available(watchOS, unavailable)
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

/// The queue a delivered request's delegate runs on, and whether a call came from elsewhere; shared by a request
/// and its two parts.
final class StandInQueueCheck: @unchecked Sendable {
    private static let key = DispatchSpecificKey<ObjectIdentifier>()
    private let lock = NSLock()
    private var queue: DispatchQueue?
    private var offQueue = 0

    /// Marks `queue` so that calls made on it can be told apart from calls made elsewhere.
    func set(_ queue: DispatchQueue) {
        queue.setSpecific(key: Self.key, value: ObjectIdentifier(queue))
        lock.withLock { self.queue = queue }
    }

    /// Counts the call if the request was delivered and this is not its delegate queue.
    func check() {
        lock.withLock {
            guard let queue else { return }
            if DispatchQueue.getSpecific(key: Self.key) != ObjectIdentifier(queue) { offQueue += 1 }
        }
    }

    var callsOffQueue: Int { lock.withLock { offQueue } }
}

/// Stand-in for one request from a resource loader; it records how the delegate answered it.
@available(watchOS, unavailable)
open class AVAssetResourceLoadingRequest: NSObject {
    private struct State {
        var isFinished = false
        var isCancelled = false
        var response: URLResponse?
        var redirect: URLRequest?
        var finishError: (any Error)?
        var finishCount = 0
        var exception: String?
    }

    private let queueCheck = StandInQueueCheck()

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

    /// Marks the request as successfully finished; refuses, as Apple's raises an exception, when the content
    /// information has a type outside its non-nil `allowedContentTypes` (the request then stays unfinished).
    public func finishLoading() {
        queueCheck.check()
        if let information = contentInformationRequest, let allowed = information.allowedContentTypes,
            !allowed.contains(information.contentType ?? "")
        {
            let type = information.contentType ?? "nil"
            return lock.withLock { state.exception = "contentType \(type) is not in allowedContentTypes \(allowed)" }
        }
        lock.withLock {
            state.isFinished = true
            state.finishCount += 1
        }
    }

    /// Marks the request as finished with `error`.
    public func finishLoading(with error: (any Error)?) {
        queueCheck.check()
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

    /// Stand-in only: what Apple's `finishLoading()` would have raised an exception for, if it was called so.
    public var standInException: String? {
        lock.withLock { state.exception }
    }

    /// Stand-in only: how many calls on the request or its two parts were made off the delegate queue after it was
    /// delivered with `standInDeliver`.
    public var standInCallsOffDelegateQueue: Int { queueCheck.callsOffQueue }

    func standInSetDelegateQueue(_ queue: DispatchQueue) {
        queueCheck.set(queue)
        contentInformationRequest?.queueCheck = queueCheck
        dataRequest?.queueCheck = queueCheck
    }
}

/// Stand-in for the part of a loading request that asks what the resource is; it keeps what the delegate sets.
@available(watchOS, unavailable)
open class AVAssetResourceLoadingContentInformationRequest: NSObject {
    private struct State {
        var contentType: String?
        var contentLength: Int64 = 0
        var isByteRangeAccessSupported = false
        var isEntireLengthAvailableOnDemand = false
        var queueCheck: StandInQueueCheck?
    }

    private let lock = NSLock()
    private var state = State()
    var queueCheck: StandInQueueCheck? {
        get { lock.withLock { state.queueCheck } }
        set { lock.withLock { state.queueCheck = newValue } }
    }

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
        set {
            queueCheck?.check()
            lock.withLock { state.contentType = newValue }
        }
    }

    /// The resource's length in bytes.
    public var contentLength: Int64 {
        get { lock.withLock { state.contentLength } }
        set {
            queueCheck?.check()
            lock.withLock { state.contentLength = newValue }
        }
    }

    /// Whether arbitrary byte ranges of the resource can be requested.
    public var isByteRangeAccessSupported: Bool {
        get { lock.withLock { state.isByteRangeAccessSupported } }
        set {
            queueCheck?.check()
            lock.withLock { state.isByteRangeAccessSupported = newValue }
        }
    }

    /// Whether all of the resource's data is available at once (cached or local).
    public var isEntireLengthAvailableOnDemand: Bool {
        get { lock.withLock { state.isEntireLengthAvailableOnDemand } }
        set {
            queueCheck?.check()
            lock.withLock { state.isEntireLengthAvailableOnDemand = newValue }
        }
    }
}

/// Stand-in for the part of a loading request that asks for bytes; it accumulates what the delegate provides.
@available(watchOS, unavailable)
open class AVAssetResourceLoadingDataRequest: NSObject {
    private let lock = NSLock()
    private var check: StandInQueueCheck?
    var queueCheck: StandInQueueCheck? {
        get { lock.withLock { check } }
        set { lock.withLock { check = newValue } }
    }
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
        queueCheck?.check()
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
    /// Whether the player waits to minimise stalls before it plays (Apple's default, true); Apple asks for false
    /// when a resource loader supplies the media data.
    public var automaticallyWaitsToMinimizeStalling = true

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
