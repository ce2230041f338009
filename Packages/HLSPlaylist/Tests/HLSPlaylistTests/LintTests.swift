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
        var documented: [String: (severity: String, section: String, fixture: String)] = [:]
        var required: Set<String> = []
        var inRequirements = false
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#") { inRequirements = line == "### Requirements" }
            guard line.hasPrefix("| ") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let unquote = CharacterSet(charactersIn: "`")
            if inRequirements, cells.count >= 4 {
                for id in cells[2].split(separator: ",") where id.contains("`") {
                    required.insert(id.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: unquote))
                }
            } else if line.hasPrefix("| `"), cells.count >= 5 {
                documented[cells[0].trimmingCharacters(in: unquote)] = (
                    cells[1], cells[2], cells[4].trimmingCharacters(in: unquote)
                )
            }
        }
        let ids = Set(rules.map(\.id))
        #expect(required.subtracting(ids).isEmpty, "requirements name unknown rules: \(required.subtracting(ids))")
        for rule in rules {
            let row = documented[rule.id]
            #expect(row?.severity == rule.severity.rawValue, "\(rule.id): severity in the manual")
            #expect(row?.section == rule.section, "\(rule.id): section in the manual")
            // Every rule names its invalid fixture, which exists and says which rule it is for.
            let fixture = row?.fixture ?? ""
            let name = fixture.split(separator: "/").last.map(String.init) ?? ""
            #expect(name.hasPrefix(rule.id + "@"), "\(rule.id): fixture in the manual is \"\(fixture)\"")
            let path = Fixtures.root.appendingPathComponent("invalid/" + fixture).path
            #expect(FileManager.default.fileExists(atPath: path), "\(rule.id): no fixture file \(fixture)")
            // Every RFC 8216bis rule above info maps to a requirement in the manual's requirements table.
            if !rule.id.hasPrefix("APPLE-"), rule.severity != .info {
                #expect(required.contains(rule.id), "\(rule.id): in no row of the requirements table")
            }
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

    /// Checks that share a rule with an older check (so the rule's fixture does not show them): each fires on
    /// its line, and a fixed version of the same playlist is clean of it.
    @Test func foldedChecksFireWhereTheyShould() throws {
        let media = "#EXTM3U\n#EXT-X-VERSION:8\n#EXT-X-TARGETDURATION:6\n"
        let cases: [(text: String, rule: LintRule, line: Int)] = [
            (media + "#EXT-X-DEFINE:NAME=\"a b\",VALUE=\"1\"\n#EXTINF:6.0,\na.ts\n", .variableDefine, 4),
            (
                "#EXTM3U\n#EXT-X-VERSION:8\n#EXT-X-DEFINE:IMPORT=\"x\"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n",
                .variableDefine, 3
            ),
            (
                media + "#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00Z\n"
                    + "#EXT-X-DATERANGE:ID=\"p\",START-DATE=\"2026-01-01T00:00:00Z\",PLANNED-DURATION=-1.0\n"
                    + "#EXTINF:6.0,\na.ts\n", .dateRangeDates, 5
            ),
            (
                media + "#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"k\",KEYFORMAT=\"x\",KEYFORMATVERSIONS=\"1/0\"\n"
                    + "#EXTINF:6.0,\na.ts\n", .keyAttributes, 4
            ),
            (media + "#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"12-34\"\n#EXTINF:6.0,\na.m4s\n", .mapByteRange, 4),
            (
                media + "#EXT-X-PART-INF:PART-TARGET=2.0\n#EXT-X-SERVER-CONTROL:PART-HOLD-BACK=6.0\n"
                    + "#EXT-X-PART:DURATION=2.0,URI=\"p.mp4\",BYTERANGE=\"100\"\n", .byteRangeOffset, 6
            ),
            (
                media + "#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00Z\n"
                    + "#EXT-X-DATERANGE:ID=\"i\",CLASS=\"com.apple.hls.interstitial\",START-DATE=\"2026-01-01T00:00:00Z\","
                    + "X-ASSET-URI=\"a.m3u8\",X-SNAP=\"OUT,LATER\"\n#EXTINF:6.0,\na.ts\n", .interstitial, 5
            ),
        ]
        for c in cases {
            let findings = PlaylistLinter(url: "https://example.com/a.m3u8").lint(try Playlist(c.text))
            #expect(
                findings.contains { $0.rule == c.rule && $0.line == c.line },
                "\(c.rule.id)@\(c.line): \(findings.map(\.description))")
        }
        // An interstitial's later tag with the same ID may leave X-ASSET-URI out: the tags are judged together.
        let updated = try Playlist(
            media + "#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00Z\n"
                + "#EXT-X-DATERANGE:ID=\"i\",CLASS=\"com.apple.hls.interstitial\",START-DATE=\"2026-01-01T00:00:00Z\","
                + "X-ASSET-URI=\"a.m3u8\"\n#EXTINF:6.0,\na.ts\n"
                + "#EXT-X-DATERANGE:ID=\"i\",CLASS=\"com.apple.hls.interstitial\",START-DATE=\"2026-01-01T00:00:00Z\","
                + "DURATION=6.0\n")
        #expect(!PlaylistLinter().lint(updated).contains { $0.rule == .interstitial })
    }

    /// APPLE-IFRAME asks for I-frame playlists where there is video to play in trick play: an audio-only
    /// multivariant (every variant's CODECS audio) has none to offer and gets no finding at all; a variant with
    /// video, or without CODECS (it may have video), still gets the finding.
    @Test func iFramePlaylistsAreAskedForOnlyWithVideo() throws {
        let audioOnly = try Playlist(
            "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n"
                + "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"English\",DEFAULT=YES,AUTOSELECT=YES,CHANNELS=\"2\"\n"
                + "#EXT-X-STREAM-INF:BANDWIDTH=1000,AVERAGE-BANDWIDTH=900,CODECS=\"mp4a.40.2\",AUDIO=\"audio\"\n"
                + "a.m3u8\n"
                + "#EXT-X-STREAM-INF:BANDWIDTH=2000,AVERAGE-BANDWIDTH=1900,CODECS=\"ac-3\"\nb.m3u8\n")
        #expect(PlaylistLinter().lint(audioOnly).isEmpty, "\(PlaylistLinter().lint(audioOnly).map(\.description))")
        for codecs in [",CODECS=\"avc1.64001f,mp4a.40.2\"", ",CODECS=\"hvc1.1.6.L93.B0\"", ""] {
            let video = try Playlist(
                "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-STREAM-INF:BANDWIDTH=1000,AVERAGE-BANDWIDTH=900"
                    + codecs + ",RESOLUTION=1280x720,FRAME-RATE=30.000\nv.m3u8\n")
            #expect(PlaylistLinter().lint(video).contains { $0.rule == .appleIFrame && $0.line == 1 }, "\(codecs)")
        }
    }

    /// Without the parent playlist or the URL, IMPORT and QUERYPARAM are reported as not checked (info), and the
    /// variables they define count as defined; with them, a missing value is an error.
    @Test func variablesThatNeedAnotherInputAreInfoWithoutIt() throws {
        let text =
            "#EXTM3U\n#EXT-X-VERSION:11\n#EXT-X-TARGETDURATION:6\n#EXT-X-DEFINE:IMPORT=\"host\"\n"
            + "#EXT-X-DEFINE:QUERYPARAM=\"token\"\n#EXTINF:6.0,\n{$host}/a.ts?t={$token}\n#EXT-X-ENDLIST\n"
        let playlist = try Playlist(text)
        let alone = PlaylistLinter().lint(playlist)
        #expect(alone.filter { $0.severity != .info }.isEmpty, "\(alone.map(\.description))")
        #expect(alone.filter { $0.rule == .variablesUnchecked }.map(\.line) == [4, 5])
        let given = PlaylistLinter(url: "https://example.com/a.m3u8?other=1", parent: Variables(["nohost": "x"]))
            .lint(playlist)
        // A define whose value is missing is reported as an undefined variable on its line.
        #expect(given.contains { $0.severity == .error && $0.line == 4 }, "\(given.map(\.description))")
        #expect(given.contains { $0.severity == .error && $0.line == 5 }, "\(given.map(\.description))")
        #expect(!given.contains { $0.rule == .variablesUnchecked })
    }
}
