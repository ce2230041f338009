import FileRange
import Foundation
import LoopbackHTTP
import Testing

@testable import TSPlayerKit

/// A source that answers every path with its own name and the path.
private final class EchoSource: PlaybackSource {
    let token = SessionToken.random()
    let name: String
    init(_ name: String) { self.name = name }
    func respond(to request: HTTPRequest) -> HTTPResponse {
        .text(name + ":" + request.wildcardSegments.joined(separator: "/"))
    }
    func prepare() {}
}

@Suite("PlaybackServer")
struct PlaybackServerTests {
    @Test("sessions are reached only under their own live token, and no token reaches the access log")
    func sessionsAndLog() async throws {
        let paths = LockedValue<[String]>([])
        var configuration = HTTPServerConfiguration()
        configuration.accessLog = { entry in paths.withLock { $0.append("\(entry.path) \(entry.status)") } }
        let server = PlaybackServer(configuration: configuration)
        let first = EchoSource("first")
        let second = EchoSource("second")
        let firstBase = try await server.add(first)
        let secondBase = try await server.add(second)
        #expect(firstBase.hasSuffix("/\(first.token.value)/"))

        let (status, _, body) = try await cachingTestGet(firstBase + "sub/index.m3u8")
        #expect(status == 200)
        #expect(String(decoding: body, as: UTF8.self) == "first:sub/index.m3u8")
        #expect(try await cachingTestGet(secondBase + "media.ts").2 == Array("second:media.ts".utf8))
        let port = try #require(server.boundPort)
        let stranger = "http://127.0.0.1:\(port)/\(SessionToken.random().value)/media.ts"
        #expect(try await cachingTestGet(stranger).0 == 404)

        await server.remove(first)
        #expect(try await cachingTestGet(firstBase + "sub/index.m3u8").0 == 404)
        #expect(try await cachingTestGet(secondBase + "media.ts").0 == 200)
        #expect(server.baseURL(for: first) == nil)
        await server.remove(second)
        #expect(server.boundPort == nil)

        let logged = paths.withLock { $0 }
        #expect(logged.contains("/{token}/sub/index.m3u8 200"), "\(logged)")
        #expect(logged.contains("/{token}/media.ts 200"), "\(logged)")
        #expect(!logged.contains { $0.contains(first.token.value) || $0.contains(second.token.value) }, "\(logged)")
    }
}
