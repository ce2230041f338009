// Fuzzes HLSAdFilter on mutated playlists, live state across polls included: the input is split at NUL bytes into
// successive polls of one live playlist (and each is also cleaned as VOD). Nothing may trap, and:
//   - every poll gives one decision per input segment, and the VOD clean keeps exactly the non-ad segments;
//   - the live filter's serialized state reads back to the same state.
import FuzzSupport
import HLSAdFilter
import HLSPlaylist

func fuzzOne(_ raw: UnsafeRawBufferPointer) {
    let polls = [UInt8](raw).split(separator: 0, maxSplits: 8, omittingEmptySubsequences: false)
    var limits = PlaylistLimits()
    limits.maxLineLength = 4096
    var live = LiveAdFilter()
    let url = "https://cdn.example.com/live/../live/index.m3u8?token=1"
    for poll in polls {
        guard let playlist = try? Playlist(bytes: Array(poll), limits: limits), playlist.kind == .media else {
            continue
        }
        let segments = playlist.media(url: url).segments.count
        let vod = AdFilter().cleanVOD(playlist, url: url)
        if vod.decisions.count != segments { fail("VOD: \(vod.decisions.count) decisions for \(segments) segments") }
        let kept = vod.decisions.filter { !$0.isAd }.count
        let remaining = vod.playlist.media(url: url).segments.count
        if remaining != kept && remaining != segments { fail("VOD kept \(remaining) segments, decided \(kept)") }
        let result = live.filter(playlist, url: url)
        if result.decisions.count != segments { fail("live: \(result.decisions.count) decisions for \(segments)") }
        guard let restored = LiveAdFilter.State(serialized: live.state.serialized) else {
            fail("the live state does not read back")
        }
        if restored != live.state { fail("the live state reads back different") }
    }
}

runFuzzer(fuzzOne)
