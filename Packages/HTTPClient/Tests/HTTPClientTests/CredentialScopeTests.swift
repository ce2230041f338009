import FileRange
import HTTPWire
import Testing

@testable import HTTPClient

/// Where credentials go (``CredentialScope``): to the origin's host and the hosts allowed by name, never from https
/// down to http; every other field everywhere. Then through the client's redirects, between two loopback origins
/// under different host names (`127.0.0.1` and `localhost`).
@Suite("Credential scope")
struct CredentialScopeTests {
    static let fields: HTTPHeaders = [
        "User-Agent": "Tester/1", "Referer": "http://r.example/", "Origin": "http://r.example",
        "Authorization": "Bearer secret", "Proxy-Authorization": "Basic c2VjcmV0", "Cookie": "session=secret",
        "X-Api-Key": "secret-key", "X-Other": "plain",
    ]

    @Test func allowsTable() {
        let scope = CredentialScope(
            origin: "https://Origin.example/live/master.m3u8", allowedHosts: ["cdn.example", "[2001:db8::1]"])
        let cases: [(String, Bool)] = [
            ("https://origin.example/a.ts", true), ("https://ORIGIN.EXAMPLE:8443/a.ts", true),
            ("https://origin.example./a.ts", true), ("http://origin.example/a.ts", false),
            ("https://cdn.example/a.ts", true), ("https://CDN.example:444/k.key", true),
            ("http://cdn.example/a.ts", false), ("https://other.example/a.ts", false),
            ("https://sub.origin.example/a.ts", false), ("https://origin.example.evil/a.ts", false),
            ("https://evil.example/origin.example/a.ts", false), ("https://origin.example@evil.example/a.ts", false),
            ("https://[2001:db8::1]/a.ts", true), ("https://[2001:db8::2]/a.ts", false),
            ("file:///etc/passwd", false), ("not a url", false),
        ]
        for (url, expected) in cases { #expect(scope.allows(url) == expected, "\(url)") }
        let plain = CredentialScope(origin: "http://127.0.0.1:8080/x.m3u8")
        for (url, expected) in [
            ("http://127.0.0.1:9090/a.ts", true), ("https://127.0.0.1/a.ts", true),
            ("http://localhost:8080/a.ts", false),
            ("http://127.0.0.2:8080/a.ts", false), ("http://[::1]:8080/a.ts", false),
        ] {
            #expect(plain.allows(url) == expected, "\(url)")
        }
    }

    @Test func secretFieldsAreTheStandardOnesAndThoseMarked() {
        let scope = CredentialScope(origin: "http://a.example/", secretFields: ["x-api-key"])
        for name in ["Authorization", "authorization", "PROXY-AUTHORIZATION", "Cookie", "X-Api-Key"] {
            #expect(scope.isSecret(name), "\(name)")
        }
        for name in ["User-Agent", "Referer", "Origin", "Set-Cookie", "X-Other", "Range"] {
            #expect(!scope.isSecret(name), "\(name)")
        }
        let elsewhere = scope.fields(Self.fields, for: "http://b.example/a.ts")
        #expect(elsewhere.map(\.name) == ["User-Agent", "Referer", "Origin", "X-Other"])
        #expect(scope.fields(Self.fields, for: "http://a.example/a.ts") == Self.fields)
    }

    /// A chain 127.0.0.1 → localhost → 127.0.0.1: the first hop has every field; from the hop to the other host on,
    /// the secret ones (the user's `X-Api-Key` included) are gone, also back on the origin's host.
    @Test func redirectsAcrossHostNamesDropSecretsForGood() async throws {
        let back = LockedValue("")
        let other = try RawOrigin { _ in
            .bytes(
                ClientBehaviourTests.response("", status: "302 Found", extra: "Location: \(back.withLock { $0 })\r\n"),
                close: false)
        }
        let origin = try RawOrigin { path in
            switch path {
            case "/start":
                .bytes(
                    ClientBehaviourTests.response(
                        "", status: "302 Found", extra: "Location: http://localhost:\(other.port)/moved\r\n"),
                    close: false)
            default: .bytes(ClientBehaviourTests.response("ok"), close: false)
            }
        }
        back.withLock { $0 = origin.url("/back") }
        let scope = CredentialScope(origin: origin.url("/start"), secretFields: ["X-Api-Key"])
        let request = HTTPClientRequest(url: origin.url("/start"), headers: Self.fields, credentials: scope)
        let answer = try await ClientBehaviourTests.quickClient().fetch(request, maxBytes: 10)
        #expect(answer.status == 200)
        let heads = origin.heads.withLock { $0 }
        #expect(heads.count == 2)
        let first = try #require(heads.first)
        for value in ["Bearer secret", "Basic c2VjcmV0", "session=secret", "secret-key", "Tester/1", "plain"] {
            #expect(first.contains(value), "\(first)")
        }
        let moved = try #require(other.heads.withLock { $0 }.first)
        let returned = try #require(heads.last)
        for head in [moved, returned] {
            #expect(!head.contains("secret") && !head.contains("c2VjcmV0"), "\(head)")
            for field in [
                "User-Agent: Tester/1", "Referer: http://r.example/", "Origin: http://r.example", "X-Other: plain",
            ] {
                #expect(head.contains(field), "\(head)")
            }
        }
    }

    /// Hosts the user allowed by name get the credentials through a redirect; a request whose scope names another
    /// origin is sent without them from the start.
    @Test func allowedHostsGetCredentialsAndOthersNever() async throws {
        let other = try RawOrigin { _ in .bytes(ClientBehaviourTests.response("ok"), close: false) }
        let origin = try RawOrigin { _ in
            .bytes(
                ClientBehaviourTests.response(
                    "", status: "307 Temporary Redirect", extra: "Location: http://localhost:\(other.port)/k\r\n"),
                close: false)
        }
        let client = ClientBehaviourTests.quickClient()
        let allowing = CredentialScope(origin: origin.url("/"), allowedHosts: ["LOCALHOST"])
        _ = try await client.fetch(
            HTTPClientRequest(url: origin.url("/a"), headers: Self.fields, credentials: allowing), maxBytes: 10)
        let kept = try #require(other.heads.withLock { $0 }.first)
        #expect(kept.contains("Authorization: Bearer secret"), "\(kept)")
        #expect(kept.contains("Cookie: session=secret"), "\(kept)")
        // A playlist on 127.0.0.1 naming a key on localhost: the key request goes without the secrets.
        let scope = CredentialScope(origin: origin.url("/master.m3u8"))
        _ = try await client.send(
            HTTPClientRequest(url: "http://localhost:\(other.port)/key", headers: Self.fields, credentials: scope))
        let direct = try #require(other.heads.withLock { $0 }.last)
        #expect(direct.hasPrefix("GET /key "))
        for field in ["Bearer secret", "session=secret", "c2VjcmV0"] { #expect(!direct.contains(field), "\(direct)") }
        // X-Api-Key is not marked secret in this scope: it goes everywhere, as User-Agent does.
        #expect(direct.contains("X-Api-Key: secret-key"))
        #expect(direct.contains("User-Agent: Tester/1"))
    }
}
