import Foundation
import HTTPClient
import TestSupport
import Testing

/// The client against origins that trickle, never answer or never end: the deadline ends every exchange in time,
/// and one silent host ties up a bounded number of threads while requests to another host are served at once.
@Suite("Hostile origins (client)")
struct HostileOriginClientTests {
    static func client(deadline: Double, perHost: Int = 16) -> HTTPClient {
        var configuration = HTTPClientConfiguration()
        configuration.idleTimeout = 10
        configuration.deadline = deadline
        configuration.maxConnectionsPerHost = perHost
        return HTTPClient(configuration: configuration)
    }

    @Test func aTrickledAnswerEndsAtTheDeadline() async throws {
        let origin = try HostileOrigin(trickleInterval: 0.2)
        defer { origin.stop() }
        origin.serve("/p.m3u8", Array(("#EXTM3U\n" + String(repeating: "#EXT-X-X\n", count: 40)).utf8))
        let client = Self.client(deadline: 2)
        let start = ContinuousClock.now
        // Each byte comes within the idle timeout, so only the deadline can end it: the whole answer takes 80 s.
        await #expect(throws: HTTPClientError.self) {
            _ = try await client.fetch(HTTPClientRequest(url: origin.url("/trickle/p.m3u8")), maxBytes: 1 << 20)
        }
        do {
            _ = try await client.fetch(HTTPClientRequest(url: origin.url("/trickle/p.m3u8")), maxBytes: 1 << 20)
        } catch let error as HTTPClientError {
            #expect(error.code == .timedOut)
        }
        let elapsed = start.duration(to: .now)
        #expect(elapsed >= .seconds(3.5) && elapsed < .seconds(10), "two fetches with a 2 s deadline took \(elapsed)")
        // A streamed request's head is bounded alike, and the blocking path too.
        let head = ContinuousClock.now
        await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPClientRequest(url: origin.url("/trickle/p.m3u8")))
        }
        #expect(head.duration(to: .now) < .seconds(5))
        let blocking = ContinuousClock.now
        #expect(throws: HTTPClientError.self) {
            _ = try client.fetchBlocking(HTTPClientRequest(url: origin.url("/trickle/p.m3u8")), maxBytes: 1 << 20)
        }
        #expect(blocking.duration(to: .now) < .seconds(5))
    }

    @Test func aLyingLengthEndsAtTheDeadlineAndAnEndlessOrHugeBodyAtTheCap() async throws {
        let origin = try HostileOrigin()
        defer { origin.stop() }
        let client = Self.client(deadline: 2)
        // Content-Length 100000, half of it sent, then nothing: the deadline, not the 10 s idle timeout, ends it.
        let start = ContinuousClock.now
        do {
            _ = try await client.fetch(HTTPClientRequest(url: origin.url("/lie/100000")), maxBytes: 1 << 20)
            Issue.record("a body shorter than its length was accepted")
        } catch let error as HTTPClientError {
            #expect(error.code == .timedOut)
        }
        #expect(start.duration(to: .now) < .seconds(6))
        // A declared length over the cap is refused before its body is read; a body without end at the cap.
        for path in ["/huge/50000000", "/endless/x.ts"] {
            let one = ContinuousClock.now
            do {
                _ = try await client.fetch(HTTPClientRequest(url: origin.url(path)), maxBytes: 1 << 20)
                Issue.record("\(path) was accepted")
            } catch let error as HTTPClientError {
                #expect(error.code == .tooLarge, "\(path): \(error)")
            }
            #expect(one.duration(to: .now) < .seconds(3))
        }
    }

    @Test func aQueuedRequestEndsWhenItsTaskIsCancelled() async throws {
        let silent = try HostileOrigin()
        defer { silent.stop() }
        let client = Self.client(deadline: 30, perHost: 1)
        // The holder takes the host's one slot before the second request starts, so the second is the one queued
        // (started together, either could take the slot, and cancelling the one under way lets the other in).
        let holderEnded = Locked<String?>(nil)
        let holder = Task {
            do {
                _ = try await client.send(HTTPClientRequest(url: silent.url("/silent/1.ts")))
                holderEnded.withLock { $0 = "answered" }
            } catch {
                holderEnded.withLock { $0 = "\(error)" }
                throw error
            }
        }
        // Up to 10 s each wait: in a full run the machine may be slow to schedule the exchange.
        for _ in 0..<500 where client.requestCounts(to: silent.url("/")) != (1, 0) || silent.requests("silent") != 1 {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(
            client.requestCounts(to: silent.url("/")) == (1, 0) && silent.requests("silent") == 1,
            "counts \(client.requestCounts(to: silent.url("/"))), requests \(silent.requests("silent")), holder ended: \(holderEnded.withLock { $0 } ?? "no")"
        )
        let queued = Task { try await client.send(HTTPClientRequest(url: silent.url("/silent/2.ts"))) }
        for _ in 0..<500 where client.requestCounts(to: silent.url("/")) != (1, 1) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(
            client.requestCounts(to: silent.url("/")) == (1, 1),
            "counts \(client.requestCounts(to: silent.url("/"))), holder ended: \(holderEnded.withLock { $0 } ?? "no")")
        let start = ContinuousClock.now
        queued.cancel()
        await #expect(throws: CancellationError.self) { _ = try await queued.value }
        holder.cancel()
        _ = try? await holder.value
        #expect(start.duration(to: .now) < .seconds(3))
        #expect(client.requestCounts(to: silent.url("/")) == (0, 0))
        #expect(silent.requests("silent") == 1)
    }

    @Test func aSilentHostQueuesItsRequestsAndDelaysNoOtherHost() async throws {
        let silent = try HostileOrigin()
        let good = try HostileOrigin()
        defer {
            silent.stop()
            good.stop()
        }
        good.serve("/seg.ts", [UInt8](repeating: 0x47, count: 188 * 100))
        let client = Self.client(deadline: 6, perHost: 4)
        let threadsBefore = HostileOrigin.threadCount(of: getpid()) ?? 0
        let failures = Locked(0)
        let others = Locked([String]())
        let started = ContinuousClock.now
        let waiting = Task {
            await withTaskGroup(of: Void.self) { group in
                for n in 0..<200 {
                    group.addTask {
                        do {
                            _ = try await client.send(HTTPClientRequest(url: silent.url("/silent/\(n).ts")))
                        } catch let error as HTTPClientError where error.code == .timedOut {
                            failures.withLock { $0 += 1 }
                        } catch {
                            others.withLock { $0.append("\(error)") }
                        }
                    }
                }
            }
        }
        // Four exchanges reach the silent host; the other 196 wait in its queue, without a thread each.
        var counts = (active: 0, waiting: 0)
        for _ in 0..<100 {
            counts = client.requestCounts(to: silent.url("/"))
            if counts.waiting == 196 && silent.requests("silent") == 4 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(counts.active == 4 && counts.waiting == 196)
        #expect(silent.requests("silent") == 4)
        let threadsDuring = HostileOrigin.threadCount(of: getpid()) ?? 0
        #expect(threadsDuring - threadsBefore < 30, "threads grew from \(threadsBefore) to \(threadsDuring)")
        // Another host is served at once meanwhile.
        var slowest = Duration.zero
        for _ in 0..<20 {
            let one = ContinuousClock.now
            let answer = try await client.fetch(HTTPClientRequest(url: good.url("/seg.ts")), maxBytes: 1 << 20)
            #expect(answer.status == 200 && answer.body.count == 18_800)
            slowest = max(slowest, one.duration(to: .now))
        }
        #expect(slowest < .milliseconds(500), "a good segment took \(slowest) beside 200 waiting requests")
        // Every waiting request fails at its deadline, none later.
        await waiting.value
        let elapsed = started.duration(to: .now)
        #expect(failures.withLock { $0 } == 200, "other outcomes: \(others.withLock { $0 })")
        #expect(elapsed >= .seconds(5.5) && elapsed < .seconds(15), "200 silent requests ended after \(elapsed)")
        #expect(client.requestCounts(to: silent.url("/")) == (0, 0))
    }
}
