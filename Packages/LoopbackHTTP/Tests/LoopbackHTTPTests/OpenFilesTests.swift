import FileRange
import Foundation
import Testing

@testable import LoopbackHTTP

/// The static-file handler reuses an opened file for a short time; these prove a reused descriptor never serves
/// what the path no longer names, and that descriptors are closed when they expire.
@Suite("Reused open files", .temporaryFolders)
struct OpenFilesTests {
    let tree: TempTree
    let app: HTTPApplication

    init() throws {
        tree = try TempTree()
        var router = Router()
        router.add(
            .get, "/static/**", handler: StaticFileHandler(root: tree.www, openFileValidity: .seconds(60)).handler)
        router.add(.get, "/fresh/**", handler: StaticFileHandler(root: tree.www, openFileValidity: .zero).handler)
        app = HTTPApplication(router: router, configuration: HTTPServerConfiguration())
    }

    private func file(_ name: String) -> URL { URL(fileURLWithPath: tree.www).appendingPathComponent(name) }

    @Test func growthInPlaceIsSeenAtOnce() async throws {
        try Data("abc".utf8).write(to: file("grow.ts"))
        let first = await app.respond(to: get("/static/grow.ts"))
        #expect(first.bodyText == "abc")
        let firstTag = try #require(first.headers["ETag"])
        #expect(
            OpenFiles.shared.file(
                .init(root: try #require(StaticFileHandler.realPath(tree.www)), relative: "grow.ts"),
                now: monotonicNow()) != nil)

        let handle = try FileHandle(forWritingTo: file("grow.ts"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("defg".utf8))
        try handle.close()
        let second = await app.respond(to: get("/static/grow.ts"))
        #expect(second.bodyText == "abcdefg")
        #expect(second.headers["Content-Length"] == "7")
        #expect(second.headers["ETag"] != firstTag)
        let ranged = await app.respond(to: get("/static/grow.ts", [("Range", "bytes=3-")]))
        #expect(ranged.status.code == 206)
        #expect(ranged.bodyText == "defg")
        #expect(ranged.headers["Content-Range"] == "bytes 3-6/7")
    }

    @Test func renamedOverIsOpenedAnew() async throws {
        try Data("old".utf8).write(to: file("swap-in.ts"))
        #expect(await app.respond(to: get("/static/swap-in.ts")).bodyText == "old")
        // Data's atomic write renames a new file over the path: the reused descriptor has no link left.
        try Data("brand new".utf8).write(to: file("swap-in.ts"), options: .atomic)
        let after = await app.respond(to: get("/static/swap-in.ts"))
        #expect(after.bodyText == "brand new")
    }

    @Test func deletedIsNotServed() async throws {
        try Data("gone soon".utf8).write(to: file("gone.ts"))
        #expect(await app.respond(to: get("/static/gone.ts")).status.code == 200)
        try FileManager.default.removeItem(at: file("gone.ts"))
        let after = await app.respond(to: get("/static/gone.ts"))
        #expect(after.status.code == 404)
        #expect(
            OpenFiles.shared.file(
                .init(root: try #require(StaticFileHandler.realPath(tree.www)), relative: "gone.ts"),
                now: monotonicNow()) == nil)
    }

    @Test func zeroValidityKeepsNothingOpen() async throws {
        try Data("each time".utf8).write(to: file("fresh.ts"))
        #expect(await app.respond(to: get("/fresh/fresh.ts")).bodyText == "each time")
        #expect(
            OpenFiles.shared.file(
                .init(root: try #require(StaticFileHandler.realPath(tree.www)), relative: "fresh.ts"),
                now: monotonicNow()) == nil)
    }

    /// An entry is only found under the root it was verified against.
    @Test func entriesAreKeptPerRoot() async throws {
        try Data("rooted".utf8).write(to: file("rooted.ts"))
        #expect(await app.respond(to: get("/static/rooted.ts")).status.code == 200)
        #expect(OpenFiles.shared.file(.init(root: "/", relative: "rooted.ts"), now: monotonicNow()) == nil)
        #expect(
            OpenFiles.shared.file(
                .init(root: try #require(StaticFileHandler.realPath(tree.www)), relative: "rooted.ts"),
                now: monotonicNow()) != nil)
    }

    @Test func expiredFilesAreClosedBySweep() throws {
        let cache = OpenFiles()
        try Data("sweep".utf8).write(to: file("sweep.ts"))
        weak var weakFile: FileStreamer?
        do {
            let opened = try FileStreamer(path: file("sweep.ts").path)
            weakFile = opened
            cache.insert(.init(root: "/x", relative: "sweep.ts"), file: opened, expiry: 1_000)
        }
        #expect(weakFile != nil)
        #expect(cache.file(.init(root: "/x", relative: "sweep.ts"), now: 999) != nil)
        #expect(cache.file(.init(root: "/x", relative: "sweep.ts"), now: 1_000) == nil)
        cache.sweep(now: 999)
        #expect(weakFile != nil)
        cache.sweep(now: 1_000)
        #expect(weakFile == nil)
    }
}
