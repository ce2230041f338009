// The door check every reader of playlists calls: what counts as the start of a playlist, when too few bytes are in
// to tell, and how the start of anything else is shown.
import HLSPlaylist
import Testing

@Suite struct PlaylistStartTests {
    @Test func aPlaylistStartsWithTheHeaderAfterAnOptionalByteOrderMark() {
        #expect(PlaylistStart.check(Array("#EXTM3U\n#EXTINF:4,\na.ts\n".utf8), complete: true) == .playlist)
        #expect(PlaylistStart.check([0xEF, 0xBB, 0xBF] + Array("#EXTM3U".utf8), complete: true) == .playlist)
        #expect(PlaylistStart.check(Array("#EXTM3U".utf8), complete: false) == .playlist)
        #expect(PlaylistStart.check(Array("#EXTM3U".utf8), complete: true).message == nil)
    }

    @Test func everyPrefixOfAPlaylistIsUndecidedUntilTheInputIsComplete() {
        let start = [0xEF, 0xBB, 0xBF] + Array("#EXTM3U".utf8)
        for length in 0..<start.count {
            let prefix = Array(start.prefix(length))
            #expect(PlaylistStart.check(prefix, complete: false) == .undecided, "\(length) bytes")
            #expect(PlaylistStart.check(prefix, complete: true) == .notAPlaylist(start: prefix), "\(length) bytes")
        }
        // Without the mark too.
        for length in 0..<7 {
            let prefix = Array("#EXTM3U".utf8.prefix(length))
            #expect(PlaylistStart.check(prefix, complete: false) == .undecided, "\(length) bytes")
        }
    }

    @Test func anythingElseIsRefusedWithItsFirstBytesEscaped() {
        let ts = [0x47, 0x40, 0x11, 0x10, 0x00] + [UInt8](repeating: 0xFF, count: 200)
        let refused = PlaylistStart.check(ts, complete: false)
        #expect(refused == .notAPlaylist(start: Array(ts.prefix(16))))
        #expect(
            refused.message == "not an HLS playlist (starts with \"G@\\x11\\x10\\x00"
                + String(repeating: "\\xff", count: 11) + "\")")
        #expect(
            PlaylistStart.check(Array("<html>".utf8), complete: false).message
                == "not an HLS playlist (starts with \"<html>\")")
        #expect(PlaylistStart.check([], complete: true).message == "not an HLS playlist (starts with \"\")")
        // A playlist without its header line, and a lower-case header, are not playlists at the door.
        #expect(PlaylistStart.check(Array("#EXT-X-VERSION:3\n".utf8), complete: true) != .playlist)
        #expect(PlaylistStart.check(Array("#extm3u\n".utf8), complete: true) != .playlist)
        #expect(PlaylistStart.check(Array(" #EXTM3U\n".utf8), complete: true) != .playlist)
    }

    @Test func quotingNeverLetsBinaryThrough() {
        let all = (0...255).map { UInt8($0) }
        let quoted = PlaylistStart.quoted(all)
        #expect(quoted.utf8.allSatisfy { (0x20...0x7E).contains($0) })
        #expect(PlaylistStart.quoted(Array("a\"b\\c\r\n".utf8)) == "\"a\\\"b\\\\c\\x0d\\x0a\"")
    }
}
