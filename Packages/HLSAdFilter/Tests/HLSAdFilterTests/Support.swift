import Foundation
import HLSAdFilter
import HLSPlaylist
import Testing

/// Fixtures live beside this file; found by #filePath so the library never needs Bundle.module.
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures")

    static var names: [String] {
        let all = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return all.filter { $0.hasSuffix(".m3u8") }.sorted()
    }

    static func text(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }

    static func playlist(_ name: String) throws -> Playlist { try Playlist(try text(name)) }

    /// The `#EXPECT-...: value` comment of a fixture.
    static func expectation(_ playlist: Playlist, _ key: String) -> String? {
        for line in playlist.lines where line.isComment {
            let text = line.text
            let prefix = "#EXPECT-\(key): "
            if text.hasPrefix(prefix) { return String(text.dropFirst(prefix.count)) }
        }
        return nil
    }
}

/// Error-severity lint findings of a playlist (with the previous poll when given).
func lintErrors(_ playlist: Playlist, previous: Playlist? = nil, url: String? = nil) -> [LintFinding] {
    PlaylistLinter(url: url).lint(playlist, previous: previous).filter { $0.severity == .error }
}

/// `c` for content, `a` for ad, one letter per decision.
func pattern(_ decisions: [SegmentDecision]) -> String {
    String(decisions.map { $0.isAd ? "a" : "c" })
}

/// KEY, MAP, PROGRAM-DATE-TIME and DISCONTINUITY lines written between a segment's EXTINF and its URI (legal, but
/// read badly by players and tools), as `line N: text`.
func tagsBetweenEXTINFAndURI(_ playlist: Playlist) -> [String] {
    var inside = false
    var found: [String] = []
    for (n, line) in playlist.lines.enumerated() {
        if line.isURI {
            inside = false
        } else if let known = line.knownTag {
            if known == .extinf {
                inside = true
            } else if inside, [.key, .map, .programDateTime, .discontinuity].contains(known) {
                found.append("line \(n + 1): \(line.text)")
            }
        }
    }
    return found
}

/// Each segment's keys as a decrypter uses them: (method, key URI, IV), the IV being the media sequence number when
/// the playlist gives none (RFC 8216bis 5.2).
func effectiveKeys(_ segment: MediaSegment) -> [String] {
    segment.keys.map { key in
        var iv = key.iv ?? []
        if iv.isEmpty {
            iv = [UInt8](repeating: 0, count: 8)
            for shift in stride(from: 56, through: 0, by: -8) {
                iv.append(UInt8(truncatingIfNeeded: segment.mediaSequence >> UInt64(shift)))
            }
        }
        return "\(key.method) \(key.uri ?? "-") \(iv.map { String($0, radix: 16) }.joined())"
    }
}
