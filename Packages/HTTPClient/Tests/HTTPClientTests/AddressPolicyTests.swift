import FileRange
import TestSupport
import Testing

@testable import HTTPClient

/// The upstream-address rule (``UpstreamAddressPolicy/isPrivate(_:)``) over a table of addresses, every IPv6 form
/// that carries an IPv4 address judged as that address, the parser's refusals, and the refusal at connect time.
@Suite("Address policy")
struct AddressPolicyTests {
    /// IPv4 addresses and whether each is private, at the edges of every range.
    static let ipv4: [(String, Bool)] = [
        ("0.0.0.0", true), ("0.255.255.255", true), ("1.0.0.0", false), ("9.255.255.255", false),
        ("10.0.0.0", true), ("10.255.255.255", true), ("11.0.0.0", false),
        ("100.63.255.255", false), ("100.64.0.0", true), ("100.127.255.255", true), ("100.128.0.0", false),
        ("126.255.255.255", false), ("127.0.0.0", true), ("127.0.0.1", true), ("127.255.255.255", true),
        ("128.0.0.0", false), ("169.253.255.255", false), ("169.254.0.0", true), ("169.254.169.254", true),
        ("169.255.0.0", false), ("172.15.255.255", false), ("172.16.0.0", true), ("172.31.255.255", true),
        ("172.32.0.0", false), ("192.0.0.0", true), ("192.0.0.255", true), ("192.0.1.0", false),
        ("192.0.2.1", true), ("192.167.255.255", false), ("192.168.0.0", true), ("192.168.255.255", true),
        ("192.169.0.0", false), ("198.17.255.255", false), ("198.18.0.0", true), ("198.19.255.255", true),
        ("198.20.0.0", false), ("198.51.100.7", true), ("203.0.113.9", true), ("203.0.114.0", false),
        ("8.8.8.8", false), ("93.184.216.34", false), ("223.255.255.255", false), ("224.0.0.1", true),
        ("239.255.255.250", true), ("240.0.0.1", true), ("255.255.255.255", true),
    ]

    /// IPv6 addresses (no IPv4 inside) and whether each is private.
    static let ipv6: [(String, Bool)] = [
        ("::", true), ("::1", true), ("0:0:0:0:0:0:0:1", true), ("::2", true),
        ("fc00::1", true), ("fd12:3456:789a::1", true), ("fbff:ffff::1", false), ("fe00::1", false),
        ("fe80::1", true), ("fe80::1%eth0", true), ("febf:ffff::1", true), ("fec0::1", true), ("feff::1", true),
        ("ff00::1", true), ("ff02::1", true), ("ff05::1:3", true), ("64:ff9b:1::1", true),
        ("100::1", true), ("100:0:0:1::1", false), ("2001:db8::1", true), ("2001:db9::1", false),
        ("2001:4860:4860::8888", false), ("2606:2800:220:1:248:1893:25c8:1946", false), ("2606:2800:220:1::", false),
        ("[2001:4860:4860::8888]", false), ("[::1]", true),
    ]

    /// Texts that are not numeric addresses (private, as the policy cannot judge them).
    static let unreadable = [
        "", "not an address", "localhost", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.04", "0x7f.0.0.1",
        "2130706433", "1.2.3.-4", ":", ":::", "1::2::3", "::1:", ":1::", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9",
        "12345::", "g::1", "::1.2.3", "::1.2.3.4:5", "1:2:3:4:5:6:7:1.2.3.4", "::ffff:256.0.0.1", "[::1", "+1::",
        "::-1", "::+7f00:1", "1.2.3.+4",
    ]

    /// The IPv6 forms that carry `v4` (four bytes), in dotted and hexadecimal text: IPv4-mapped, IPv4-compatible,
    /// IPv4-translated, NAT64 and 6to4.
    static func embeddings(_ v4: [UInt8]) -> [String] {
        let dotted = v4.map(String.init).joined(separator: ".")
        let high = String(UInt16(v4[0]) << 8 | UInt16(v4[1]), radix: 16)
        let low = String(UInt16(v4[2]) << 8 | UInt16(v4[3]), radix: 16)
        return [
            "::ffff:\(dotted)", "::ffff:\(high):\(low)", "0:0:0:0:0:ffff:\(dotted)", "::FFFF:\(dotted)",
            "::\(dotted)", "::\(high):\(low)", "0:0:0:0:0:0:\(dotted)",
            "::ffff:0:\(dotted)", "::ffff:0:\(high):\(low)",
            "64:ff9b::\(dotted)", "64:ff9b::\(high):\(low)", "0064:ff9b:0:0:0:0:\(dotted)",
            "2002:\(high):\(low)::1", "2002:\(high):\(low):1:2:3:4:5",
        ]
    }

