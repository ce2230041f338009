import Foundation
import HLSPlaylist
import Testing

@Suite struct LintTests {
    /// Rules are values: ids are unique, and the manual's rule table lists every rule with its severity and
    /// section as the code has them (so the two cannot drift).
    @Test func everyRuleIsUniqueAndDocumentedAsTheCodeHasIt() throws {
        let rules = PlaylistLinter.rules
        #expect(Set(rules.map(\.id)).count == rules.count)
        #expect(Set(rules).count == rules.count)
        let manual = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../../Documentation/m3u8lint.md").standardized
        let text = try String(contentsOf: manual, encoding: .utf8)
        var documented: [String: (severity: String, section: String)] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3 else { continue }
            documented[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = (cells[1], cells[2])
        }
        for rule in rules {
            let row = documented[rule.id]
            #expect(row?.severity == rule.severity.rawValue, "\(rule.id): severity in the manual")
            #expect(row?.section == rule.section, "\(rule.id): section in the manual")
        }
    }

    /// Parse problems become findings by their typed code, never by their message text.
    @Test func parseProblemsMapToRulesByCode() throws {
        let variant = try Playlist(bytes: Array("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n".utf8))
        #expect(variant.diagnostics.map(\.error.code) == [.truncatedVariant])
        #expect(PlaylistLinter().lint(variant).map(\.rule).contains(.variantURI))
        let segment = try Playlist(bytes: Array("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n".utf8))
        #expect(segment.diagnostics.map(\.error.code) == [.truncated])
        #expect(PlaylistLinter().lint(segment).map(\.rule).contains(.segmentURI))
        let undefined = try Playlist(bytes: Array("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\n{$x}.ts\n".utf8))
        let findings = PlaylistLinter().lint(undefined)
        #expect(findings.contains { $0.rule == .variableUndefined && $0.line == 4 })
        #expect(!findings.contains { $0.rule == .variableDefine })
    }

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
                findings.contains { $0.rule.id == rule && $0.line == line }, "\(name): \(findings.map(\.description))")
            let severity = PlaylistLinter.rules.first { $0.id == rule }?.severity
            #expect(findings.first { $0.rule.id == rule }?.severity == severity)
            covered.insert(rule)
        }
        let all = Set(PlaylistLinter.rules.map(\.id))
        #expect(all.subtracting(covered).isEmpty, "rules without a fixture: \(all.subtracting(covered).sorted())")
    }

    @Test func validFixturesHaveNoErrors() throws {
        let parent = try Playlist(bytes: try Fixtures.bytes("valid/multivariant-define.m3u8")).multivariant().variables
        // A quirk breaks the spec on purpose (the parser tolerates it): only the rule naming that break may fire.
        let quirkRules: [String: Set<String>] = [
            "bom-no-final-newline.m3u8": ["HLS-BOM"], "whitespace-and-titles.m3u8": ["HLS-BOM", "HLS-EXTINF-SYNTAX"],
        ]
        for file in Fixtures.files("valid") + Fixtures.files("quirks") {
            let linter = PlaylistLinter(url: "https://example.com/a/index.m3u8?token=t", parent: parent)
            let findings = linter.lint(try Playlist(bytes: try Fixtures.bytes(file)))
            let allowed = quirkRules[file.lastPathComponent] ?? []
            let errors = findings.filter { $0.severity == .error && !allowed.contains($0.rule.id) }
            #expect(errors.isEmpty, "\(file.lastPathComponent): \(errors.map(\.description))")
            if file.path.contains("/valid/") {
                let warnings = findings.filter { $0.severity == .warning && !$0.rule.id.hasPrefix("APPLE-") }
                #expect(warnings.isEmpty, "\(file.lastPathComponent): \(warnings.map(\.description))")
            }
        }
    }

    @Test func findingsCarryColumnsAndSections() throws {
        let text =
            "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-KEY:METHOD=AES-256,URI=\"k\"\n"
            + "#EXTINF:6.0,\na.ts\n"
        let findings = PlaylistLinter().lint(try Playlist(text))
        let f = try #require(findings.first { $0.rule == .attributeEnumeration })
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
                + "#EXT-X-DISCONTINUITY-SEQUENCE:1\n#EXTINF:6.0,\na12.ts\n#EXTINF:6.0,\na13.ts\n#EXTINF:6.0,\na14.ts\n")
        let findings = PlaylistLinter().lint(current, previous: previous)
        #expect(findings.filter { $0.rule.id.hasPrefix("LIVE") }.isEmpty, "\(findings)")
    }
}
