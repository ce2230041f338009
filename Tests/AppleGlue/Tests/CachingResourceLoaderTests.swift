import AVFoundation
import FileRange
import Foundation
import TSPlayerKit
import TSPlayerKitAppleGlue
import Testing
import UniformTypeIdentifiers

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("CachingResourceLoader (Apple glue, against the AVFoundation stand-in)", .temporaryFolders)
struct CachingResourceLoaderTests {
    /// A caching proxy over a loopback origin (private upstreams allowed: the origin is on this machine).
    private static func proxy(_ folder: GlueFolder) throws -> CachingMediaProxy {
        var options = CachingMediaProxy.Options(cacheDirectory: folder.url.appendingPathComponent("cache").path)
        options.fetch.allowPrivateUpstreams = true
        options.fetchWindow = 64 << 10
        return try CachingMediaProxy(options: options)
    }

    private static func request(
        _ url: URL, offset: Int64, length: Int, toEnd: Bool = false, information: Bool = true
    ) -> AVAssetResourceLoadingRequest {
        AVAssetResourceLoadingRequest(
            request: URLRequest(url: url),
            contentInformationRequest: information ? AVAssetResourceLoadingContentInformationRequest() : nil,
            dataRequest: AVAssetResourceLoadingDataRequest(
                requestedOffset: offset, requestedLength: length, requestsAllDataToEndOfResource: toEnd))
    }

    @Test("a loading request gets content information and its bytes in chunks, with the caller's headers")
    func answersRequests() async throws {
        let body = (0..<(300 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let origin = try GlueOrigin(bodies: ["/media/track.ts": (type: "video/mp2t", body: body)])
        let folder = try GlueFolder()
        let loader = CachingResourceLoader(proxy: try Self.proxy(folder))
        let remote = origin.url("/media/track.ts")
        let asset = loader.asset(for: remote, headers: [(name: "Authorization", value: "Bearer glue")])
        #expect(asset.url.scheme == "tsplayer-cache-http")
        #expect(asset.url.path == "/media/track.ts")
        #expect(asset.resourceLoader.delegate === loader)

        let first = Self.request(asset.url, offset: 1000, length: 200 << 10)
        #expect(await asset.resourceLoader.standInDeliver(first))
        #expect(await eventually { first.isFinished })
        #expect(first.standInFinishError == nil)
        #expect(first.standInFinishCount == 1)
        let information = try #require(first.contentInformationRequest)
        #expect(information.contentLength == Int64(body.count))
        #expect(information.isByteRangeAccessSupported)
        #expect(information.contentType == UTType(mimeType: "video/mp2t")?.identifier)
        let data = try #require(first.dataRequest)
        #expect([UInt8](data.standInReceivedData) == Array(body[1000..<(1000 + (200 << 10))]))
        #expect(data.currentOffset == 1000 + (200 << 10))
        #expect(data.standInResponseCount > 1, "the bytes arrive in several responses, not one")
        #expect(origin.requests.withLock { $0.allSatisfy { $0.headers["authorization"] == "Bearer glue" } })

        let rest = Self.request(asset.url, offset: 250 << 10, length: 1, toEnd: true, information: false)
        #expect(await asset.resourceLoader.standInDeliver(rest))
        #expect(await eventually { rest.isFinished })
        #expect([UInt8](try #require(rest.dataRequest).standInReceivedData) == Array(body[(250 << 10)...]))

        let foreign = Self.request(remote, offset: 0, length: 10)
        #expect(await asset.resourceLoader.standInDeliver(foreign) == false, "plain URLs are not the loader's")
        await origin.stop()
    }

    @Test("an origin error finishes the request with that error")
    func originError() async throws {
        let origin = try GlueOrigin(bodies: [:])
        let folder = try GlueFolder()
        let loader = CachingResourceLoader(proxy: try Self.proxy(folder))
        let asset = loader.asset(for: origin.url("/gone.mp3"))
        let request = Self.request(asset.url, offset: 0, length: 100)
        #expect(await asset.resourceLoader.standInDeliver(request))
        #expect(await eventually { request.isFinished })
        let error = try #require(request.standInFinishError as? CachingProxyError)
        #expect(error.status == 404)
        #expect(request.dataRequest?.standInReceivedData.isEmpty == true)
        await origin.stop()
    }

    @Test("a cancelled request is never finished, and the loader lets go of it")
    func cancellation() async throws {
        let origin = try GlueOrigin(bodies: [:], silent: ["/slow.mp3"])
        let folder = try GlueFolder()
        let loader = CachingResourceLoader(proxy: try Self.proxy(folder))
        let asset = loader.asset(for: origin.url("/slow.mp3"))
        let request = Self.request(asset.url, offset: 0, length: 4096)
        #expect(await asset.resourceLoader.standInDeliver(request))
        #expect(await eventually { origin.requests.withLock { !$0.isEmpty } }, "the load reached the origin")
        await asset.resourceLoader.standInCancel(request)
        #expect(request.isCancelled)
        // The cancelled load lets go: nothing keeps spinning while the origin stays silent.
        let cpuBefore = clock()
        try await Task.sleep(for: .milliseconds(500))
        let cpu = Double(clock() - cpuBefore) / Double(CLOCKS_PER_SEC)
        #expect(cpu < 0.3, "the process used \(cpu) s of CPU in the 0.5 s after the cancellation")
        #expect(request.standInFinishCount == 0)
        #expect(request.dataRequest?.standInReceivedData.isEmpty == true)
        await origin.stop()
    }

    @Test("the loader is held weakly by the resource loader, as AVFoundation holds its delegate")
    func weakDelegate() throws {
        let folder = try GlueFolder()
        var loader: CachingResourceLoader? = CachingResourceLoader(proxy: try Self.proxy(folder))
        let asset = try #require(loader?.asset(for: URL(string: "https://media.example/a.mp3")!))
        #expect(asset.resourceLoader.delegate != nil)
        loader = nil
        #expect(asset.resourceLoader.delegate == nil)
    }
}
