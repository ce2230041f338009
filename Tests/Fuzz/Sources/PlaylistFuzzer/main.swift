// Fuzzes HLSPlaylist: the input is parsed as a playlist (tolerant and strict), written back, linted and resolved,
// and read as an IPTV list in one shot and in chunks. Nothing may trap, and:
//   - write(parse(x)) == x (lossless), and parse(write(parse(x))) has the same lines (parse∘write∘parse = parse);
//   - the canonical form is a fixed point: canonical(parse(canonical(x))) == canonical(x);
//   - chunked IPTV parsing gives the same channels as one shot.
import FuzzSupport
import HLSPlaylist

func fuzzOne(_ raw: UnsafeRawBufferPointer) {
    let bytes = [UInt8](raw)
    var limits = PlaylistLimits()
    limits.maxLineLength = 4096
    guard let playlist = try? Playlist(bytes: bytes, limits: limits) else { return }
    if playlist.write() != bytes { fail("write(parse(x)) != x") }
    guard let again = try? Playlist(bytes: playlist.write(), limits: limits) else { fail("re-parse failed") }
    if again.lines != playlist.lines { fail("parse(write(parse(x))) differs") }
    _ = try? Playlist(bytes: bytes, strict: true, limits: limits)
    let canonical = playlist.writeCanonical()
    if let c = try? Playlist(bytes: canonical, limits: limits), c.writeCanonical() != canonical {
        fail("canonical form is not a fixed point")
    }
    let url = "https://example.com/a/b/index.m3u8?token=1"
    let media = playlist.media(url: url)
    _ = media.partCount
    let multivariant = playlist.multivariant(url: url)
    _ = PlaylistLinter(url: url, parent: multivariant.variables).lint(playlist, previous: again)

    // IPTV: one shot versus chunks sized by the input's own bytes.
    guard let whole = try? IPTVPlaylist(bytes: bytes, limits: limits) else { return }
    if whole.write() != bytes { fail("IPTV write(parse(x)) != x") }
    var parser = IPTVStreamParser(limits: limits)
    var channels: [IPTVChannel] = []
    var position = 0
    var step = 0
    do {
        while position < bytes.count {
            let size = 1 + Int(bytes[step % bytes.count]) % 17
            let end = min(bytes.count, position + size)
            try parser.consume(bytes[position..<end]) { channels.append($0) }
            position = end
            step += 1
        }
        try parser.finish { channels.append($0) }
    } catch {
        fail("chunked IPTV parse threw where one shot did not: \(error)")
    }
    if channels != whole.channels { fail("chunked IPTV parse differs from one shot") }
}

runFuzzer(fuzzOne)
