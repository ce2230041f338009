import FileRange
import Testing

@testable import LoopbackHTTP

/// Routes under a changing set of session tokens: only live tokens reach the handler, which learns which one
/// matched; the access log never shows a token.
@Suite("Session token sets", .serialized)
struct SessionTokenSetTests {
    static func application(_ sessions: SessionTokenSet, log: (@Sendable (AccessLogEntry) -> Void)? = nil)
        -> HTTPApplication
    {
        var router = Router()
        router.getImmediate("/**", sessions: sessions) { request in
            guard let token = request.sessionToken else { return .error(.internalServerError) }
            return .text(token.value + " " + request.wildcardSegments.joined(separator: "/"))
        }
        var configuration = HTTPServerConfiguration()
        configuration.accessLog = log
        return HTTPApplication(router: router, configuration: configuration)
    }

    @Test func liveTokensOnly() async {
        let sessions = SessionTokenSet()
        let app = Self.application(sessions)
        let first = SessionToken.random()
        let second = SessionToken.random()
        sessions.insert(first)
        sessions.insert(second)
        sessions.insert(first)
        #expect(sessions.count == 2)

        let one = await app.respond(to: get("/\(first.value)/a/index.m3u8"))
        #expect(one.status.code == 200)
        #expect(one.bodyText == "\(first.value) a/index.m3u8")
        let two = await app.respond(to: get("/\(second.value)/media.ts"))
        #expect(two.bodyText == "\(second.value) media.ts")

        let stranger = SessionToken.random()
        #expect(await app.respond(to: get("/\(stranger.value)/media.ts")).status.code == 404)
        #expect(await app.respond(to: get("/\(String(first.value.dropLast()))/media.ts")).status.code == 404)
        #expect(await app.respond(to: get("/media.ts")).status.code == 404)

        sessions.remove(first)
        #expect(sessions.count == 1)
        #expect(await app.respond(to: get("/\(first.value)/a/index.m3u8")).status.code == 404)
        #expect(await app.respond(to: get("/\(second.value)/media.ts")).status.code == 200)
        #expect(sessions.match(second.value) == second)
        #expect(sessions.match(first.value) == nil)
    }

    @Test func accessLogShowsNoToken() async throws {
        let sessions = SessionTokenSet()
        let token = SessionToken.random()
        sessions.insert(token)
        let entries = LockedValue<[AccessLogEntry]>([])
        let app = Self.application(sessions) { entry in entries.withLock { $0.append(entry) } }
        try await withServer(app) { port, _ in
            let client = try RawClient(port: port)
            client.send("GET /\(token.value)/sub/index.m3u8 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            _ = await client.readResponse()
            client.send("GET /\(SessionToken.random().value)/index.m3u8 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            _ = await client.readResponse()
        }
        // The entries are compared in a fixed order, not as logged: a response's entry is written when it ends.
        let all = entries.withLock { $0 }
        // A token-shaped segment that opens nothing is not logged either (it may be an ended session's token).
        #expect(
            all.map { "\($0.status) \($0.path)" }.sorted() == [
                "200 /{token}/sub/index.m3u8", "404 /{token}/index.m3u8",
            ])
        #expect(!all.contains { $0.path.contains(token.value) })
    }

    /// Requests the server refuses before routing (421 for a foreign Host, 400 for a malformed path) are logged
    /// without their token too, as is a token sent percent-encoded or in upper case; decoded control bytes (`%1b`,
    /// `%0a`, `%00`, `%0d`) and a decoded `%` reach the log escaped, never raw.
    @Test func accessLogRedactsRefusedRequestsAndEscapesControlBytes() async throws {
        let sessions = SessionTokenSet()
        let token = SessionToken.random()
        sessions.insert(token)
        let entries = LockedValue<[AccessLogEntry]>([])
        let app = Self.application(sessions) { entry in entries.withLock { $0.append(entry) } }
        let encoded = token.value.utf8.prefix(4).map { "%" + String($0, radix: 16) }.joined() + token.value.dropFirst(4)
        try await withServer(app) { port, _ in
            for (target, host) in [
                ("/\(token.value)/index.m3u8", "evil.example"),
                ("/\(token.value)/%zz/index.m3u8", "127.0.0.1"),
                ("/\(token.value)/a%1b[2J%0aGET%20/forged%20200%00%0d%25.ts", "127.0.0.1"),
                ("/\(encoded)/x.ts", "127.0.0.1"),
                ("/\(token.value.uppercased())/x.ts", "evil.example"),
                ("http://127.0.0.1/\(token.value)/abs.ts", "127.0.0.1"),
            ] {
                let client = try RawClient(port: port)
                client.send("GET \(target) HTTP/1.1\r\nHost: \(host)\r\n\r\n")
                _ = await client.readResponse()
            }
        }
        // One entry per request; a response's entry may be written after the next request's (the log is written
        // when a response ends), so the pairs are compared in a fixed order rather than as logged.
        let all = entries.withLock { $0 }
        let pairs = all.map { "\($0.status) \($0.path)" }.sorted()
        let expected = [
            "421 /{token}/index.m3u8", "400 /{token}/%zz/index.m3u8",
            "200 /{token}/a%1B[2J%0AGET%20/forged%20200%00%0D%25.ts", "200 /{token}/x.ts", "421 /{token}/x.ts",
            "200 /{token}/abs.ts",
        ]
        #expect(pairs == expected.sorted())
        for entry in all {
            #expect(!entry.path.lowercased().contains(token.value), "\(entry.path)")
            #expect(entry.path.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "\(entry.path)")
        }
    }
}
