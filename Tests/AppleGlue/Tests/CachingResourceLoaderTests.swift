import AVFoundation
import FileRange
import Foundation
import TSPlayerKit
import Testing
import UniformTypeIdentifiers

@testable import TSPlayerKitAppleGlue

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
        #expect(first.standInCallsOffDelegateQueue == 0, "every answer and the finish came on the delegate queue")
        #expect(first.standInException == nil)

        let rest = Self.request(asset.url, offset: 250 << 10, length: 1, toEnd: true, information: false)
        #expect(await asset.resourceLoader.standInDeliver(rest))
        #expect(await eventually { rest.isFinished })
        #expect([UInt8](try #require(rest.dataRequest).standInReceivedData) == Array(body[(250 << 10)...]))
        #expect(rest.standInCallsOffDelegateQueue == 0)

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
        #expect(request.standInCallsOffDelegateQueue == 0)
        #expect(await eventually { loader.activeLoadCount == 0 })
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
        #expect(loader.activeLoadCount == 0, "the cancelled load is forgotten at once")
        await origin.stop()
    }

    /// A request for content information only, allowing `allowed`.
    private static func informationRequest(_ url: URL, allowed: [String]?) -> AVAssetResourceLoadingRequest {
        AVAssetResourceLoadingRequest(
            request: URLRequest(url: url),
            contentInformationRequest: AVAssetResourceLoadingContentInformationRequest(allowedContentTypes: allowed))
    }

    @Test(
        "the content type: declared (MIME type, else extension), one of the allowed types, never one that raises",
        arguments: [
            // (path, origin's MIME type, allowedContentTypes, expected type; nil: finished with contentTypeNotAllowed)
            ("/a/clip.ts", "video/mp2t; charset=utf-8", nil, "public.mpeg-2-transport-stream"),
            ("/a/clip.ts", "application/octet-stream", nil, "public.mpeg-2-transport-stream"),
            ("/a/clip.mp4", "application/octet-stream", ["public.mpeg-4"], "public.mpeg-4"),
            (
                "/a/clip.ts", "application/octet-stream", ["public.mpeg-4", "public.mpeg-2-transport-stream"],
                "public.mpeg-2-transport-stream"
            ),
            ("/a/clip", "VIDEO/MP2T", ["public.movie"], "public.movie"),
            ("/a/clip.bin", "application/octet-stream", nil, "public.data"),
            ("/a/clip.ts", "video/mp2t", ["public.mp3"], nil),
            ("/a/clip.bin", "application/octet-stream", ["public.mpeg-4"], nil),
            ("/a/clip.bin", "application/x-unknown", ["public.mpeg-4"], nil),
        ] as [(String, String, [String]?, String?)])
    func contentType(path: String, mimeType: String, allowed: [String]?, expected: String?) async throws {
        let origin = try GlueOrigin(bodies: [path: (type: mimeType, body: Array(repeating: 0x47, count: 188))])
        let folder = try GlueFolder()
        let loader = CachingResourceLoader(proxy: try Self.proxy(folder))
        let asset = loader.asset(for: origin.url(path))
        let request = Self.informationRequest(asset.url, allowed: allowed)
        #expect(await asset.resourceLoader.standInDeliver(request))
        #expect(await eventually { request.isFinished })
        #expect(request.standInException == nil, "AVFoundation would raise: \(request.standInException ?? "")")
        #expect(request.standInCallsOffDelegateQueue == 0)
        let information = try #require(request.contentInformationRequest)
        if let expected {
            #expect(request.standInFinishError == nil)
            #expect(information.contentType == expected)
            #expect(information.contentLength == 188)
        } else {
            let error = try #require(request.standInFinishError as? CachingResourceLoaderError)
            #expect(error.code == .contentTypeNotAllowed)
            #expect(information.contentType == nil, "no type outside allowedContentTypes was ever set")
        }
        await origin.stop()
    }

    @Test("an unknown MIME type maps to a dynamic type when any type is allowed")
    func dynamicType() async throws {
        let origin = try GlueOrigin(bodies: ["/x.bin": (type: "application/x-unknown", body: [1, 2, 3])])
        let folder = try GlueFolder()
        let loader = CachingResourceLoader(proxy: try Self.proxy(folder))
        let asset = loader.asset(for: origin.url("/x.bin"))
        let request = Self.informationRequest(asset.url, allowed: nil)
        #expect(await asset.resourceLoader.standInDeliver(request))
        #expect(await eventually { request.isFinished })
        let type = try #require(request.contentInformationRequest?.contentType)
        #expect(type == UTType(mimeType: "application/x-unknown")?.identifier)
        #expect(UTType(type)?.isDynamic == true)
        await origin.stop()
    }

    @Test("the app's headers go with every request of the asset, the resource's own and its children's in the scheme")
    func headersOnEveryResource() async throws {
        let bodies: [String: (type: String, body: [UInt8])] = [
            "/live/master.m3u8": (type: "application/vnd.apple.mpegurl", body: Array("#EXTM3U\n".utf8)),
            "/live/low/index.m3u8": (type: "application/vnd.apple.mpegurl", body: Array("#EXTM3U\n".utf8)),
            "/live/low/seg1.ts": (type: "video/mp2t", body: Array(repeating: 0x47, count: 376)),
        ]
        let origin = try GlueOrigin(bodies: bodies)
        let folder = try GlueFolder()
        let loader = CachingResourceLoader(proxy: try Self.proxy(folder))
        let asset = loader.asset(for: origin.url("/live/master.m3u8"), headers: [(name: "Authorization", value: "A")])
        // What AVFoundation asks for when the playlists' URIs are relative: URLs in the loader's scheme.
        let child = try #require(URL(string: "low/index.m3u8", relativeTo: asset.url)?.absoluteURL)
        let segment = try #require(URL(string: "seg1.ts", relativeTo: child)?.absoluteURL)
        #expect(child.scheme == asset.url.scheme)
        for url in [asset.url, child, segment] {
            let request = Self.request(url, offset: 0, length: 8)
            #expect(await asset.resourceLoader.standInDeliver(request))
            #expect(await eventually { request.isFinished })
            #expect(request.standInFinishError == nil)
        }
        // The same URL as another asset of another loader (another cache, so the origin is asked again).
        let fresh = CachingResourceLoader(proxy: try Self.proxy(try GlueFolder()))
        let freshAsset = fresh.asset(
            for: origin.url("/live/master.m3u8"), headers: [(name: "Authorization", value: "C")])
        let freshRequest = Self.request(freshAsset.url, offset: 0, length: 8)
        #expect(await freshAsset.resourceLoader.standInDeliver(freshRequest))
        #expect(await eventually { freshRequest.isFinished })

        let seen = origin.requests.withLock { $0 }
        for path in ["/live/master.m3u8", "/live/low/index.m3u8", "/live/low/seg1.ts"] {
            #expect(seen.contains { $0.path == path }, "\(path) was fetched")
        }
        #expect(seen.filter { $0.path != "/live/master.m3u8" }.allSatisfy { $0.headers["authorization"] == "A" })
        #expect(seen.contains { $0.path == "/live/master.m3u8" && $0.headers["authorization"] == "A" })
        #expect(seen.contains { $0.path == "/live/master.m3u8" && $0.headers["authorization"] == "C" })
        #expect(seen.allSatisfy { $0.headers["authorization"] != nil }, "no request went out without the app's headers")
        await origin.stop()
    }

    @Test("no load is left behind: many quick requests all end with nothing held")
    func noStaleLoads() async throws {
        let origin = try GlueOrigin(bodies: ["/s.ts": (type: "video/mp2t", body: Array(repeating: 0x47, count: 188))])
        let folder = try GlueFolder()
        let loader = CachingResourceLoader(proxy: try Self.proxy(folder))
        let asset = loader.asset(for: origin.url("/s.ts"))
        var requests: [AVAssetResourceLoadingRequest] = []
        for index in 0..<60 {
            let request = Self.request(asset.url, offset: Int64(index % 188), length: 1, information: index % 2 == 0)
            #expect(await asset.resourceLoader.standInDeliver(request))
            requests.append(request)
        }
        #expect(await eventually { requests.allSatisfy(\.isFinished) })
        #expect(await eventually { loader.activeLoadCount == 0 })
        #expect(requests.allSatisfy { $0.standInFinishCount == 1 && $0.standInCallsOffDelegateQueue == 0 })
        await origin.stop()
    }

    @Test("the stand-in refuses a content type outside a non-nil allowedContentTypes, as AVFoundation raises")
    func standInRefuses() throws {
        let url = try #require(URL(string: "tsplayer-cache-https://media.example/a.ts"))
        let request = Self.informationRequest(url, allowed: ["public.mpeg-4"])
        request.contentInformationRequest?.contentType = "public.data"
        request.finishLoading()
        #expect(!request.isFinished)
        #expect(request.standInException != nil)
        request.contentInformationRequest?.contentType = "public.mpeg-4"
        request.finishLoading()
        #expect(request.isFinished)
        #expect(UTType(mimeType: "application/x-unknown")?.isDynamic == true)
        #expect(UTType(mimeType: "not a MIME type") == nil)
    }

    @MainActor
    @Test("the documented snippet: an asset into a player that does not wait to minimise stalling")
    func documentedSnippet() async throws {
        let origin = try GlueOrigin(bodies: [:])
        let folder = try GlueFolder()
        let proxy = try Self.proxy(folder)
        let remoteURL = origin.url("/movie.ts")
        let loader = CachingResourceLoader(proxy: proxy)
        let asset = loader.asset(for: remoteURL, headers: [(name: "Authorization", value: "Bearer …")])
        let player = AVPlayer(playerItem: AVPlayerItem(asset: asset))  // keep `loader` alive while it plays
        player.automaticallyWaitsToMinimizeStalling = false

        #expect(player.automaticallyWaitsToMinimizeStalling == false)
        #expect(asset.resourceLoader.delegate === loader)
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
