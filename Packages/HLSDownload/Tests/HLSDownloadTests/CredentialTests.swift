import FileRange
import Foundation
import HLSDownload
import HTTPClient
import Testing

/// The task's credentials go to the host of its URL and to the hosts it allows, never to the other hosts its
/// playlists name; the store that keeps them (with the other headers) is the user's alone.
@Suite(.temporaryFolders) struct CredentialTests {
    static let origin = "http://origin.test/vod/"

    /// A VOD playlist on origin.test naming a key and segments on cdn.test and keys.test, and one on its own host.
    static func files() -> [String: [UInt8]] {
        let playlist = """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:4
            #EXTINF:4.0,
            s0.ts
            #EXTINF:4.0,
            http://cdn.test/media/s1.ts
            #EXTINF:4.0,
            http://CDN.test:8080/media/s2.ts
            #EXT-X-ENDLIST

            """
        return [
            origin + "index.m3u8": Array(playlist.utf8), origin + "s0.ts": Fixtures.ts(packets: 20, seed: 0),
            "http://cdn.test/media/s1.ts": Fixtures.ts(packets: 21, seed: 1),
            "http://CDN.test:8080/media/s2.ts": Fixtures.ts(packets: 22, seed: 2),
        ]
    }

    static func options(allowing hosts: [String] = []) -> DownloadOptions {
        var options = DownloadOptions()
        options.headers = [
            HTTPHeaders.Field(name: "Authorization", value: "Bearer t"),
            HTTPHeaders.Field(name: "Cookie", value: "c=1"),
            HTTPHeaders.Field(name: "Proxy-Authorization", value: "Basic p"),
            HTTPHeaders.Field(name: "X-Api-Key", value: "k"),
            HTTPHeaders.Field(name: "Referer", value: "http://site.test/"),
            HTTPHeaders.Field(name: "Origin", value: "http://site.test"),
        ]
        options.userAgent = "TestAgent/1"
        options.secretHeaders = ["x-api-key"]
        options.credentialHosts = hosts
        return options
    }

    static let secrets = ["Authorization", "Cookie", "Proxy-Authorization", "X-Api-Key"]
    static let harmless = ["Referer", "Origin", "User-Agent"]

    @Test func credentialsStayOnTheOriginsHost() async throws {
        let origin = FakeOrigin(files: Self.files())
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(url: Self.origin + "index.m3u8", options: Self.options())
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed, "\(String(describing: info.error))")
        #expect(origin.requests.count == 4)
        for request in origin.requests {
            let own = request.url.hasPrefix(Self.origin)
            for name in Self.secrets {
                #expect((request.header(name) != nil) == own, "\(name) on \(request.url)")
            }
            for name in Self.harmless { #expect(request.header(name) != nil, "\(name) on \(request.url)") }
        }
    }

    @Test func hostsAllowedByNameGetThem() async throws {
        let origin = FakeOrigin(files: Self.files())
        let manager = try Fixtures.manager(origin)
        let created = try await manager.createTask(
            url: Self.origin + "index.m3u8", options: Self.options(allowing: ["cdn.test"]))
        let info = try #require(await manager.waitUntilSettled(created.id))
        #expect(info.state == .completed, "\(String(describing: info.error))")
        for request in origin.requests {
            for name in Self.secrets { #expect(request.header(name) != nil, "\(name) on \(request.url)") }
        }
    }

    /// The store root this creates (and the folders above it) is 0700 and `tasks.json` 0600; a store file an older
    /// version left readable by others is made 0600 when the store opens.
    @Test func theStoreIsTheUsersAlone() async throws {
        let root = Fixtures.temporaryFolder() + "/store/inner"
        let origin = FakeOrigin(files: Self.files())
        let manager = try Fixtures.manager(origin, root: root)
        #expect(FileSystem.permissions(root) == 0o700)
        #expect(FileSystem.permissions(String(root.dropLast("/inner".count))) == 0o700)
        let created = try await manager.createTask(url: Self.origin + "index.m3u8", options: Self.options())
        _ = await manager.waitUntilSettled(created.id)
        #expect(FileSystem.permissions(root + "/tasks.json") == 0o600)
        try FileSystem.setPermissions(root + "/tasks.json", 0o644)
        _ = try Fixtures.manager(origin, root: root)
        #expect(FileSystem.permissions(root + "/tasks.json") == 0o600)
        // A store root that exists keeps its mode (the user's folder); the file in it is what holds the headers.
        let existing = Fixtures.temporaryFolder() + "/mine"
        try FileSystem.createFolders(existing, mode: 0o755)
        try FileSystem.setPermissions(existing, 0o755)
        _ = try Fixtures.manager(origin, root: existing)
        #expect(FileSystem.permissions(existing) == 0o755)
    }

    /// Options saved before secretHeaders and credentialHosts existed read back with their defaults.
    @Test func optionsOfAnOlderStoreDecode() throws {
        var saved = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.options())) as? [String: Any])
        #expect(saved.removeValue(forKey: "secretHeaders") != nil)
        #expect(saved.removeValue(forKey: "credentialHosts") != nil)
        let json = try JSONSerialization.data(withJSONObject: saved)
        let options = try JSONDecoder().decode(DownloadOptions.self, from: json)
        #expect(options.headers == Self.options().headers)
        #expect(options.userAgent == "TestAgent/1")
        #expect(options.secretHeaders.isEmpty && options.credentialHosts.isEmpty)
        var full = Self.options(allowing: ["cdn.test"])
        full.maxBytes = 7
        full.maxResourceBytes = 9
        let again = try JSONDecoder().decode(DownloadOptions.self, from: JSONEncoder().encode(full))
        #expect(again == full)
    }
}
