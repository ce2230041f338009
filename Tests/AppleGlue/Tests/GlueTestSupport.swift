import FileRange
import Foundation
import LoopbackHTTP
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A copy of the tsplayer sample (a short H.264 + AAC transport stream that ships with the repository) in a folder of
/// this process's own, so that the sessions' index sidecars never land in the source tree; removed at exit.
let sampleTS: URL = {
    let shipped = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tools/tsplayer/Resources/sample.ts")
    let copy = TemporaryFolders.makeShared(prefix: "apple-glue-sample-").appendingPathComponent("sample.ts")
    try? FileManager.default.copyItem(at: shipped, to: copy)
    return copy
}()

/// A folder of the test's own, removed when the test ends (TestSupport's temporary folders: its suite must be marked
/// `.temporaryFolders`).
final class GlueFolder {
    let url: URL

    init() throws { url = TemporaryFolders.make(prefix: "apple-glue-") }

    func write(_ bytes: [UInt8], to name: String) throws -> URL {
        let file = url.appendingPathComponent(name)
        try Data(bytes).write(to: file)
        return file
    }
}

/// Refuses redirects, so a test sees a 302 itself.
private final class NoRedirects: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

private let plainSession = URLSession(configuration: .ephemeral, delegate: NoRedirects(), delegateQueue: nil)

/// One GET: status, headers and body; a connection error is status 0.
func glueGet(_ url: URL, headers: [String: String] = [:]) async -> (status: Int, headers: [String: String], body: Data)
{
    var request = URLRequest(url: url)
    request.timeoutInterval = 10
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    do {
        let (body, response) = try await plainSession.data(for: request)
        let http = response as? HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] { fields["\(name)".lowercased()] = "\(value)" }
        return (http?.statusCode ?? 0, fields, body)
    } catch {
        return (0, [:], Data())
    }
}

/// Waits up to `seconds` for `condition`, checking every 10 ms.
func eventually(seconds: Double = 5, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

/// A loopback origin for the proxy and the cache: fixed bodies by path, a log of the requests' headers, and paths
/// that never answer.
final class GlueOrigin: Sendable {
    let port: UInt16
    private let server: HTTPServer
    let requests = LockedValue<[(path: String, headers: [String: String])]>([])
    private let held = LockedValue<[HTTPResponder]>([])

    /// `bodies` by path; a path in `silent` is accepted and never answered; one in `redirects` answers 302 to the
    /// path it maps to.
    init(
        bodies: [String: (type: String, body: [UInt8])], silent: Set<String> = [], redirects: [String: String] = [:]
    ) throws {
        var router = Router()
        let requests = self.requests
        let held = self.held
        router.getDeferred("/**") { request, responder in
            let path = "/" + request.wildcardSegments.joined(separator: "/")
            var fields: [String: String] = [:]
            for field in request.headers { fields[field.name.lowercased()] = field.value }
            requests.withLock { $0.append((path: path, headers: fields)) }
            if silent.contains(path) { return held.withLock { $0.append(responder) } }
            if let target = redirects[path] {
                var response = HTTPResponse(status: .found)
                response.headers.add(name: "Location", value: target)
                return responder.respond(response)
            }
            guard let (type, body) = bodies[path] else { return responder.respond(.error(.notFound)) }
            responder.respond(.bytes(body, contentType: type))
        }
        server = HTTPServer(router: router)
        port = try server.start()
    }

    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    func stop() async { await server.stop(gracePeriod: .zero) }
}
