import FileRange
import HTTPWire
import Testing
import TextCodecs

@testable import HTTPClient

/// What the client promises above a single exchange: the retry policy and its observer, failing fast on what a
/// retry cannot cure, the timeouts, the address policy, and redirect resolution.
@Suite("Client behaviour")
struct ClientBehaviourTests {
    static func response(_ body: String, status: String = "200 OK", extra: String = "") -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)".utf8)
    }

    /// A client whose retries wait a few milliseconds.
    static func quickClient(attempts: Int = 4, policy: UpstreamAddressPolicy = .any) -> HTTPClient {
        var configuration = HTTPClientConfiguration()
        configuration.retry = RetryPolicy(maxAttempts: attempts, baseDelay: 0.01, maxDelay: 0.05, maxRetryAfter: 0.05)
        configuration.addressPolicy = policy
        configuration.idleTimeout = 5
        return HTTPClient(configuration: configuration)
    }

    @Test func transientAnswersAreRetriedAndReported() async throws {
        let count = LockedValue(0)
        let origin = try RawOrigin { _ in
            let n = count.withLock { value -> Int in
                value += 1
                return value
            }
            switch n {
            case 1: return .bytes(Self.response("busy", status: "503 Service Unavailable"), close: false)
            case 2:
                return .bytes(
                    Self.response("", status: "429 Too Many Requests", extra: "Retry-After: 0\r\n"), close: false)
            case 3: return .bytes(Self.response("", status: "408 Request Timeout"), close: true)
            default: return .bytes(Self.response("#EXTM3U\n"), close: false)
            }
        }
        let events = LockedValue<[String]>([])
        let client = Self.quickClient(attempts: 4)
        let whole = try await client.get(origin.url("/p.m3u8"), maxBytes: 1000, timeout: 10) { event in
            events.withLock { $0.append("\(event.attempt)/\(event.of) \(event.reasonText)") }
        }
        #expect(whole.body == Array("#EXTM3U\n".utf8))
        #expect(
            events.withLock { $0 } == [
                "2/4 503 Service Unavailable", "3/4 429 Too Many Requests", "4/4 408 Request Timeout",
            ])
        let event = RetryEvent(
            url: "u", attempt: 3, of: 8, delay: 2, reason: HTTPClientError(.connectionReset, "connection reset"))
        #expect(event.description == "retrying in 2 s (3/8): connection reset")
    }

    @Test func exhaustedRetriesNameTheLastStatus() async throws {
        let origin = try RawOrigin { _ in .bytes(Self.response("", status: "502 Bad Gateway"), close: false) }
        let retries = LockedValue(0)
        do {
            _ = try await Self.quickClient(attempts: 3).get(origin.url("/x"), maxBytes: 100, timeout: 10) { _ in
                retries.withLock { $0 += 1 }
            }
            Issue.record("a 502 passed")
        } catch let error as HTTPClientError {
            #expect(error.code == .httpStatus)
            #expect(error.status == 502)
            #expect(error.description == "\(origin.url("/x")): 502 Bad Gateway")
        }
        #expect(retries.withLock { $0 } == 2)
    }

    @Test func clientErrorsFailAtOnceWithTheStatusInWords() async throws {
        let origin = try RawOrigin { path in
            path == "/gone"
                ? .bytes(Self.response("", status: "410 Gone"), close: false)
                : .bytes(Self.response("nope", status: "404 Not Found"), close: false)
        }
        let retries = LockedValue(0)
        let client = Self.quickClient()
        for (path, words) in [("/missing", "404 Not Found"), ("/gone", "410 Gone")] {
            let start = ContinuousClock.now
            do {
                _ = try await client.get(origin.url(path), maxBytes: 100) { _ in retries.withLock { $0 += 1 } }
                Issue.record("\(path) passed")
            } catch let error as HTTPClientError {
                #expect(error.description == "\(origin.url(path)): \(words)")
                #expect(!error.isTransient)
            }
            #expect(ContinuousClock.now - start < .seconds(1))
        }
        #expect(retries.withLock { $0 } == 0)
        #expect(origin.paths.withLock { $0 } == ["/missing", "/gone"])
        #expect(HTTPClientError.inWords(599) == "HTTP status 599")
    }

    @Test func aRefusedPortFailsWithinASecond() async throws {
        let port = closedPort()
        let url = "http://127.0.0.1:\(port)/live.m3u8"
        let retries = LockedValue(0)
        let start = ContinuousClock.now
        do {
            _ = try await Self.quickClient(attempts: 8).get(url, maxBytes: 100) { _ in retries.withLock { $0 += 1 } }
            Issue.record("a closed port answered")
        } catch let error as HTTPClientError {
            #expect(error.code == .connectionRefused)
            #expect(error.url == url)
            #expect(error.description.hasPrefix("\(url): cannot connect to 127.0.0.1:\(port): ECONNREFUSED"))
        }
        #expect(ContinuousClock.now - start < .seconds(1))
        #expect(retries.withLock { $0 } == 0)
    }

    @Test func anUnknownHostFailsAtOnce() async throws {
        let start = ContinuousClock.now
        do {
            _ = try await Self.quickClient().get("http://no-such-host.invalid/x", maxBytes: 100)
            Issue.record("an unknown host answered")
        } catch let error as HTTPClientError {
            #expect(error.code == .noSuchHost)
            #expect(error.description == "http://no-such-host.invalid/x: no such host: no-such-host.invalid")
        }
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test func aSilentServerTimesOutAtTheConfiguredTime() async throws {
        let origin = try RawOrigin { _ in .stall([]) }
        // The idle timeout ends an exchange whose head never comes.
        var configuration = HTTPClientConfiguration()
        configuration.idleTimeout = 0.4
        configuration.retry = .none
        let client = HTTPClient(configuration: configuration)
        var start = ContinuousClock.now
        do {
            _ = try await client.send(HTTPClientRequest(url: origin.url("/a")))
            Issue.record("a silent server answered")
        } catch let error as HTTPClientError {
            #expect(error.code == .timedOut)
            #expect(error.url == origin.url("/a"))
        }
        var elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(350) && elapsed < .seconds(2))
        // The whole-fetch deadline (the first playlist's shorter timeout) ends retries too.
        configuration.idleTimeout = 30
        configuration.firstFetchTimeout = 0.5
        start = ContinuousClock.now
        do {
            _ = try await HTTPClient(configuration: configuration).get(origin.url("/b"), maxBytes: 10)
            Issue.record("a silent server answered")
        } catch let error as HTTPClientError {
            #expect(error.code == .timedOut)
            #expect(error.description == "\(origin.url("/b")): no complete answer within 0.5 s")
        }
        elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(450) && elapsed < .seconds(2))
    }

    @Test func privateAddressesAreRefusedUnlessAllowed() async throws {
        let origin = try RawOrigin { _ in .bytes(Self.response("ok"), close: false) }
        let strict = Self.quickClient(policy: .publicOnly)
        for url in [origin.url("/a"), "http://localhost:\(origin.port)/a", "http://[::1]:\(origin.port)/a"] {
            do {
                _ = try await strict.fetch(HTTPClientRequest(url: url), maxBytes: 100)
                Issue.record("\(url) was fetched")
            } catch let error as HTTPClientError {
                #expect(error.code == .addressRefused, "\(url)")
                #expect(!error.isTransient)
                #expect(error.url == url)
            }
        }
        #expect(origin.connections.withLock { $0 } == 0)
        let open = Self.quickClient(policy: .any)
        #expect(try await open.fetch(HTTPClientRequest(url: origin.url("/b")), maxBytes: 100).body == Array("ok".utf8))
        #expect(UpstreamAddressPolicy.isPrivate("10.1.2.3"))
        #expect(UpstreamAddressPolicy.isPrivate("172.20.0.1"))
        #expect(UpstreamAddressPolicy.isPrivate("192.168.0.1"))
        #expect(UpstreamAddressPolicy.isPrivate("169.254.1.1"))
        #expect(UpstreamAddressPolicy.isPrivate("100.64.0.1"))
        #expect(UpstreamAddressPolicy.isPrivate("::ffff:127.0.0.1"))
        #expect(UpstreamAddressPolicy.isPrivate("fd00::1"))
        #expect(UpstreamAddressPolicy.isPrivate("fe80::1%eth0"))
        #expect(UpstreamAddressPolicy.isPrivate("not an address"))
        #expect(!UpstreamAddressPolicy.isPrivate("93.184.216.34"))
        #expect(!UpstreamAddressPolicy.isPrivate("2606:2800:220:1::"))
        #expect(!UpstreamAddressPolicy.isPrivate("172.32.0.1"))
    }

    @Test func redirectsAreBoundedAndEachTargetChecked() async throws {
        let origin = try RawOrigin { path in
            switch path {
            case "/a/b/start":
                .bytes(
                    Self.response("", status: "301 Moved Permanently", extra: "Location: ../c/./next?x=1\r\n"),
                    close: false)
            case "/a/c/next?x=1":
                .bytes(
                    Self.response("", status: "307 Temporary Redirect", extra: "Location: //127.0.0.1:1/closed\r\n"),
                    close: false)
            case "/loop": .bytes(Self.response("", status: "302 Found", extra: "Location: /loop\r\n"), close: false)
            default: .bytes(Self.response("", status: "404 Not Found"), close: false)
            }
        }
        let client = Self.quickClient()
        do {
            _ = try await client.fetch(HTTPClientRequest(url: origin.url("/a/b/start")), maxBytes: 10)
            Issue.record("a redirect to a closed port answered")
        } catch let error as HTTPClientError {
            // The error names the URL that failed: the redirect's target.
            #expect(error.code == .connectionRefused)
            #expect(error.url == "http://127.0.0.1:1/closed")
        }
        #expect(origin.paths.withLock { $0 } == ["/a/b/start", "/a/c/next?x=1"])
        do {
            _ = try await client.fetch(HTTPClientRequest(url: origin.url("/loop")), maxBytes: 10)
            Issue.record("a redirect loop ended")
        } catch let error as HTTPClientError {
            #expect(error.code == .tooManyRedirects)
            #expect(error.description == "\(origin.url("/loop")): more than 5 redirects")
        }
        #expect(origin.paths.withLock { $0 }.count == 2 + 6)
    }

    /// A redirect to the same host keeps every field the caller gave; one to another host (here `localhost`
    /// beside `127.0.0.1`) keeps User-Agent and Referer but drops Authorization, Proxy-Authorization and Cookie.
    @Test func credentialsStayWithTheirOrigin() async throws {
        let other = try RawOrigin { _ in .bytes(Self.response("ok"), close: false) }
        let otherURL = "http://localhost:\(other.port)/elsewhere"
        let origin = try RawOrigin { path in
            switch path {
            case "/start":
                .bytes(Self.response("", status: "302 Found", extra: "Location: /same\r\n"), close: false)
            case "/same":
                .bytes(
                    Self.response("", status: "307 Temporary Redirect", extra: "Location: \(otherURL)\r\n"),
                    close: false)
            default: .bytes(Self.response("", status: "404 Not Found"), close: false)
            }
        }
        let headers: HTTPHeaders = [
            "User-Agent": "Tester/1", "Referer": "http://r.example/", "Authorization": "Bearer secret",
            "Proxy-Authorization": "Basic c2VjcmV0", "Cookie": "session=secret",
        ]
        let answer = try await Self.quickClient().fetch(
            HTTPClientRequest(url: origin.url("/start"), headers: headers), maxBytes: 10)
        #expect(answer.status == 200)
        let sameOrigin = origin.heads.withLock { $0 }
        #expect(sameOrigin.count == 2)
        for head in sameOrigin {
            for field in ["Authorization: Bearer secret", "Cookie: session=secret", "User-Agent: Tester/1"] {
                #expect(head.contains(field), "\(head)")
            }
        }
        let moved = try #require(other.heads.withLock { $0 }.first)
        #expect(moved.contains("User-Agent: Tester/1"))
        #expect(moved.contains("Referer: http://r.example/"))
        #expect(!moved.contains("secret"), "\(moved)")
        #expect(!moved.lowercased().contains("authorization"))
        #expect(!moved.lowercased().contains("cookie"))
    }

    @Test func referenceResolution() {
        let base = "http://a/b/c/d;p?q"
        let cases: [(String, String)] = [
            ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"), ("/g", "http://a/g"),
            ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
            ("#s", "http://a/b/c/d;p?q#s"),
            ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"), ("..", "http://a/b/"), ("../g", "http://a/b/g"),
            ("../../g", "http://a/g"), ("../../../g", "http://a/g"), ("/./g", "http://a/g"), ("g.", "http://a/b/c/g."),
            ("g/../h", "http://a/b/c/h"), ("https://x:8443/y", "https://x:8443/y"),
        ]
        for (reference, expected) in cases {
            #expect(URIReference.resolve(reference, against: base) == expected, "\(reference)")
        }
    }

    @Test func requestHeadsAreCleanAndOwnedFieldsReplaced() throws {
        let client = HTTPClient()
        let target = try Target("http://[::1]:8080/p?q")
        var headers: HTTPHeaders = ["Connection": "close", "X-A": "1", "Bad Name": "x", "host": "evil"]
        headers.add(name: "X-B", value: "a\nb")
        let head = client.requestHead(target, HTTPClientRequest(url: "http://[::1]:8080/p?q", headers: headers))
        #expect(
            String(decoding: head.serialized(), as: UTF8.self)
                == "GET /p?q HTTP/1.1\r\nHost: [::1]:8080\r\nX-A: 1\r\nAccept-Encoding: identity\r\nConnection: keep-alive\r\n\r\n"
        )
        #expect(throws: HTTPClientError.self) { try Target("ftp://a/b") }
        #expect(throws: HTTPClientError.self) { try Target("http:///nohost") }
        #expect(throws: HTTPClientError.self) { try Target("http://a:99999/") }
        #expect(throws: HTTPClientError.self) { try Target("http://a/b c") }
    }

    @Test func damagedAnswersAreInvalidResponses() async throws {
        let origin = try RawOrigin { path in
            switch path {
            case "/both":
                .bytes(
                    Array(
                        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                            .utf8), close: true)
            case "/chunks":
                .bytes(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".utf8), close: true)
            default:
                .bytes(Array("HTTP/1.1 200 OK\r\nBad Field\r\n\r\n".utf8), close: true)
            }
        }
        var configuration = HTTPClientConfiguration()
        configuration.retry = .none
        let client = HTTPClient(configuration: configuration)
        for path in ["/both", "/chunks", "/field"] {
            do {
                _ = try await client.fetch(HTTPClientRequest(url: origin.url(path)), maxBytes: 100)
                Issue.record("\(path) passed")
            } catch let error as HTTPClientError {
                #expect(error.code == .invalidResponse, "\(path)")
                #expect(error.url == origin.url(path))
            }
        }
        // A streamed chunked body fails the same way, at the damaged byte.
        let streamed = try await client.send(HTTPClientRequest(url: origin.url("/chunks")))
        do {
            for try await _ in streamed.body {}
            Issue.record("a damaged chunked body ended normally")
        } catch let error as HTTPClientError {
            #expect(error.message.contains("malformed chunk size at byte 0"))
        }
    }
}
