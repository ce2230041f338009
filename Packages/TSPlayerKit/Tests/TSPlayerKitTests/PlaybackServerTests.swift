import FileRange
import Foundation
import Testing

@testable import LoopbackHTTP
@testable import TSPlayerKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A source that answers every path with its own name and the path (PlaybackServerTests and OneServerTests).
final class EchoSource: PlaybackSource {
    let token = SessionToken.random()
    let name: String
    init(_ name: String) { self.name = name }
    func respond(to request: HTTPRequest) -> HTTPResponse {
        .text(name + ":" + request.wildcardSegments.joined(separator: "/"))
    }
    func prepare() {}
}

/// Shuts down `server`'s listening sockets (what iOS does to a suspended app's, as far as Linux can show it) and
/// waits up to 2 s for the server to notice (PlaybackServerTests and OneServerTests).
func loseListeners(of server: PlaybackServer) async throws {
    let http = try #require(server.httpServer)
    for fd in http.listenerDescriptors { _ = shutdown(fd, Int32(SHUT_RDWR)) }
    var waited = 0
    while !server.needsRevival, waited < 100 {
        try await Task.sleep(for: .milliseconds(20))
        waited += 1
    }
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

    @Test("a server whose listener the system took is replaced on the same port, and sessions keep their tokens")
    func listenerLossAndRevival() async throws {
        let server = PlaybackServer()
        let first = EchoSource("first")
        let firstBase = try server.register(first)
        let port = try #require(server.boundPort)
        let http = try #require(server.httpServer)
        let runs = http.runCount
        try await loseListeners(of: server)
        #expect(server.needsRevival, "the dead listener was never noticed")

        // Registering another session replaces the failed server on the same port, synchronously.
        let second = EchoSource("second")
        let secondBase = try server.register(second)
        #expect(!server.needsRevival)
        #expect(server.boundPort == port)
        // One long-lived server: the run that lost its listener was replaced by a new one.
        #expect(server.httpServer === http)
        #expect(http.runCount == runs + 1)
        #expect(try await cachingTestGet(firstBase + "a").2 == Array("first:a".utf8))
        #expect(try await cachingTestGet(secondBase + "b").2 == Array("second:b".utf8))

        // revive() (on every return to the foreground) also keeps the port and the tokens.
        #expect(try await server.revive() == port)
        #expect(server.baseURL(for: first) == firstBase)
        #expect(try await cachingTestGet(firstBase + "c").2 == Array("first:c".utf8))
        await server.remove(first)
        await server.remove(second)
        #expect(server.boundPort == nil)
    }

    @Test("with listensOnLocalNetwork, URLs name the device's local-network address and it answers there")
    func localNetworkURLs() async throws {
        var configuration = HTTPServerConfiguration()
        configuration.listensOnLocalNetwork = true
        let server = PlaybackServer(configuration: configuration)
        let source = EchoSource("lan")
        let base = try server.register(source)
        defer { server.removeWithoutWaiting(source) }
        guard let address = HTTPServer.localNetworkAddresses().first else {
            #expect(base.hasPrefix("http://127.0.0.1:"))
            withKnownIssue("this machine has no local-network IPv4 address to serve on") {
                Issue.record("no local-network address")
            }
            return
        }
        #expect(base.hasPrefix("http://\(address):"), "\(base)")
        #expect(server.host == address)
        #expect(try await cachingTestGet(base + "x").2 == Array("lan:x".utf8))
        let port = try #require(server.boundPort)
        let loopback = "http://127.0.0.1:\(port)/\(source.token.value)/y"
        #expect(try await cachingTestGet(loopback).2 == Array("lan:y".utf8), "loopback still answers")
        let stranger = "http://\(address):\(port)/\(SessionToken.random().value)/x"
        #expect(try await cachingTestGet(stranger).0 == 404)
    }

    @Test("sessions added while the last other one goes are always served (start and join are one step)")
    func registerRacesRemoval() async throws {
        let server = PlaybackServer()
        for round in 0..<40 {
            let leaving = EchoSource("leaving")
            _ = try server.register(leaving)
            let staying = EchoSource("staying\(round)")
            async let removal: Void = server.remove(leaving)
            let base = try server.register(staying)
            await removal
            #expect(try await cachingTestGet(base + "x").2 == Array("staying\(round):x".utf8), "round \(round)")
            await server.remove(staying)
        }
        #expect(server.boundPort == nil)
    }
}
