// Times the in-process work of one AdStrippingProxy poll of a live media playlist: the fetched bytes checked and
// parsed, the window filtered (ad detection, slates) and every URI rewritten into a proxy route, the output bytes
// written; everything `tsplayer proxy` does per poll except the network. The window has `--window` segments
// (default 1,000) with a 30 s CUE-OUT break every 400 segments, the same shape as Scripts/bench/proxy.sh's origin,
// and moves on by one segment per poll (so every poll is filtered and rewritten); a second series polls the same
// window again and again (the proxy answers those from its previous output).
//
// Usage: proxy-poll-bench [--polls N] [--window N] [--profile N] [--shape plain|realistic]
//   --profile N: only run N moving polls (after a warm-up) and print nothing else, for perf/callgrind.
//   --shape realistic: every segment has a PROGRAM-DATE-TIME and a relative URI with dot segments and a query
//   (`../../live/./1080p/segment_N.ts?session=…&n=N`), as many live origins write them; plain (the default): absolute
//   URIs, no dates.
import Foundation
import HLSPlaylist
import HLSProxy

var polls = 2000
var window = 1000
var profile: Int?
var realistic = false
var arguments = CommandLine.arguments.dropFirst()
while let name = arguments.popFirst() {
    if name == "--shape", let shape = arguments.first, shape == "plain" || shape == "realistic" {
        realistic = shape == "realistic"
        arguments = arguments.dropFirst()
        continue
    }
    guard let value = arguments.popFirst().flatMap({ Int($0) }), value > 0 else {
        print("usage: proxy-poll-bench [--polls N] [--window N] [--profile N] [--shape plain|realistic]")
        exit(64)
    }
    switch name {
    case "--polls": polls = value
    case "--window": window = value
    case "--profile": profile = value
    default:
        print("usage: proxy-poll-bench [--polls N] [--window N] [--profile N] [--shape plain|realistic]")
        exit(64)
    }
}

let url = "http://127.0.0.1:8080/live/index.m3u8"
let firstSequence = 50000
let warmup = 200
let total = warmup + polls + window + 1

// Every segment's lines, and where each starts in one byte array, so a window is one slice.
var entries: [UInt8] = []
var offsets: [Int] = []
for m in firstSequence..<(firstSequence + total) {
    offsets.append(entries.count)
    var e = ""
    if m % 400 == 0 { e += "#EXT-X-CUE-OUT:30.000\n" }
    if m % 400 == 15 { e += "#EXT-X-CUE-IN\n" }
    if realistic {
        // Two-second segments from 2026-12-01T20:00:00Z on.
        let seconds = 2 * (m - firstSequence)
        let (h, mi, se) = (20 + seconds / 3600, (seconds / 60) % 60, seconds % 60)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        e += "#EXT-X-PROGRAM-DATE-TIME:2026-12-01T\(two(h % 24)):\(two(mi)):\(two(se)).000Z\n"
        e += "#EXTINF:2.000,\n../../live/./1080p/segment_\(m).ts?session=abcdef0123456789&n=\(m)\n"
    } else {
        e += "#EXTINF:2.000,\nhttps://cdn\(m % 3).example.com/live/1080p/segment_\(m).ts?session=abcdef0123456789\n"
    }
    entries += Array(e.utf8)
}
offsets.append(entries.count)

