import HLSPlaylist

/// A simulated live origin: a sliding window over an endless stream where chosen media sequence numbers are ads,
/// marked in one of the dialects (or not marked at all, for server-side insertion).
struct LiveOrigin {
    enum Marker {
        /// CUE-OUT:<duration> at the start, CUE-OUT-CONT elapsed/duration inside, CUE-IN after.
        case cueOutContIn
        /// Only CUE-OUT:<duration> at the start of each break.
        case bareCueOut
        /// EXT-X-DATERANGE with SCTE35-OUT and DURATION at the break's start date (PDT on every segment).
        case dateRange
        /// No markers: ad segments come from another host, between discontinuities.
        case originChange
        /// No markers: a pod of two-segment ads, each from its own creative host and between discontinuities.
        case pods
        /// No markers: a DAI-style pod of two-segment ads from the content's own host under another path
        /// (`../pod/<break>/ad/<n>/seg<m>.ts`, relative to the playlist), each ad between discontinuities.
        case daiPod
        /// No ads: the content's path changes with a discontinuity to the next dated directory at 10
        /// (`live/20261201/` to `live/20261202/`), then without one to a mirror path at 12.
        case pathDecoys
    }

    var ads: Set<UInt64>
    var marker: Marker = .cueOutContIn
    var windowSize: UInt64 = 6
    var duration: Double = 4
    /// A new key every N segments (nil: clear).
    var keyRotation: UInt64?
    var lowLatency = false
    var fragmented = false

    /// The breaks: maximal runs of consecutive ad sequence numbers.
    var runs: [ClosedRange<UInt64>] {
        var out: [ClosedRange<UInt64>] = []
        for m in ads.sorted() {
            if let last = out.last, last.upperBound + 1 == m {
                out[out.count - 1] = last.lowerBound...m
            } else {
                out.append(m...m)
            }
        }
        return out
    }

    func run(of m: UInt64) -> ClosedRange<UInt64>? { runs.first { $0.contains(m) } }

    func date(_ m: UInt64) -> String { DateTime(secondsSince1970: 1_767_225_600 + Double(m) * duration).text }

    /// Whether an EXT-X-DISCONTINUITY precedes segment `m` (origin-change streams only).
    func discontinuity(_ m: UInt64) -> Bool {
        if marker == .pathDecoys { return m == 10 }
        guard marker == .originChange || marker == .pods || marker == .daiPod, m > 0 else { return false }
        if marker == .pods || marker == .daiPod, ads.contains(m), ads.contains(m - 1), let run = run(of: m) {
            return (m - run.lowerBound) % 2 == 0
        }
        return ads.contains(m) != ads.contains(m - 1)
    }

    /// The content's initialization section (fMP4).
    var initURI: String { "https://cdn.example.com/live/init.mp4" }

    func uri(_ m: UInt64) -> String {
        if marker == .originChange, ads.contains(m) { return "https://stitcher.example-ads.net/pod/\(m).ts" }
        if marker == .pods, ads.contains(m), let run = run(of: m) {
            return "https://creative\((m - run.lowerBound) / 2).example-ads.net/spot/\(m).ts"
        }
        if marker == .daiPod, ads.contains(m), let run = run(of: m) {
            return "https://cdn.example.com/pod/\(run.lowerBound)/ad/\((m - run.lowerBound) / 2)/seg\(m).ts"
        }
        if marker == .pathDecoys {
            return m >= 12
                ? "https://cdn.example.com/mirror/live/seg\(m).ts"
                : "https://cdn.example.com/live/2026120\(m >= 10 ? 2 : 1)/seg\(m).ts"
        }
        return "https://cdn.example.com/live/seg\(m).\(fragmented ? "m4s" : "ts")"
    }

    /// The URI line of segment `m`: DAI pods relative to the playlist, as stitchers write them.
    func uriLine(_ m: UInt64) -> String {
        if marker == .daiPod, ads.contains(m), let run = run(of: m) {
            return "../pod/\(run.lowerBound)/ad/\((m - run.lowerBound) / 2)/seg\(m).ts"
        }
        return uri(m)
    }

    /// The playlist when the window starts at `first`.
    func poll(_ first: UInt64) -> String {
        var t = "#EXTM3U\n#EXT-X-VERSION:\(fragmented ? 7 : 6)\n#EXT-X-TARGETDURATION:\(Int(duration))\n"
        if lowLatency {
            t += "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=3.0,HOLD-BACK=12.0\n"
            t += "#EXT-X-PART-INF:PART-TARGET=1.0\n"
        }
        t += "#EXT-X-MEDIA-SEQUENCE:\(first)\n"
        let ds = (0..<first).filter { discontinuity($0) }.count
        if ds > 0 { t += "#EXT-X-DISCONTINUITY-SEQUENCE:\(ds)\n" }
        if fragmented { t += "#EXT-X-MAP:URI=\"init.mp4\"\n" }
        let last = first + windowSize - 1
        for m in first...last {
            if discontinuity(m) { t += "#EXT-X-DISCONTINUITY\n" }
            if let n = keyRotation, m == first || m % n == 0 {
                t += "#EXT-X-KEY:METHOD=AES-128,URI=\"https://keys.example.com/k\(m / n).key\"\n"
            }
            if marker == .dateRange || marker == .bareCueOut { t += "#EXT-X-PROGRAM-DATE-TIME:\(date(m))\n" }
            if let r = run(of: m) {
                let total = Double(r.count) * duration
                let elapsed = Double(m - r.lowerBound) * duration
                switch marker {
                case .cueOutContIn:
                    t +=
                        m == r.lowerBound
                        ? "#EXT-X-CUE-OUT:\(Int(total))\n" : "#EXT-X-CUE-OUT-CONT:\(Int(elapsed))/\(Int(total))\n"
                case .bareCueOut:
                    if m == r.lowerBound { t += "#EXT-X-CUE-OUT:\(Int(total))\n" }
                case .dateRange:
                    if m == r.lowerBound {
                        t +=
                            "#EXT-X-DATERANGE:ID=\"break-\(m)\",START-DATE=\"\(date(m))\",DURATION=\(Int(total)),"
                            + "SCTE35-OUT=0xFC301B00000000000000FFF00A05000000027FDF000100000000AEB783E6\n"
                    }
                case .originChange, .pods, .daiPod, .pathDecoys:
                    break
                }
            } else if marker == .cueOutContIn, m > 0, ads.contains(m - 1) {
                t += "#EXT-X-CUE-IN\n"
            }
            if lowLatency, m + 2 > last {
                for p in 0..<4 {
                    t += "#EXT-X-PART:DURATION=1.0,URI=\"part\(m).\(p).ts\"\(p == 0 ? ",INDEPENDENT=YES" : "")\n"
                }
            }
            t += "#EXTINF:\(duration),\n\(uriLine(m))\n"
        }
        if lowLatency {
            t += "#EXT-X-PART:DURATION=1.0,URI=\"part\(last + 1).0.ts\",INDEPENDENT=YES\n"
            t += "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part\(last + 1).1.ts\"\n"
        }
        return t
    }
}
