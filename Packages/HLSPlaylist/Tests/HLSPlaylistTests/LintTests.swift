import Foundation
import HLSPlaylist
import Testing

@Suite struct LintTests {
    /// Each invalid fixture is named `RULE@LINE.m3u8`: that rule must fire on that line.
    @Test func everyRuleHasAFixtureThatTriggersIt() throws {
        var covered: Set<String> = []
        for file in Fixtures.files("invalid") + Fixtures.files("invalid/live") {
            let name = file.deletingPathExtension().lastPathComponent
            guard !name.hasSuffix(".previous"), let at = name.firstIndex(of: "@") else { continue }
            let rule = String(name[..<at])
            let line = try #require(Int(name[name.index(after: at)...]))
            let playlist = try Playlist(bytes: try Fixtures.bytes(file))
            var previous: Playlist?
            let previousURL = file.deletingPathExtension().appendingPathExtension("previous.m3u8")
            if FileManager.default.fileExists(atPath: previousURL.path) {
                previous = try Playlist(bytes: try Fixtures.bytes(previousURL))
            }
            let findings = PlaylistLinter().lint(playlist, previous: previous)
            #expect(
                findings.contains { $0.rule == rule && $0.line == line }, "\(name): \(findings.map(\.description))")
            let severity = PlaylistLinter.rules.first { $0.id == rule }?.severity
            #expect(findings.first { $0.rule == rule }?.severity == severity)
            covered.insert(rule)
        }
        let all = Set(PlaylistLinter.rules.map(\.id))
        #expect(all.subtracting(covered).isEmpty, "rules without a fixture: \(all.subtracting(covered).sorted())")
    }

    @Test func validFixturesHaveNoErrors() throws {
        let parent = try Playlist(bytes: try Fixtures.bytes("valid/multivariant-define.m3u8")).multivariant().variables
        for file in Fixtures.files("valid") + Fixtures.files("quirks") {
            let linter = PlaylistLinter(url: "https://example.com/a/index.m3u8?token=t", parent: parent)
            let findings = linter.lint(try Playlist(bytes: try Fixtures.bytes(file)))
            let errors = findings.filter { $0.severity == .error }
            #expect(errors.isEmpty, "\(file.lastPathComponent): \(errors.map(\.description))")
        }
    }

    @Test func findingsCarryColumnsAndSections() throws {
        let text =
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-KEY:METHOD=AES-256,URI=\"k\"\n"
            + "#EXTINF:6.0,\na.ts\n"
        let findings = PlaylistLinter().lint(try Playlist(text))
        let f = try #require(findings.first { $0.rule == "HLS-ATTR-ENUM" })
        #expect(f.line == 4)
        #expect(f.column == 12)
        #expect(f.section == "4.4")
        #expect(f.severity == .error)
        #expect(
            f.description == "4:12: error: METHOD=AES-256 is not one of NONE, AES-128, SAMPLE-AES, SAMPLE-AES-CTR "
                + "[HLS-ATTR-ENUM] (4.4)")
    }

    @Test func liveRulesPassOnAProperSlide() throws {
        let previous = try Playlist(
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:10\n#EXTINF:6.0,\na10.ts\n"
                + "#EXT-X-DISCONTINUITY\n#EXTINF:6.0,\na11.ts\n#EXTINF:6.0,\na12.ts\n")
        let current = try Playlist(
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:12\n"
                + "#EXT-X-DISCONTINUITY-SEQUENCE:1\n#EXTINF:6.0,\na12.ts\n#EXTINF:6.0,\na13.ts\n")
        let findings = PlaylistLinter().lint(current, previous: previous)
        #expect(findings.filter { $0.rule.hasPrefix("LIVE") }.isEmpty, "\(findings)")
    }
}
