import FileRange
import Foundation
import Testing

@testable import LoopbackHTTP

/// File responses take their `ETag` and `Last-Modified` from a cache of formatted validators; these prove the cache
/// gives what formatting gives, and that a file written since (another size or modification time) never gets the
/// old values.
@Suite("File validator cache", .temporaryFolders)
struct FileValidatorsTests {
    private func status(size: UInt64, seconds: Int64, nanoseconds: Int64, inode: UInt64 = 7) -> FileStatus {
        FileStatus(size: size, seconds: seconds, nanoseconds: nanoseconds, device: 1, inode: inode)
    }

    @Test func cachedValuesAreTheFormattedOnes() {
        let cache = FileValidatorCache()
        let version = status(size: 188, seconds: 1_700_000_000, nanoseconds: 123_456_789)
        let first = cache.validators(for: version)
        #expect(first.entityTag == HTTPResponse.entityTag(size: 188, seconds: 1_700_000_000, nanoseconds: 123_456_789))
        #expect(first.entityTag == "\"6553f100.75bcd15-bc\"")
        #expect(first.lastModified == "Tue, 14 Nov 2023 22:13:20 GMT")
        #expect(cache.validators(for: version) == first)
        #expect(cache.count == 1)
    }

    /// A file response's fields come from the cache in their order, made from the version's validators; another
    /// content type or another version of the file gets its own, never the old ones.
    @Test func responseFieldsFollowTheVersionAndTheContentType() {
        let cache = FileValidatorCache()
        let version = status(size: 188, seconds: 1_700_000_000, nanoseconds: 123_456_789)
        let validators = cache.validators(for: version)
        let fields = cache.fields(for: version, contentType: "video/mp2t")
        #expect(
            fields.fields.map { "\($0.name): \($0.value)" } == [
                "Content-Type: video/mp2t", "ETag: \(validators.entityTag)",
                "Last-Modified: \(validators.lastModified)", "Cache-Control: no-cache", "Accept-Ranges: bytes",
            ])
        #expect(cache.fields(for: version, contentType: "video/mp2t") == fields)
        #expect(cache.fields(for: version, contentType: "video/mp4").first(name: "Content-Type") == "video/mp4")
        let written = status(size: 376, seconds: 1_700_000_001, nanoseconds: 0)
        let after = cache.fields(for: written, contentType: "video/mp2t")
        #expect(after.first(name: "ETag") == cache.validators(for: written).entityTag)
        #expect(after.first(name: "ETag") != validators.entityTag)
        #expect(cache.count == 1)
    }

    /// Each part of the version changes the values, exactly as formatting anew would; the entry is replaced.
    @Test func anotherVersionOfTheFileIsFormattedAnew() {
        let cache = FileValidatorCache()
        let base = status(size: 100, seconds: 1_000, nanoseconds: 5)
        let original = cache.validators(for: base)
        for changed in [
            status(size: 101, seconds: 1_000, nanoseconds: 5),
            status(size: 100, seconds: 1_001, nanoseconds: 5),
            status(size: 100, seconds: 1_000, nanoseconds: 6),
        ] {
            let values = cache.validators(for: changed)
            #expect(values != original)
            #expect(
                values == FileValidators(size: changed.size, seconds: changed.seconds, nanoseconds: changed.nanoseconds)
            )
            #expect(cache.count == 1)
        }
        #expect(cache.validators(for: base) == original)
    }

    @Test func theCacheIsBounded() {
        let cache = FileValidatorCache(capacity: 3)
        for inode in 0..<10 {
            let version = status(size: UInt64(inode), seconds: 1, nanoseconds: 2, inode: UInt64(inode))
            #expect(cache.validators(for: version) == FileValidators(size: UInt64(inode), seconds: 1, nanoseconds: 2))
            #expect(cache.count <= 3)
        }
    }

    /// Through the static-file handler (which reuses the open file too): a file rewritten in place with the same
    /// size, then given another modification time, answers with the new validators at once.
    @Test func aRewrittenFileGetsNewValidators() async throws {
        let tree = try TempTree()
        var router = Router()
        router.add(
            .get, "/static/**", handler: StaticFileHandler(root: tree.www, openFileValidity: .seconds(60)).handler)
        let app = HTTPApplication(router: router, configuration: HTTPServerConfiguration())
        let url = URL(fileURLWithPath: tree.www).appendingPathComponent("same-size.ts")
        try Data("first".utf8).write(to: url)
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 1_600_000_000)], ofItemAtPath: url.path)
        let first = await app.respond(to: get("/static/same-size.ts"))
        #expect(first.bodyText == "first")
        #expect(first.headers["Last-Modified"] == "Sun, 13 Sep 2020 12:26:40 GMT")
        let firstTag = try #require(first.headers["ETag"])
        #expect(await app.respond(to: get("/static/same-size.ts")).headers["ETag"] == firstTag)

        let handle = try FileHandle(forWritingTo: url)
        try handle.write(contentsOf: Data("other".utf8))
        try handle.close()
        try FileManager.default.setAttributes(
            [.modificationDate: Date(timeIntervalSince1970: 1_600_000_100)], ofItemAtPath: url.path)
        let second = await app.respond(to: get("/static/same-size.ts"))
        #expect(second.bodyText == "other")
        #expect(second.headers["Last-Modified"] == "Sun, 13 Sep 2020 12:28:20 GMT")
        let secondTag = try #require(second.headers["ETag"])
        #expect(secondTag != firstTag)
        // The old validator no longer matches: a conditional request gets the new content, not 304.
        let conditional = await app.respond(to: get("/static/same-size.ts", [("If-None-Match", firstTag)]))
        #expect(conditional.status.code == 200)
        #expect(conditional.bodyText == "other")
        let revalidated = await app.respond(to: get("/static/same-size.ts", [("If-None-Match", secondTag)]))
        #expect(revalidated.status.code == 304)
    }
}
