import FileRange
import Foundation
import LoopbackHTTP
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An in-process origin for the caching proxy's tests: serves byte bodies with its own Range handling (or none),
/// validators, an optional Authorization requirement, optional slowness, and a log of what it sent.
final class CachingTestOrigin: Sendable {
    struct Resource: Sendable {
        var body: [UInt8]
        var contentType = "audio/mpeg"
        var etag: String
        var ignoresRange = false
        /// Pause after each chunk of `chunkSize` bytes.
        var delay: Duration = .zero
        var chunkSize = 64 << 10
    }

    struct Served: Sendable {
        var path: String
        var range: String?
        var authorization: String?
        var status: Int
        var bytes: UInt64
    }

    /// The test support's lock, under the name these tests know.
    typealias Box<T: Sendable> = Locked<T>

    let resourcesBox: Box<[String: Resource]>
    let servedBox: Box<[Served]>
    let requiredAuthorization: String?
    private let server: HTTPServer
    let port: UInt16

    init(requiredAuthorization: String? = nil) async throws {
        self.requiredAuthorization = requiredAuthorization
        let resources = Box<[String: Resource]>([:])
        let served = Box<[Served]>([])
        resourcesBox = resources
        servedBox = served
        var router = Router()
        router.get("/**") { request in
            CachingTestOrigin.answer(request, resources: resources, served: served, required: requiredAuthorization)
        }
        server = HTTPServer(router: router)
        port = try server.start()
    }

    static func answer(
        _ request: HTTPRequest, resources: Box<[String: Resource]>, served: Box<[Served]>,
        required: String?
    ) -> HTTPResponse {
        let path = String(request.path)
        let authorization = request.headers["Authorization"]
        let rangeHeader = request.headers["Range"]
        func log(_ status: Int, _ bytes: UInt64) {
            served.withLock {
                $0.append(
                    Served(path: path, range: rangeHeader, authorization: authorization, status: status, bytes: bytes))
            }
        }
        if let required, authorization != required {
            log(403, 0)
            return .text("forbidden", status: .forbidden)
        }
        guard let resource = resources.withLock({ $0[path] }) else {
            log(404, 0)
            return .error(.notFound)
        }
        let length = UInt64(resource.body.count)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: resource.contentType)
        headers.add(name: "ETag", value: resource.etag)
        if request.headers["If-None-Match"] == resource.etag {
            log(304, 0)
            return HTTPResponse(status: .notModified, headers: headers)
        }
        var range = ByteRange(offset: 0, length: length)
        var status = HTTPStatus.ok
        if !resource.ignoresRange {
            headers.add(name: "Accept-Ranges", value: "bytes")
            if let value = rangeHeader, let parsed = RangeRequest.parse(value) {
                switch parsed.resolve(length: length, maxRanges: 1) {
                case .full: break
                case .unsatisfiable:
                    log(416, 0)
                    headers.add(name: "Content-Range", value: ContentRange.unsatisfiedValue(completeLength: length))
                    return HTTPResponse(status: .rangeNotSatisfiable, headers: headers)
                case .partial(let ranges):
                    range = ranges.first
                    status = .partialContent
                    if let range {
                        headers.add(
                            name: "Content-Range", value: ContentRange.value(for: range, completeLength: length))
                    }
                }
            }
        }
        guard let range else { return .error(.internalServerError) }
        log(status.code, range.length)
        let slice = Array(resource.body[Int(range.offset)..<Int(range.upperBound)])
        let chunks = SlowChunks(bytes: slice, chunkSize: resource.chunkSize, delay: resource.delay)
        return HTTPResponse(status: status, headers: headers, body: .stream(.init(length: range.length, chunks)))
    }

    func set(_ path: String, _ resource: Resource) {
        resourcesBox.withLock { $0[path] = resource }
    }

    var log: [Served] { servedBox.withLock { $0 } }
    func clearLog() { servedBox.withLock { $0 = [] } }
    /// The body bytes sent for `path` (as planned when each response started).
    func bytesSent(_ path: String) -> UInt64 { log.filter { $0.path == path }.reduce(0) { $0 + $1.bytes } }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    func stop() async { await server.stop(gracePeriod: .milliseconds(100)) }
}

/// Bytes in chunks with an optional pause between them.
struct SlowChunks: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let bytes: [UInt8]
    let chunkSize: Int
    let delay: Duration

    struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: SlowChunks
        var offset = 0
        mutating func next() async -> [UInt8]? {
            guard offset < sequence.bytes.count else { return nil }
            if offset > 0, sequence.delay > .zero { try? await Task.sleep(for: sequence.delay) }
            let end = Swift.min(offset + sequence.chunkSize, sequence.bytes.count)
            defer { offset = end }
            return Array(sequence.bytes[offset..<end])
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(sequence: self) }
}

/// Deterministic pseudo-random bytes.
func cachingTestBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    return (0..<count).map { _ in
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}

/// A GET through URLSession returning status, headers and body.
func cachingTestGet(_ url: String, range: String? = nil) async throws -> (Int, [String: String], [UInt8]) {
    var request = URLRequest(url: try #require(URL(string: url)))
    request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
    if let range { request.setValue(range, forHTTPHeaderField: "Range") }
    let (data, response) = try await cachingTestSession.data(for: request)
    let http = try #require(response as? HTTPURLResponse)
    var fields: [String: String] = [:]
    for (k, v) in http.allHeaderFields { fields["\(k)".lowercased()] = "\(v)" }
    return (http.statusCode, fields, Array(data))
}

let cachingTestSession: URLSession = {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.httpMaximumConnectionsPerHost = 16
    configuration.urlCache = nil
    return URLSession(configuration: configuration)
}()

/// A new cache folder that the running test removes when it ends (its suite must be marked `.temporaryFolders`).
func cachingTestDirectory(sourceLocation: SourceLocation = #_sourceLocation) -> String {
    TemporaryFolders.make(prefix: "cmp-", sourceLocation: sourceLocation)
}
