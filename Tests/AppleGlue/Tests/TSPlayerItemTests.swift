import AVFoundation
import Foundation
import TSPlayerKit
import TSPlayerKitAppleGlue
import Testing

@Suite("TSPlayerItem (Apple glue, against the AVFoundation stand-in)", .temporaryFolders)
struct TSPlayerItemTests {
    @Test("an item serves its file as HLS at its URL, and its routes go when it is released")
    func servesAndReleases() async throws {
        let server = PlaybackServer()
        var item: TSPlayerItem? = try TSPlayerItem(source: TSPlaybackSession(tsFile: sampleTS.path), server: server)
        let url = try #require(item?.url)
        #expect(url.absoluteString.hasPrefix("http://127.0.0.1:"))
        #expect(url.lastPathComponent == "master.m3u8")
        let playerItem = try #require(item?.playerItem)
        let itemURL = await MainActor.run { (playerItem.asset as? AVURLAsset)?.url }
        #expect(itemURL == url)

        let master = await glueGet(url)
        #expect(master.status == 200)
        #expect(String(decoding: master.body, as: UTF8.self).hasPrefix("#EXTM3U"))
        // The playlist grows while the file is indexed; on a loaded machine it can still list no segment here.
        let session = try #require(item?.source as? TSPlaybackSession)
        await session.waitUntilIndexed()
        let media = await glueGet(url.deletingLastPathComponent().appendingPathComponent("index.m3u8"))
        #expect(media.status == 200)
        #expect(String(decoding: media.body, as: UTF8.self).contains("#EXTINF:"))

        let source = try #require(item?.source)
        #expect(server.baseURL(for: source) != nil)
        item = nil
        #expect(server.baseURL(for: source) == nil)
        #expect(server.boundPort == nil, "the server stops with its last session")
        #expect(await eventually { await glueGet(url).status != 200 })
    }

    @Test("an item asked for fragmented MP4 serves the file's tracks as fMP4 playlists and segments")
    func servesFragmentedMP4() async throws {
        var item: TSPlayerItem? = try TSPlayerItem(tsFileURL: sampleTS, container: .fmp4)
        let url = try #require(item?.url)
        let session = try #require(item?.source as? TSPlaybackSession)
        #expect(session.container == .fmp4)
        await session.waitUntilIndexed()
        let master = String(decoding: await glueGet(url).body, as: UTF8.self)
        #expect(master.contains("video.m3u8"), "\(master)")
        #expect(master.contains("CLOSED-CAPTIONS=NONE"), "\(master)")
        let base = url.deletingLastPathComponent()
        let media = String(decoding: await glueGet(base.appendingPathComponent("video.m3u8")).body, as: UTF8.self)
        #expect(media.contains("#EXT-X-MAP:URI=\"video-init.mp4\""), "\(media)")
        let initSegment = await glueGet(base.appendingPathComponent("video-init.mp4"))
        #expect(initSegment.status == 200 && initSegment.body.count > 8)
        #expect(String(decoding: initSegment.body.dropFirst(4).prefix(4), as: UTF8.self) == "ftyp")
        let segment = await glueGet(base.appendingPathComponent("video/0.m4s"))
        #expect(segment.status == 200)
        #expect(String(decoding: segment.body.dropFirst(4).prefix(4), as: UTF8.self) == "styp")
        item = nil
    }

    @Test(
        "the synchronous initialisers do not deadlock on the main actor or on a thread of their own",
        .timeLimit(.minutes(1)))
    func mainActorAndThreads() async throws {
        // The seed library's item was made on the main actor (SwiftUI views, view controllers); a registration that
        // waited for a task inheriting the main actor would never return there.
        let url = try await MainActor.run { try TSPlayerItem(tsFileURL: sampleTS).url }
        #expect(url.lastPathComponent == "master.m3u8")
        let fromThread = await withCheckedContinuation { (done: CheckedContinuation<String?, Never>) in
            let thread = Thread { done.resume(returning: try? TSPlayerItem(tsFileURL: sampleTS).url.absoluteString) }
            thread.start()
        }
        #expect(fromThread?.hasSuffix("/master.m3u8") == true)
    }

