// Hostile origins and local neighbours against the built tsplayer (issue 31): the log of `serve -v` shows no token
// and no raw control byte, `download` sends credentials only to the host they were given for (two loopback origins
// under different host names, 127.0.0.1 and localhost) and keeps them in a store only the user can read, and
// `proxy --mode redirect` never sends the player to a URL that stream mode would refuse.
import FileRange
import Foundation
import Testing

@Suite(.serialized, .temporaryFolders) struct HostileOriginEndToEndTests {
    static func response(_ status: String, _ body: [UInt8] = [], extra: String = "") -> [UInt8] {
        Array("HTTP/1.1 \(status)\r\nContent-Length: \(body.count)\r\n\(extra)\r\n".utf8) + body
    }

    /// `curl` with `arguments`; its output (`-w` text) or nil when curl is missing.
    func curl(_ arguments: [String]) async throws -> String? {
        guard let curl = EndToEnd.tool("curl") else { return nil }
        return try await EndToEnd.run(curl, ["-s", "--path-as-is", "-o", "/dev/null"] + arguments).out
    }

    /// Refused requests (a foreign Host: 421; a malformed escape: 400) are logged without their token, and control
    /// bytes a client put in a path (`%1b`, `%0a`, `%00`) reach the log escaped.
    @Test func serveLogShowsNoTokenAndNoRawControlBytes() async throws {
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let serve = try await ProxyTestProcess(tsplayer, ["serve", "-v"])
        defer { serve.stop() }
        let playlist = try #require(URL(string: serve.firstLine), "serve said \(serve.firstLine)")
        let token = try #require(playlist.pathComponents.dropFirst().first)
        #expect(token.count == 32)
        let base = "http://127.0.0.1:\(playlist.port ?? 0)/\(token)"
        guard
            let foreign = try await curl(["-w", "%{http_code}", "-H", "Host: evil.example", serve.firstLine]),
            let malformed = try await curl(["-w", "%{http_code}", base + "/%zz/index.m3u8"]),
            let forged = try await curl(["-w", "%{http_code}", base + "/a%1b%5b2J%0aGET%20forged%00.ts"])
        else { return }
        #expect([foreign, malformed, forged] == ["421", "400", "404"])
        // The access log line is written when the exchange ends; give the process a moment.
        let deadline = Date().addingTimeInterval(5)
        while !serve.stderr.contains("forged"), Date() < deadline { await suspend(0.02) }
        await serve.stop()
        let log = serve.stderr
        #expect(!log.contains(token), "\(log)")
        #expect(!log.utf8.contains(0x1B) && !log.utf8.contains(0) && !log.utf8.contains(0x0D), "\(log)")
        let lines = log.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("GET /{token}/\(playlist.lastPathComponent) 421 ") }, "\(log)")
        #expect(lines.contains { $0.hasPrefix("GET /{token}/%zz/index.m3u8 400 ") }, "\(log)")
        #expect(lines.contains { $0.hasPrefix("GET /{token}/a%1B[2J%0AGET%20forged%00.ts 404 ") }, "\(log)")
    }

    /// A playlist on 127.0.0.1 naming a key and a segment on localhost, and a segment that redirects there: the
    /// credentials (Authorization, Cookie, and X-Api-Key marked with --secret-header) reach 127.0.0.1 only; Referer
    /// and User-Agent go to both. With --send-credentials-to localhost, localhost gets them too. The store that keeps
    /// the headers is 0600 in a 0700 folder.
    @Test func downloadSendsCredentialsOnlyToTheirHost() async throws {
        let segment = FailFastEndToEndTests.segment
        let other = try ScriptedOrigin { path in
            switch path {
            case "/b.ts", "/r.ts": Self.response("200 OK", segment)
            case "/k.key": Self.response("200 OK", [UInt8](repeating: 7, count: 16))
            default: Self.response("404 Not Found")
            }
        }
        let elsewhere = "http://localhost:\(other.port)"
        let playlist = """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-KEY:METHOD=AES-128,URI="\(elsewhere)/k.key"
            #EXTINF:4,
            a.ts
            #EXTINF:4,
            \(elsewhere)/b.ts
            #EXTINF:4,
            r.ts
            #EXT-X-ENDLIST

            """
        let origin = try ScriptedOrigin { path in
            switch path {
            case "/index.m3u8": Self.response("200 OK", Array(playlist.utf8))
            case "/a.ts": Self.response("200 OK", segment)
            case "/r.ts": Self.response("302 Found", extra: "Location: \(elsewhere)/r.ts\r\n")
            default: Self.response("404 Not Found")
            }
        }
        let headers = [
            "-H", "Authorization: Bearer s3cret", "-H", "Cookie: c=s3cret", "-H", "X-Api-Key: k3y-s3cret",
            "--secret-header", "X-Api-Key", "-H", "Referer: http://site.example/", "--user-agent", "Agent/1",
        ]
        for allowing in [false, true] {
            origin.heads.withLock { $0 = [] }
            other.heads.withLock { $0 = [] }
            let store = TemporaryFolders.make(prefix: "hostile-").appendingPathComponent("new/store").path
            let result = try await #require(
                try DownloadTool.run(
                    ["download", origin.url("/index.m3u8"), "-o", store] + headers
                        + (allowing ? ["--send-credentials-to", "localhost"] : [])))
            #expect(result.status == 0, "\(result.err)")
            let own = origin.heads.withLock { $0 }
            let foreign = other.heads.withLock { $0 }
            #expect(own.count == 3 && foreign.count == 3, "\(own) \(foreign)")
            for head in own {
                for field in ["Authorization: Bearer s3cret", "Cookie: c=s3cret", "X-Api-Key: k3y-s3cret"] {
                    #expect(head.contains(field), "\(head)")
                }
            }
            for head in foreign {
                #expect(head.contains("s3cret") == allowing, "\(head)")
                #expect(head.contains("Referer: http://site.example/"), "\(head)")
                #expect(head.contains("User-Agent: Agent/1"), "\(head)")
            }
            #expect(FileSystem.permissions(store + "/tasks.json") == 0o600)
            #expect(FileSystem.permissions(store) == 0o700)
        }
    }

    /// A header name that is not a token, or a host given as a URL, is bad usage (exit 64) in every command that
    /// takes them.
    @Test func credentialOptionsAreChecked() async throws {
        let url = "http://127.0.0.1:\(ScriptedOrigin.unusedPort())/x.m3u8"
        for command in ["download", "proxy", "cache-proxy"] {
            for bad in [["--secret-header", "bad name"], ["--send-credentials-to", "http://cdn.example/"]] {
                let result = try #require(try await DownloadTool.run([command, url] + bad))
                #expect(result.status == 64, "\(command) \(bad): \(result.err)")
            }
        }
    }

    /// `proxy --mode redirect` answers 302 only for what stream mode would fetch: `file:`, `gopher:` and `ftp:`
    /// segment URIs get 502 and no Location.
    @Test func proxyRedirectModeRefusesOtherSchemes() async throws {
        let refused = ["file:///etc/passwd", "gopher://127.0.0.1:70/1", "ftp://127.0.0.1/a.ts"]
        let playlist =
            "#EXTM3U\n#EXT-X-TARGETDURATION:4\n" + (["a.ts"] + refused).map { "#EXTINF:4,\n\($0)\n" }.joined()
            + "#EXT-X-ENDLIST\n"
        let origin = try ScriptedOrigin { path in
            path == "/vod.m3u8" ? Self.response("200 OK", Array(playlist.utf8)) : Self.response("404 Not Found")
        }
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let proxy = try await ProxyTestProcess(
            tsplayer, ["proxy", origin.url("/vod.m3u8"), "--mode", "redirect", "--allow-private"])
        defer { proxy.stop() }
        let master = try #require(URL(string: proxy.firstLine), "proxy said \(proxy.firstLine)")
        guard let curl = EndToEnd.tool("curl") else { return }
        let text = try await EndToEnd.run(curl, ["-s", proxy.firstLine]).out
        let uris = text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
        #expect(uris.count == 4, "\(text)")
        var answers: [String] = []
        for uri in uris {
            let url = try #require(URL(string: String(uri), relativeTo: master)).absoluteString
            answers.append(
                try await EndToEnd.run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", url]).out)
        }
        #expect(answers == ["302 " + origin.url("/a.ts"), "502 ", "502 ", "502 "])
    }
}