/// The upstream bytes of the window starting `n` segments in.
@MainActor func windowBytes(_ n: Int) -> [UInt8] {
    var out = Array(
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:\(firstSequence + n)\n".utf8)
    out += entries[offsets[n]..<offsets[n + window]]
    return out
}

let proxy = AdStrippingProxy(url: url)
/// The same proxy without incremental polls: every poll of a window that moved on is parsed and filtered in full.
let fullProxy: AdStrippingProxy = {
    var options = AdStrippingProxy.Options()
    options.incrementalPolls = false
    return AdStrippingProxy(url: url, options: options)
}()
let clock = ContinuousClock()

func milliseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    let mid = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

@MainActor func poll(_ bytes: [UInt8], on target: AdStrippingProxy = proxy) -> [UInt8] {
    do {
        return try target.poll(bytes: bytes, url: url)
    } catch {
        print("proxy-poll-bench: \(error)")
        exit(1)
    }
}

// Warm-up (also builds the routes of the first window), and a check that the output is what a player gets.
var last: [UInt8] = []
for n in 0..<warmup {
    last = poll(windowBytes(n))
    _ = poll(windowBytes(n), on: fullProxy)
}
let text = String(decoding: last, as: UTF8.self)
let uriLines = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
let slates = uriLines.filter { $0.contains("/slate/") }.count
guard uriLines.count == window, slates > 0, uriLines.allSatisfy({ $0.hasPrefix("/\(proxy.token.value)/") }) else {
    print("proxy-poll-bench: unexpected output (\(uriLines.count) URIs, \(slates) slates):\n\(text.prefix(2000))")
    exit(1)
}

if let profile {
    for n in warmup..<(warmup + min(profile, polls)) { last = poll(windowBytes(n)) }
    exit(0)
}

// Moving window: each poll one segment further on, timed through each proxy in turn.
var moving: [Double] = []
var movingFull: [Double] = []
var parse: [Double] = []
moving.reserveCapacity(polls)
movingFull.reserveCapacity(polls)
let countsBefore = proxy.pollCounts
for n in warmup..<(warmup + polls) {
    let bytes = windowBytes(n)
    let start = clock.now
    last = poll(bytes)
    moving.append(milliseconds(clock.now - start))
}
for n in warmup..<(warmup + polls) {
    let bytes = windowBytes(n)
    let start = clock.now
    _ = poll(bytes, on: fullProxy)
    movingFull.append(milliseconds(clock.now - start))
}
// Then, untimed, a fresh pair of proxies through the same polls: every output the same bytes (but for the session
// token in each route) with incremental polls on and off.
do {
    let checked = AdStrippingProxy(url: url)
    var options = AdStrippingProxy.Options()
    options.incrementalPolls = false
    let reference = AdStrippingProxy(url: url, options: options)
    for n in 0..<(warmup + polls) {
        let bytes = windowBytes(n)
        let swapped = String(decoding: poll(bytes, on: checked), as: UTF8.self).replacingOccurrences(
            of: checked.token.value, with: reference.token.value)
        guard Array(swapped.utf8) == poll(bytes, on: reference) else {
            print("proxy-poll-bench: poll \(n): the incremental output differs from the full one")
            exit(1)
        }
    }
}
let countsAfter = proxy.pollCounts
// The parse alone and the media view alone (HLSPlaylist), on the same windows.
var view: [Double] = []
for n in warmup..<(warmup + polls) {
    let bytes = windowBytes(n)
    var start = clock.now
    guard let parsed = try? Playlist(bytes: bytes) else { exit(1) }
    parse.append(milliseconds(clock.now - start))
    start = clock.now
    let media = parsed.media(url: url)
    view.append(milliseconds(clock.now - start))
    if media.segments.count != window { exit(1) }
}
// Repeated window: the same bytes every time.
var repeated: [Double] = []
let same = windowBytes(warmup + polls)
_ = poll(same)
for _ in 0..<polls {
    let start = clock.now
    last = poll(same)
    repeated.append(milliseconds(clock.now - start))
}

func format(_ ms: Double) -> String {
    let rounded = (ms * 1000).rounded() / 1000
    var text = "\(rounded)"
    if let dot = text.firstIndex(of: ".") {
        let decimals = text.distance(from: dot, to: text.endIndex) - 1
        if decimals < 3 { text += String(repeating: "0", count: 3 - decimals) }
    }
    return String(repeating: " ", count: max(0, 8 - text.count)) + text
}
let m = median(moving)
let mf = median(movingFull)
let p = median(parse)
let v = median(view)
let incremental = countsAfter.incremental - countsBefore.incremental
let full = countsAfter.full - countsBefore.full
print(
    "in-process poll work, \(window)-segment \(realistic ? "realistic " : "")window (\(polls) polls each, median; \(slates) slates in the output):"
)
print("  moving window, as served       \(format(m)) ms   (\(incremental) incremental, \(full) in full; same bytes)")
print("  moving window, whole poll      \(format(mf)) ms   (incremental polls off: check, parse, media view, filter,")
print("                                              rewrite, output bytes)")
print("    HLSPlaylist parse (alone)    \(format(p)) ms")
print("    HLSPlaylist media view       \(format(v)) ms")
print("    the rest: filter + rewrite   \(format(max(0, mf - p - v))) ms")
print("  repeated window                \(format(median(repeated))) ms   (answered from the previous output)")