    @Test(
        "the synchronous initialisers do not deadlock inside tasks, more of them at once than the pool has threads",
        .timeLimit(.minutes(1)))
    func insideTasks() async throws {
        let count = 4 * max(2, ProcessInfo.processInfo.activeProcessorCount)
        let urls = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<count {
                group.addTask {
                    let item = try TSPlayerItem(tsFileURL: sampleTS)
                    // Hold the pool thread a little, as a caller doing other synchronous work would.
                    // blocks: what this test is about: callers that hold the cooperative threads
                    _ = DispatchSemaphore(value: 0).wait(timeout: .now() + 0.02)
                    let answer = await glueGet(item.url)
                    #expect(answer.status == 200)
                    return item.url.absoluteString
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(Set(urls).count == count, "every item has a token of its own")
        // Inside one task, synchronously, twice in a row.
        let task = Task { () throws -> Bool in
            let first = try TSPlayerItem(tsFileURL: sampleTS)
            let second = try TSPlayerItem(tsFileURL: sampleTS, totalDuration: 30)
            return first.url != second.url
        }
        #expect(try await task.value)
    }

    @Test("errors are the seed library's: a missing file, a segment outside the file, bad arguments")
    func seedErrors() throws {
        let folder = try GlueFolder()
        let missing = folder.url.appendingPathComponent("missing.ts")
        do {
            _ = try TSPlayerItem(tsFileURL: missing)
            Issue.record("a missing file opened")
        } catch FileStreamerError.cannotOpenFile(let url) {
            #expect(url.path == missing.path)
        }

        let size = try #require(try FileManager.default.attributesOfItem(atPath: sampleTS.path)[.size] as? NSNumber)
        let fileSize = size.uint64Value
        do {
            _ = try TSPlayerItem(
                tsFileURL: sampleTS, segments: [SegmentInfo(offset: fileSize - 188, duration: 2, length: 376)])
            Issue.record("a segment outside the file was accepted")
        } catch FileStreamerError.offsetOutOfRange(let offset, let reported) {
            #expect(offset == fileSize - 188)
            #expect(reported == fileSize)
        }

        #expect(throws: TSPlayerItemError.emptySegments) {
            _ = try TSPlayerItem(tsFileURL: sampleTS, segments: [])
        }
        #expect(throws: TSPlayerItemError.missingFileField) {
            _ = try TSPlayerItem(tsFilesDirectory: folder.url, segments: [SegmentInfo(duration: 2)])
        }
        do {
            _ = try TSPlayerItem(tsFilesDirectory: folder.url.appendingPathComponent("nowhere"))
            Issue.record("a missing folder opened")
        } catch FileStreamerError.cannotOpenFile(let url) {
            #expect(url.lastPathComponent == "nowhere")
        }

        let text = try folder.write(Array(repeating: UInt8(ascii: "x"), count: 4096), to: "notes.ts")
        do {
            _ = try TSPlayerItem(tsFileURL: text)
            Issue.record("a text file was taken for a transport stream")
        } catch TSPlayerItemError.playback(let error) {
            #expect(error.code == .notTransportStream)
            #expect(error.path == text.path)
        }
        #expect(FileStreamerError.offsetOutOfRange(offset: 5, fileSize: 4).localizedDescription.contains("4 bytes"))
    }

    @Test("folders: a folder of .ts files by name order or by given segments, and an HLS folder as it is")
    func folders() async throws {
        let folder = try GlueFolder()
        let bytes = try [UInt8](Data(contentsOf: sampleTS))
        _ = try folder.write(bytes, to: "part-000.ts")
        _ = try folder.write(bytes, to: "part-001.ts")
        let discovered = try TSPlayerItem(tsFilesDirectory: folder.url)
        let playlist = await glueGet(discovered.url.deletingLastPathComponent().appendingPathComponent("index.m3u8"))
        #expect(playlist.status == 200)
        #expect(String(decoding: playlist.body, as: UTF8.self).components(separatedBy: "#EXTINF:").count == 3)

        let given = try TSPlayerItem(
            tsFilesDirectory: folder.url,
            segments: [SegmentInfo(offset: 0, duration: 4, length: UInt64(bytes.count), file: "part-001.ts")])
        #expect(await glueGet(given.url).status == 200)

        let hls = try GlueFolder()
        let media = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\nseg.ts\n#EXT-X-ENDLIST\n"
        _ = try hls.write(Array(media.utf8), to: "master.m3u8")
        _ = try hls.write(bytes, to: "seg.ts")
        let presentation = try TSPlayerItem(fmp4Directory: hls.url)
        #expect(presentation.url.lastPathComponent == "master.m3u8")
        let served = await glueGet(presentation.url)
        #expect(String(decoding: served.body, as: UTF8.self) == media)
    }
}
