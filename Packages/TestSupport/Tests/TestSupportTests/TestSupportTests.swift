import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite(.temporaryFolders) struct TemporaryFoldersTests {
    @Test("a folder made in a test exists, empty, in the temporary directory, and goes when the test ends")
    func removedAtTheEnd() async throws {
        let test = try #require(Test.current)
        let made = Guard<URL?>(nil)
        try await TemporaryFoldersTrait().provideScope(for: test, testCase: nil) {
            let url = TemporaryFolderURLs.make(prefix: "support-self-")
            made.set(url)
            var isFolder: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) && isFolder.boolValue)
            #expect(try FileManager.default.contentsOfDirectory(atPath: url.path).isEmpty)
            #expect(url.lastPathComponent.hasPrefix("support-self-"))
            try Data("x".utf8).write(to: url.appendingPathComponent("file"))
        }
        let url = try #require(made.get())
        #expect(!FileManager.default.fileExists(atPath: url.path), "\(url.path) is still there")
    }

    @Test("paths and URLs name the same kind of folder")
    func pathsAndURLs() {
        let path = TemporaryFolderPaths.make(prefix: "support-path-")
        let url = TemporaryFolderURLs.make(prefix: "support-url-")
        #expect(path.hasPrefix(NSTemporaryDirectory()))
        #expect(url.path.hasPrefix(URL(fileURLWithPath: NSTemporaryDirectory()).path))
        #expect(FileManager.default.fileExists(atPath: path))
        #expect(path != url.path)
    }
}

@Suite(.temporaryFolders) struct NginxOriginTests {
    @Test("nginx serves the root at / and /slow/, logs each request, and is gone after stop()")
    func servesAndLogs() throws {
        let root = TemporaryFolderURLs.make(prefix: "support-nginx-root-")
        let body = Data((0..<10_000).map { UInt8($0 % 251) })
        try body.write(to: root.appendingPathComponent("a.ts"))
        guard let origin = try NginxOrigin(root: root) else { return }
        let fetched = try Data(contentsOf: try #require(URL(string: origin.url("a.ts"))))
        #expect(fetched == body)
        let slow = try Data(contentsOf: try #require(URL(string: origin.url("slow/a.ts"))))
        #expect(slow == body)
        let log = origin.requests()
        #expect(log.map(\.uri) == ["/a.ts", "/slow/a.ts"])
        #expect(log.map(\.status) == [200, 200])
        #expect(log.map(\.bytes) == [10_000, 10_000])
        origin.stop()
        #expect(!NginxOrigin.connects(origin.port), "nginx still answers on port \(origin.port)")
    }

    @Test("with a required Authorization, other requests get 403")
    func requiresAuthorization() throws {
        let root = TemporaryFolderURLs.make(prefix: "support-nginx-auth-")
        try Data("#EXTM3U\n".utf8).write(to: root.appendingPathComponent("a.m3u8"))
        guard let origin = try NginxOrigin(root: root, requiredAuthorization: "Bearer t") else { return }
        defer { origin.stop() }
        #expect((try? Data(contentsOf: try #require(URL(string: origin.url("a.m3u8"))))) == nil)
        #expect(origin.requests().map(\.status) == [403])
    }
}

/// A value set inside a `@Sendable` closure and read after it.
private final class Guard<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func set(_ new: Value) { lock.withLock { value = new } }
    func get() -> Value { lock.withLock { value } }
}
