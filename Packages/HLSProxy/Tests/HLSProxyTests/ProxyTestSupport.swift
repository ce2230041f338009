import FileRange
import Foundation
import LoopbackHTTP
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A fake origin on loopback: fixed bodies by path, an optional Authorization requirement, and a request log.
final class ProxyTestOrigin: Sendable {
    struct Resource: Sendable {
        var status: Int = 200
        var contentType: String = "application/vnd.apple.mpegurl"
        var body: [UInt8]
        var redirect: String?
    }
    let resources = Locked<[String: Resource]>([:])
    let log = Locked<[String]>([])
    /// Each request's path and header fields, in order.
    let received = Locked<[(path: String, headers: HTTPHeaders)]>([])
    let requiredAuthorization: String?
    private let server: HTTPServer
    let port: UInt16

    init(requiredAuthorization: String? = nil) async throws {
        self.requiredAuthorization = requiredAuthorization
        var router = Router()
        let resources = self.resources
        let log = self.log
        let received = self.received
        router.getImmediate("/**") { request in
            let path = String(request.path) + (request.query.map { "?" + $0 } ?? "")
            log.withLock { $0.append(path) }
            received.withLock { $0.append((path: path, headers: request.headers)) }
            if let required = requiredAuthorization, request.headers["Authorization"] != required {
                return .text("forbidden", status: .forbidden)
            }
            guard let resource = resources.withLock({ $0[path] }) else { return .error(.notFound) }
            if let redirect = resource.redirect {
                var response = HTTPResponse(status: .found)
                response.headers.add(name: "Location", value: redirect)
                return response
            }
            var response = HTTPResponse.bytes(
                resource.body, contentType: resource.contentType, status: HTTPStatus(code: resource.status))
            response.headers.add(name: "X-Seen-User-Agent", value: request.headers["User-Agent"] ?? "")
            return response
        }
        server = HTTPServer(router: router)
        port = try server.start()
    }

    func set(_ path: String, _ text: String, contentType: String = "application/vnd.apple.mpegurl", status: Int = 200) {
        resources.withLock {
            $0[path] = Resource(status: status, contentType: contentType, body: Array(text.utf8))
        }
    }

    func set(_ path: String, bytes: [UInt8], contentType: String) {
        resources.withLock { $0[path] = Resource(contentType: contentType, body: bytes) }
    }

    func redirect(_ path: String, to target: String) {
        resources.withLock { $0[path] = Resource(body: [], redirect: target) }
    }

    var base: String { "http://127.0.0.1:\(port)" }

    func stop() async { await server.stop(gracePeriod: .milliseconds(100)) }
}

/// A plain GET with URLSession (no redirects followed).
struct ProxyTestClient {
    final class NoRedirects: NSObject, URLSessionTaskDelegate, Sendable {
        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }
    }

    static let session = URLSession(
        configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)

    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    static func get(_ url: String, headers: [String: String] = [:]) async throws -> Response {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (k, v) in http.allHeaderFields { fields["\(k)"] = "\(v)" }
        return Response(status: http.statusCode, headers: fields, body: Array(data))
    }
}

/// A web page on another origin, for the CORS tests of both proxies (HLSProxy's `ProxyCORSTests`, MediaCache's
/// `CachingProxyCORSTests`).
enum CORSTestPage {
    static let page = "http://127.0.0.1:8123"

    /// A request with the page's Origin; `method` OPTIONS asks as a browser's preflight does.
    static func request(_ url: String, method: String = "GET", headers: [String: String] = [:]) async throws
        -> ProxyTestClient.Response
    {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = method
        request.setValue(page, forHTTPHeaderField: "Origin")
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        let (data, response) = try await ProxyTestClient.session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (k, v) in http.allHeaderFields { fields["\(k)"] = "\(v)" }
        return ProxyTestClient.Response(status: http.statusCode, headers: fields, body: Array(data))
    }

    /// The headers every answer to the page must carry.
    static func expectCORS(_ response: ProxyTestClient.Response, _ what: String) {
        #expect(response.header("Access-Control-Allow-Origin") == page, "\(what): \(response.headers)")
        #expect(response.header("Vary")?.contains("Origin") == true, "\(what): \(response.headers)")
        let exposed = response.header("Access-Control-Expose-Headers") ?? ""
        #expect(exposed.contains("Content-Range") && exposed.contains("Content-Length"), "\(what): \(exposed)")
    }
}
