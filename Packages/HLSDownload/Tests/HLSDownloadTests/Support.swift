import FileRange
import Foundation
import HLSDownload
import HTTPClient
import Testing

/// What a fake origin answers for one request.
struct FakeReply: Sendable {
    var status: Int = 200
    var headers: [HTTPHeaders.Field] = []
    var chunks: [[UInt8]] = []
    /// Fail the body with this error after the chunks.
    var failure: HTTPClientError?
    /// Never answer (until cancelled).
    var hang = false
}

/// An in-process origin: a table of files (with Range support) and an optional handler that overrides replies.
final class FakeOrigin: HTTPTransport, Sendable {
    struct State: Sendable {
        var files: [String: [UInt8]] = [:]
        var requests: [HTTPClientRequest] = []
        var inFlight = 0
        var maxInFlight = 0
        var bytesSent = 0
    }
    let state = LockedValue(State())
    let handler: (@Sendable (HTTPClientRequest, Int) -> FakeReply?)?

    init(files: [String: [UInt8]] = [:], handler: (@Sendable (HTTPClientRequest, Int) -> FakeReply?)? = nil) {
        state.withLock { $0.files = files }
        self.handler = handler
    }

    var requests: [HTTPClientRequest] { state.withLock { $0.requests } }
    func requests(for url: String) -> [HTTPClientRequest] { requests.filter { $0.url == url } }
    var bytesSent: Int { state.withLock { $0.bytesSent } }

    func send(_ request: HTTPClientRequest) async throws -> HTTPClientResponse {
        let count = state.withLock { s -> Int in
            s.requests.append(request)
            s.inFlight += 1
            s.maxInFlight = max(s.maxInFlight, s.inFlight)
            return s.requests.filter { $0.url == request.url }.count
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        // Give other requests a chance to overlap, so concurrency limits are observable.
        await Task.yield()
        var reply = handler?(request, count) ?? defaultReply(request)
        if reply.hang && reply.chunks.isEmpty {
            while !Task.isCancelled { try await Task.sleep(for: .milliseconds(5)) }
            throw CancellationError()
        }
        if reply.headers.first(where: { $0.name == "Content-Length" }) == nil {
            let length = reply.chunks.reduce(0) { $0 + $1.count }
            if reply.failure == nil {
                reply.headers.append(HTTPHeaders.Field(name: "Content-Length", value: "\(length)"))
            }
        }
        let sent = reply.chunks.reduce(0) { $0 + $1.count }
        state.withLock { $0.bytesSent += sent }
        let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        for chunk in reply.chunks { continuation.yield(chunk) }
        if reply.hang {
            // The body stalls after its chunks until the reader goes away.
            return HTTPClientResponse(status: reply.status, headers: HTTPHeaders(fields: reply.headers), body: stream)
        }
        if let failure = reply.failure { continuation.finish(throwing: failure) } else { continuation.finish() }
        return HTTPClientResponse(status: reply.status, headers: HTTPHeaders(fields: reply.headers), body: stream)
    }

    /// Serves the file table: 200, or 206 for `Range: bytes=a-b` / `bytes=a-`, honouring If-Range on the ETag.
    func defaultReply(_ request: HTTPClientRequest) -> FakeReply {
        guard let body = state.withLock({ $0.files[request.url] }) else { return FakeReply(status: 404) }
        let etag = "\"v1\""
        if let range = request.header("Range"), request.header("If-Range").map({ $0 == etag }) ?? true {
            let spec = range.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
            if spec.count == 2, let first = Int(spec[0]) {
                let last = Int(spec[1]) ?? (body.count - 1)
                guard first < body.count, last >= first else { return FakeReply(status: 416) }
                let end = min(last, body.count - 1)
                return FakeReply(
                    status: 206,
                    headers: [
                        HTTPHeaders.Field(name: "ETag", value: etag),
                        HTTPHeaders.Field(name: "Content-Range", value: "bytes \(first)-\(end)/\(body.count)"),
                    ], chunks: [Array(body[first...end])])
            }
        }
        return FakeReply(status: 200, headers: [HTTPHeaders.Field(name: "ETag", value: etag)], chunks: [body])
    }
}

/// A clock that never sleeps: time advances by what is asked, and every sleep is recorded.
final class FakeClock: RetryClock, Sendable {
    let state = LockedValue((time: 0.0, sleeps: [Double]()))
    func now() -> Double { state.withLock { $0.time } }
    func sleep(seconds: Double) async throws {
        try Task.checkCancellation()
        state.withLock {
            $0.sleeps.append(seconds)
            $0.time += seconds
        }
        await Task.yield()
    }
    func jitter() -> Double { 1 }
    var sleeps: [Double] { state.withLock { $0.sleeps } }
}

enum Fixtures {
    /// `packets` TS packets whose payload bytes spell `seed`.
    static func ts(packets: Int, seed: UInt8) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(packets * 188)
        for p in 0..<packets {
            bytes.append(0x47)
            bytes += [0x01, 0x00, 0x10 | UInt8(p & 0x0F)]
            bytes += [UInt8](repeating: seed &+ UInt8(p & 0xFF), count: 184)
        }
        return bytes
    }

    static func mediaPlaylist(_ names: [String], extra: [Int: String] = [:], header: String = "") -> String {
        MediaPlaylistText(
            version: 4, targetDuration: 4, header: "#EXT-X-PLAYLIST-TYPE:VOD\n" + header,
            segments: names.enumerated().map { i, name in
                MediaPlaylistText.Segment(tags: extra[i].map { $0 + "\n" } ?? "", duration: "4.0", uri: name)
            },
            ended: true
        ).text
    }

    /// A new folder that the running test removes when it ends (its suite must be marked `.temporaryFolders`).
    static func temporaryFolder(sourceLocation: SourceLocation = #_sourceLocation) -> String {
        TemporaryFolders.make(prefix: "hlsdownload-tests-", sourceLocation: sourceLocation)
    }

    static func read(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    static func text(_ path: String) -> String {
        read(path).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    static func manager(
        _ origin: FakeOrigin, root: String? = nil, clock: FakeClock = FakeClock(),
        configure: (inout DownloadManagerConfiguration) -> Void = { _ in },
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> DownloadManager {
        var configuration = DownloadManagerConfiguration()
        configuration.eventInterval = 0
        configure(&configuration)
        return try DownloadManager(
            storeRoot: root ?? temporaryFolder(sourceLocation: sourceLocation), configuration: configuration,
            transport: origin, clock: clock)
    }
}
