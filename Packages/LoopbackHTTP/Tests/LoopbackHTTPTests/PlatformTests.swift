import FileRange
import Foundation
import Sockets
import Testing

@testable import LoopbackHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("Listener failures")
struct ListenerHealthTests {
    @Test func repeatedAbortsFailTheListener() {
        var health = ListenerHealth()
        for attempt in 1..<ListenerHealth.abortLimit {
            #expect(health.acceptFailed(.connectionAborted) == .retry, "attempt \(attempt)")
        }
        #expect(health.acceptFailed(.connectionAborted) == .fail)
    }

    @Test func anAcceptedConnectionOrAnEmptyQueueResetsTheCount() {
        var health = ListenerHealth()
        for _ in 1..<ListenerHealth.abortLimit { _ = health.acceptFailed(.connectionAborted) }
        health.healthy()
        #expect(health.consecutiveAborts == 0)
        for _ in 1..<ListenerHealth.abortLimit {
            #expect(health.acceptFailed(Errno(rawValue: EPROTO)) == .retry)
        }
    }

    @Test func listenerErrorsFailAtOnceAndResourceErrorsPause() {
        for code in [EBADF, EINVAL, ENOTSOCK] {
            var health = ListenerHealth()
            #expect(health.acceptFailed(Errno(rawValue: code)) == .fail, "errno \(code)")
        }
        for code in [EMFILE, ENFILE, ENOBUFS, ENOMEM] {
            var health = ListenerHealth()
            for _ in 0..<100 { #expect(health.acceptFailed(Errno(rawValue: code)) == .pause, "errno \(code)") }
        }
        var health = ListenerHealth()
        #expect(health.hungUp() == .fail)
    }
}

/// Process CPU time in nanoseconds.
private func processCPUTime() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

private func helloApplication(token: SessionToken? = nil, _ adjust: (inout HTTPServerConfiguration) -> Void = { _ in })
    -> HTTPApplication
{
    var router = Router()
    router.getImmediate("/hello") { _ in .text("hello\n") }
    if let token { router.getImmediate("/hello", session: token) { _ in .text("hello\n") } }
    var configuration = HTTPServerConfiguration()
    adjust(&configuration)
    return HTTPApplication(router: router, configuration: configuration)
}

private func get(_ target: String, port: UInt16, host: String = "127.0.0.1", hostHeader: String? = nil) async throws
    -> WireResponse?
{
    let client = try RawClient(port: port, host: host)
    client.send("GET \(target) HTTP/1.1\r\nHost: \(hostHeader ?? "127.0.0.1:\(port)")\r\n\r\n")
    return await client.readResponse()
}

/// Whether a TCP connection to host:port is refused.
private func isRefused(host: String, port: UInt16) -> Bool {
    do {
        _ = try RawClient(port: port, host: host)
        return false
    } catch let error as POSIXError {
        return error.code == .ECONNREFUSED
    } catch {
        return false
    }
}

private func boundAddress(_ fd: Int32) -> String {
    Socket(descriptor: fd).localAddress ?? "unreadable"
}

@Suite("Dead listeners and revival", .serialized)
struct RevivalTests {
    /// Shutting the listening socket down under the running loops (what iOS's reclaiming does, as far as a
    /// Linux kernel can show it: epoll reports a hang-up and accept fails with EINVAL) marks the server failed,
    /// does not spin the loops, and `revive()` binds the same port again.
    @Test func aShutDownListenerFailsTheServerAndReviveRebindsTheSamePort() async throws {
        let server = HTTPServer(application: helloApplication { $0.bindAddresses = ["127.0.0.1"] })
        let port = try server.start()
        await #expect(try get("/hello", port: port)?.status == 200)
        #expect(server.failure == nil)
        let listeners = server.listenerDescriptors
        #if canImport(Glibc)
            for fd in listeners { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        #else
            for fd in listeners { _ = Darwin.shutdown(fd, SHUT_RDWR) }
        #endif
        var waited = 0
        while server.failure == nil, waited < 100 {
            try await Task.sleep(for: .milliseconds(20))
            waited += 1
        }
        let failure = try #require(server.failure, "the loops never noticed the dead listener")
        #expect(failure.code == .listenerFailed)
        #expect(server.state == .running(port: port))

        // A loop that kept retrying a level-triggered dead listener would burn a core; these stay idle.
        let cpuBefore = processCPUTime()
        try await Task.sleep(for: .milliseconds(500))
        let cpu = processCPUTime() - cpuBefore
        #expect(cpu < 200_000_000, "the process used \(cpu / 1_000_000) ms of CPU in 500 ms after the failure")

        let revived = try await server.revive()
        #expect(revived == port)
        #expect(server.failure == nil)
        await #expect(try get("/hello", port: port)?.status == 200)
        await server.stop(gracePeriod: .seconds(1))
    }

    /// When another socket took the port while the server was down, revival binds a new one.
    @Test func reviveMovesToANewPortWhenTheOldOneIsTaken() async throws {
        let server = HTTPServer(application: helloApplication { $0.bindAddresses = ["127.0.0.1"] })
        let port = try server.start()
        await server.stop(gracePeriod: .seconds(1))
        let squatter = try SocketOps.listen(host: "127.0.0.1", port: port, backlog: 4)
        defer { closeDescriptor(squatter.fd) }
        let revived = try await server.revive()
        #expect(revived != port && revived != 0)
        await #expect(try get("/hello", port: revived)?.status == 200)
        await server.stop(gracePeriod: .seconds(1))
    }
}

@Suite("Local network (AirPlay)", .serialized)
struct LocalNetworkTests {
    @Test func subnetRule() {
        let wifi = LocalNetwork.Interface(address: 0xC0A8_0105, mask: 0xFFFF_FF00)  // 192.168.1.5/24
        let cellular = LocalNetwork.Interface(address: 0x0A40_0001, mask: 0xFFFF_FFFF)  // 10.64.0.1/32
        let interfaces = [wifi, cellular]
        #expect(LocalNetwork.admits(local: wifi.address, peer: 0xC0A8_0120, interfaces: interfaces))
        #expect(!LocalNetwork.admits(local: wifi.address, peer: 0xC0A8_0220, interfaces: interfaces))
        #expect(!LocalNetwork.admits(local: cellular.address, peer: 0x0A40_0002, interfaces: interfaces))
        #expect(LocalNetwork.admits(local: cellular.address, peer: cellular.address, interfaces: interfaces))
        #expect(!LocalNetwork.admits(local: 0x0101_0101, peer: 0x0101_0101, interfaces: interfaces))
        #expect(LocalNetwork.dotted(0xC0A8_0105) == "192.168.1.5")
    }

