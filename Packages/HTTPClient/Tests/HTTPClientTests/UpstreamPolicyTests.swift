import Testing

@testable import HTTPClient

/// Which upstreams the proxies may reach: without `allowPrivateUpstreams`, loopback and private addresses are
/// refused (by name, by literal, by what a name resolves to), and only http(s) is fetched. (Moved from HLSProxy with
/// the origin-fetching layer; the check through the ad-stripping proxy stays there.)
@Suite struct UpstreamPolicyTests {
    func refusal(_ url: String, _ policy: UpstreamPolicy) -> ProxyError.Code? {
        do {
            try policy.check(url)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func privateAndLoopbackUpstreamsAreRefusedUnlessAllowed() {
        let strict = UpstreamPolicy(allowPrivate: false)
        for url in [
            "http://127.0.0.1:8080/live.m3u8", "http://localhost/x.m3u8", "http://media.localhost/x.m3u8",
            "http://[::1]/x.m3u8", "http://10.1.2.3/x.ts", "http://192.168.0.10/x.ts", "http://169.254.169.254/latest",
        ] {
            #expect(refusal(url, strict) == .addressNotAllowed, "\(url)")
            // The verdict is remembered, and stays the same.
            #expect(refusal(url, strict) == .addressNotAllowed, "\(url)")
        }
        #expect(refusal("file:///etc/passwd", strict) == .schemeNotAllowed)
        #expect(refusal("ftp://example.com/x.ts", strict) == .schemeNotAllowed)
        #expect(refusal("http://93.184.215.14/x.ts", strict) == nil)
        // Read with the client's own URL parsing (no Foundation in the HTTP stack): what has no scheme or no host is
        // an invalid URL; the user information and the port are not part of the host checked.
        #expect(refusal("example.com/x.ts", strict) == .invalidURL)
        #expect(refusal("http:///x.ts", strict) == .invalidURL)
        #expect(refusal("http://user@127.0.0.1:8080/x.ts", strict) == .addressNotAllowed)
        #expect(refusal("HTTP://[::1]:8443/x.ts", strict) == .addressNotAllowed)
        let open = UpstreamPolicy(allowPrivate: true)
        #expect(refusal("http://127.0.0.1:8080/live.m3u8", open) == nil)
        #expect(refusal("file:///etc/passwd", open) == .schemeNotAllowed)
    }
}
