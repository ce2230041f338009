import Foundation
import HLSPlaylist
import Testing

/// Inputs the fuzzer (Tests/Fuzz/Sources/PlaylistFuzzer) found, replayed with the fuzzer's own properties.
@Suite struct FuzzRegressionTests {
    static let inputs: [URL] = {
        let dir = Fixtures.root.appendingPathComponent("fuzz")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.sorted().map { dir.appendingPathComponent($0) }
    }()

    @Test(arguments: inputs)
    func replay(input: URL) throws {
        let bytes = try Fixtures.bytes(input)
        let playlist = try Playlist(bytes: bytes)
        #expect(playlist.write() == bytes)
        #expect(try Playlist(bytes: playlist.write()).lines == playlist.lines)
        let canonical = playlist.writeCanonical()
        #expect(try Playlist(bytes: canonical).writeCanonical() == canonical)
        _ = PlaylistLinter(url: "https://example.com/a/index.m3u8").lint(playlist, previous: playlist)
        let whole = try IPTVPlaylist(bytes: bytes)
        #expect(whole.write() == bytes)
        var parser = IPTVStreamParser()
        var channels: [IPTVChannel] = []
        for i in bytes.indices { try parser.consume(bytes[i..<(i + 1)]) { channels.append($0) } }
        try parser.finish { channels.append($0) }
        #expect(channels == whole.channels)
    }
}