    @Test func hostCheckAcceptsTheArrivalAddressOnly() {
        let application = helloApplication()
        #expect(application.hostIsAllowed("192.168.1.5:8080", localHost: "192.168.1.5"))
        #expect(application.hostIsAllowed("192.168.1.5", localHost: "192.168.1.5"))
        #expect(!application.hostIsAllowed("192.168.1.5:8080", localHost: nil))
        #expect(!application.hostIsAllowed("192.168.1.6:8080", localHost: "192.168.1.5"))
        #expect(!application.hostIsAllowed("evil.example:8080", localHost: "192.168.1.5"))
    }

    @Test func theOptionNeedsASessionToken() async {
        let server = HTTPServer(application: helloApplication { $0.listensOnLocalNetwork = true })
        #expect(throws: HTTPServerError.self) { try server.start() }
    }

    /// With the option the server listens on the IPv4 wildcard and answers on this machine's local-network
    /// address, under the token, with that address as Host; without it, it listens on loopback only and the
    /// local-network address refuses the connection.
    @Test func answersOnTheLocalNetworkOnlyWhenAsked() async throws {
        let token = SessionToken.random()
        let lan = HTTPServer(
            application: helloApplication(token: token) {
                $0.listensOnLocalNetwork = true
                $0.nonLoopbackToken = token
                $0.bindAddresses = ["127.0.0.1", "::1"]
            })
        let lanPort = try lan.start()
        let plain = HTTPServer(application: helloApplication { $0.bindAddresses = ["127.0.0.1"] })
        let plainPort = try plain.start()
        defer {
            Task {
                await lan.stop(gracePeriod: .seconds(1))
                await plain.stop(gracePeriod: .seconds(1))
            }
        }
        let lanListeners = lan.listenerDescriptors.map(boundAddress)
        #expect(lanListeners.first == "0.0.0.0:\(lanPort)")
        if lanListeners.count > 1 {  // the IPv6 loopback exists here: it still answers
            #expect(lanListeners[1] == "[::1]:\(lanPort)")
            let overIPv6 = try await get(
                "/\(token.value)/hello", port: lanPort, host: "::1", hostHeader: "[::1]:\(lanPort)")
            #expect(overIPv6?.status == 200)
        }
        #expect(plain.listenerDescriptors.map(boundAddress) == ["127.0.0.1:\(plainPort)"])
        // Loopback still answers, under the token.
        await #expect(try get("/\(token.value)/hello", port: lanPort)?.status == 200)
        await #expect(try get("/hello", port: lanPort)?.status == 404)

        guard let address = HTTPServer.localNetworkAddresses().first else {
            withKnownIssue("this machine has no IPv4 interface besides loopback: only the bindings were checked") {
                Issue.record("no local-network address to connect to")
            }
            return
        }
        let withToken = try await get(
            "/\(token.value)/hello", port: lanPort, host: address, hostHeader: "\(address):\(lanPort)")
        #expect(withToken?.status == 200, "GET via \(address)")
        #expect(withToken?.bodyText == "hello\n")
        let foreignHost = try await get(
            "/\(token.value)/hello", port: lanPort, host: address, hostHeader: "rebound.example:\(lanPort)")
        #expect(foreignHost?.status == 421)
        await #expect(try get("/hello", port: lanPort, host: address, hostHeader: address)?.status == 404)
        #expect(isRefused(host: address, port: plainPort), "the loopback-only server answered on \(address)")
    }
}

/// Beyond loopback, a request must name a token first: the server's `nonLoopbackToken`, or the live token of a
/// session route (what a server whose sessions come and go, such as TSPlayerKit's PlaybackServer, has in its URLs).
@Suite("Non-loopback token")
struct NonLoopbackTokenTests {
    @Test func serverTokenOrSessionTokenFirst() async {
        let serverToken = SessionToken.random()
        let sessions = SessionTokenSet()
        let session = SessionToken.random()
        sessions.insert(session)
        var router = Router()
        router.getImmediate("/open") { _ in .text("open\n") }
        router.getImmediate("/**", sessions: sessions) { _ in .text("session\n") }
        var configuration = HTTPServerConfiguration()
        configuration.nonLoopbackToken = serverToken
        let application = HTTPApplication(router: router, configuration: configuration)
        func status(_ target: String, _ method: HTTPMethod = .get) async -> Int {
            await application.respond(
                to: HTTPRequest(method: method, target: target, headers: ["Host": "127.0.0.1"])
            ).status.code
        }
        #expect(await status("/\(session.value)/index.m3u8") == 200)
        #expect(await status("/open") == 404)
        #expect(await status("/\(SessionToken.random().value)/index.m3u8") == 404)
        #expect(await status("/\(serverToken.value)/index.m3u8") == 404)  // no such route under the server token
        #expect(await status("/\(session.value)/index.m3u8", .options) == 404)
        sessions.remove(session)
        #expect(await status("/\(session.value)/index.m3u8") == 404)
    }
}