    @Test func ipv4Table() {
        for (address, expected) in Self.ipv4 {
            #expect(UpstreamAddressPolicy.isPrivate(address) == expected, "\(address)")
        }
    }

    @Test func ipv6Table() {
        for (address, expected) in Self.ipv6 {
            #expect(UpstreamAddressPolicy.isPrivate(address) == expected, "\(address)")
        }
    }

    @Test func unreadableAddressesArePrivate() {
        for text in Self.unreadable {
            #expect(IPAddress.parse(text) == nil, "\(text)")
            #expect(UpstreamAddressPolicy.isPrivate(text), "\(text)")
        }
    }

    /// Every IPv6 form that carries an IPv4 address gets that address's verdict, for every address of the table.
    @Test func embeddedIPv4IsJudgedAsIPv4() throws {
        for (address, expected) in Self.ipv4 {
            let v4 = try #require(IPAddress.parse(address))
            for form in Self.embeddings(v4) {
                #expect(IPAddress.parse(form)?.count == 16, "\(form)")
                #expect(UpstreamAddressPolicy.isPrivate(form) == expected, "\(form) (carries \(address))")
            }
        }
    }

    /// Every first and second byte of IPv4 against a naive model of the ranges, alone and mapped into IPv6.
    @Test func everyIPv4PrefixAgainstAModel() async {
        await blocking {
            func model(_ a: Int, _ b: Int, _ c: Int) -> Bool {
                if a == 0 || a == 10 || a == 127 || a >= 224 { return true }
                if a == 100 && (64...127).contains(b) { return true }
                if a == 169 && b == 254 { return true }
                if a == 172 && (16...31).contains(b) { return true }
                if a == 192 && b == 168 { return true }
                if a == 192 && b == 0 && (c == 0 || c == 2) { return true }
                if a == 198 && (b == 18 || b == 19) { return true }
                if a == 198 && b == 51 && c == 100 { return true }
                if a == 203 && b == 0 && c == 113 { return true }
                return false
            }
            for a in 0...255 {
                for b in 0...255 {
                    for c in [0, 2, 100, 113] {
                        let text = "\(a).\(b).\(c).1"
                        let expected = model(a, b, c)
                        if UpstreamAddressPolicy.isPrivate(text) != expected { Issue.record("\(text)") }
                        if UpstreamAddressPolicy.isPrivate("::ffff:" + text) != expected {
                            Issue.record("::ffff:\(text)")
                        }
                    }
                }
            }
        }
    }

    @Test func parserReadsEveryTextFormOfOneAddress() {
        let expected: [UInt8] = [0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        for text in [
            "2001:db8::1", "2001:0db8:0000:0000:0000:0000:0000:0001", "2001:DB8:0:0:0:0:0:1", "2001:db8::0:1",
            "[2001:db8::1]", "2001:db8::1%lo", "2001:db8::0.0.0.1",
        ] {
            #expect(IPAddress.parse(text) == expected, "\(text)")
        }
        #expect(IPAddress.parse("::") == [UInt8](repeating: 0, count: 16))
        #expect(IPAddress.parse("1::") == [0, 1] + [UInt8](repeating: 0, count: 14))
        #expect(IPAddress.parse("1:2:3:4:5:6:7::") == [0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 0])
        #expect(IPAddress.parse("::2:3:4:5:6:7:8") == [0, 0, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8])
        #expect(IPAddress.parse("1:2:3:4:5:6:7:8::") == nil)
        #expect(IPAddress.parse("192.0.2.1") == [192, 0, 2, 1])
    }

    /// IPv6 literals that reach a loopback server are refused before connecting, whatever their form.
    @Test func ipv6FormsOfLoopbackAreRefusedAtConnect() async throws {
        let origin = try RawOrigin { _ in
            .bytes(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".utf8), close: false)
        }
        var configuration = HTTPClientConfiguration()
        configuration.addressPolicy = .publicOnly
        configuration.retry = RetryPolicy(maxAttempts: 1, baseDelay: 0.01)
        let client = HTTPClient(configuration: configuration)
        for host in ["[::127.0.0.1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[64:ff9b::127.0.0.1]", "[::7f00:1]"] {
            let url = "http://\(host):\(origin.port)/a"
            do {
                _ = try await client.fetch(HTTPClientRequest(url: url), maxBytes: 100)
                Issue.record("\(url) was fetched")
            } catch let error as HTTPClientError {
                #expect(error.code == .addressRefused, "\(url): \(error)")
            }
        }
        #expect(origin.connections.withLock { $0 } == 0)
    }
}
