import Foundation
import HLSPlaylist
import Testing

@Suite struct LintTests {
    /// Rules are values: ids are unique, and the manual's rule table lists every rule with its severity, section,
    /// invalid fixture and valid twin as the code and the fixture folders have them (so the two cannot drift).
    @Test func everyRuleIsUniqueAndDocumentedAsTheCodeHasIt() throws {
        let rules = PlaylistLinter.rules
        #expect(Set(rules.map(\.id)).count == rules.count)
        #expect(Set(rules).count == rules.count)
        let manual = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../../Documentation/m3u8lint.md").standardized
        let text = try String(contentsOf: manual, encoding: .utf8)
        var documented: [String: (severity: String, section: String, fixture: String, twin: String)] = [:]
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
            } else if line.hasPrefix("| `"), cells.count >= 6 {
                documented[cells[0].trimmingCharacters(in: unquote)] = (
                    cells[1], cells[2], cells[4].trimmingCharacters(in: unquote),
                    cells[5].trimmingCharacters(in: unquote)
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
            // ... and its valid twin, named after the rule alone.
            #expect(row?.twin == Self.twinName(rule), "\(rule.id): valid twin in the manual is \"\(row?.twin ?? "")\"")
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
        // A variant followed by another variant instead of its URI: reported on its own line (it used to vanish).
        let twice = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n#EXT-X-STREAM-INF:BANDWIDTH=2\nb.m3u8\n"
        let doubled = try Playlist(twice)
        #expect(doubled.diagnostics.map(\.error.code) == [.truncatedVariant])
        #expect(doubled.diagnostics.map(\.line) == [2])
        #expect(PlaylistLinter().lint(doubled).contains { $0.rule == .variantURI && $0.line == 2 })
        #expect(throws: PlaylistError.self) { try Playlist(twice, strict: true) }
        // A blank line between does not change it; nor does a second tag too short for the parser's fast path.
        let spaced = try Playlist("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n\n#EXT-X-STREAM-INF:BANDWIDTH=2\nb.m3u8\n")
        #expect(spaced.diagnostics.map(\.line) == [2])
        let short = try Playlist("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n#EXT-X-STREAM-INF\nb.m3u8\n")
        #expect(short.diagnostics.contains { $0.error.code == .truncatedVariant && $0.line == 2 })
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

    /// The valid twin of a rule, relative to Fixtures/valid-twins: live rules sit in live/.
    static func twinName(_ rule: LintRule) -> String {
        (rule.id.hasPrefix("LIVE-") ? "live/" : "") + rule.id + ".m3u8"
    }

    /// Each rule's valid twin (`valid-twins/RULE.m3u8`; live rules in `valid-twins/live/`, with the previous poll as
    /// `RULE.previous.m3u8` where the invalid fixture has one) is its invalid fixture with the one thing fixed, so the
    /// rule's check runs on a near miss: the rule must not fire, and the twin raises no error and no warning of any
    /// other rule either. Infos of other rules are let through: an info says nothing is wrong (APPLE-IFRAME on a
    /// multivariant twin, LIVE-UNCHECKED on a live twin linted alone).
    @Test func everyRuleHasAValidTwinThatPassesIt() throws {
        // Warnings a twin may raise on purpose, by rule. None is needed today: keep an entry here only with the reason
        // the warning is the twin's legitimate near miss, never to silence a broken twin.
        let allowedWarnings: [String: Set<String>] = [:]
        for rule in PlaylistLinter.rules {
            let url = Fixtures.root.appendingPathComponent("valid-twins/" + Self.twinName(rule))
            guard FileManager.default.fileExists(atPath: url.path) else {
                Issue.record("\(rule.id): no valid twin valid-twins/\(Self.twinName(rule))")
                continue
            }
            let playlist = try Playlist(bytes: try Fixtures.bytes(url))
            var previous: Playlist?
            let previousURL = url.deletingPathExtension().appendingPathExtension("previous.m3u8")
            if FileManager.default.fileExists(atPath: previousURL.path) {
                previous = try Playlist(bytes: try Fixtures.bytes(previousURL))
            }
            // A twin has a previous poll exactly when its invalid fixture has one.
            let invalidFolder = rule.id.hasPrefix("LIVE-") ? "invalid/live" : "invalid"
            let invalidHasPrevious = Fixtures.files(invalidFolder).contains {
                $0.lastPathComponent.hasPrefix(rule.id + "@") && $0.lastPathComponent.hasSuffix(".previous.m3u8")
            }
            #expect(invalidHasPrevious == (previous != nil), "\(rule.id): previous poll of the twin")
            let findings = PlaylistLinter().lint(playlist, previous: previous)
            let own = findings.filter { $0.rule == rule }
            #expect(own.isEmpty, "\(rule.id) fires on its valid twin: \(own.map(\.description))")
            let allowed = allowedWarnings[rule.id] ?? []
            let others = findings.filter {
                $0.rule != rule
                    && ($0.severity == .error || ($0.severity == .warning && !allowed.contains($0.rule.id)))
            }
            #expect(others.isEmpty, "\(rule.id) twin: \(others.map(\.description))")
        }
        // Every twin belongs to a rule.
        let ids = Set(PlaylistLinter.rules.map(\.id))
        for file in Fixtures.files("valid-twins") + Fixtures.files("valid-twins/live") {
            let name = file.deletingPathExtension().lastPathComponent
            let id = name.hasSuffix(".previous") ? String(name.dropLast(".previous".count)) : name
            #expect(ids.contains(id), "valid-twins/\(file.lastPathComponent) names no rule")
        }
    }

    /// The rule and line an invalid fixture names: `RULE@LINE.m3u8`, or `CASE.RULE@LINE.m3u8` in `invalid/cases/`.
    static func ruleAndLine(_ file: URL) -> (rule: String, line: Int)? {
        let name = file.deletingPathExtension().lastPathComponent
        guard let spec = name.split(separator: ".").last, let at = spec.firstIndex(of: "@"),
            let line = Int(spec[spec.index(after: at)...])
        else { return nil }
        return (String(spec[..<at]), line)
    }

    /// The pass over every enumerated value of RFC 8216bis (attributes, EXT-X-PLAYLIST-TYPE, the lists inside
    /// quoted-strings) and the cases that share a rule with another check: the manual's "Enumerated values" table
    /// gives each its rule, an invalid fixture on which that rule fires at the line the name gives, and a valid twin
    /// (the invalid fixture with the one thing fixed) on which it does not fire and which raises no error or warning
    /// at all. Every file of `invalid/cases/` and `valid-twins/cases/` is in the table.
    @Test func everyEnumeratedValueHasAFixtureAtItsLineAndAValidTwin() throws {
        let manual = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../../Documentation/m3u8lint.md").standardized
        let text = try String(contentsOf: manual, encoding: .utf8)
        var inTable = false
        var rows: [(rule: String, fixture: String, twin: String)] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#") { inTable = line == "### Enumerated values" }
            guard inTable, line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().map {
                $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            }
            guard cells.count >= 6 else { continue }
            rows.append((cells[3], cells[4], cells[5]))
        }
        #expect(rows.count >= 35, "rows of the table: \(rows.count)")
        let ids = Set(PlaylistLinter.rules.map(\.id))
        for row in rows {
            #expect(ids.contains(row.rule), "\(row.fixture): no rule \(row.rule)")
            let file = Fixtures.root.appendingPathComponent("invalid/" + row.fixture)
            guard let (rule, line) = Self.ruleAndLine(file), FileManager.default.fileExists(atPath: file.path) else {
                Issue.record("no fixture invalid/\(row.fixture)")
                continue
            }
            #expect(rule == row.rule, "\(row.fixture) is named for \(rule), the table says \(row.rule)")
            let findings = PlaylistLinter().lint(try Playlist(bytes: try Fixtures.bytes(file)))
            #expect(findings.contains { $0.rule.id == rule && $0.line == line }, "\(row.fixture): \(findings)")
            let twin = Fixtures.root.appendingPathComponent("valid-twins/" + row.twin)
            guard FileManager.default.fileExists(atPath: twin.path) else {
                Issue.record("no valid twin valid-twins/\(row.twin)")
                continue
            }
            let twinFindings = PlaylistLinter().lint(try Playlist(bytes: try Fixtures.bytes(twin)))
            let left = twinFindings.filter { $0.rule.id == rule || $0.severity != .info }
            #expect(left.isEmpty, "\(row.twin): \(left.map(\.description))")
        }
        let fixtures = Set(rows.map(\.fixture))
        for file in Fixtures.files("invalid/cases") {
            #expect(
                fixtures.contains("cases/" + file.lastPathComponent), "\(file.lastPathComponent) is not in the table")
        }
        let twins = Set(rows.map(\.twin))
        for file in Fixtures.files("valid-twins/cases") {
            #expect(twins.contains("cases/" + file.lastPathComponent), "\(file.lastPathComponent) is not in the table")
        }
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
            f.description == "4:12: error: METHOD=AES-256 is not one of NONE, AES-128, SAMPLE-AES, SAMPLE-AES-CTR, "
                + "AES-256-GCM [HLS-ATTR-ENUM] (4.4)")
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
    /// its line, and a fixed version of the same playlist (the one thing corrected) raises no finding of that rule
    /// and no error at all.
    @Test func foldedChecksFireWhereTheyShould() throws {
        let media = "#EXTM3U\n#EXT-X-VERSION:8\n#EXT-X-TARGETDURATION:6\n"
        let pdt = "#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00Z\n"
        let interstitial =
            "#EXT-X-DATERANGE:ID=\"i\",CLASS=\"com.apple.hls.interstitial\",START-DATE=\"2026-01-01T00:00:00Z\","
        let variant = "#EXT-X-STREAM-INF:BANDWIDTH=1000,AVERAGE-BANDWIDTH=900,CODECS=\"mp4a.40.2\""
        let cases: [(text: String, fixed: String, rule: LintRule, line: Int)] = [
            (
                media + "#EXT-X-DEFINE:NAME=\"a b\",VALUE=\"1\"\n#EXTINF:6.0,\na.ts\n",
                media + "#EXT-X-DEFINE:NAME=\"a-b\",VALUE=\"1\"\n#EXTINF:6.0,\na.ts\n", .variableDefine, 4
            ),
            (
                "#EXTM3U\n#EXT-X-VERSION:8\n#EXT-X-DEFINE:IMPORT=\"x\"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n",
                "#EXTM3U\n#EXT-X-VERSION:8\n#EXT-X-DEFINE:NAME=\"x\",VALUE=\"1\"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n",
                .variableDefine, 3
            ),
            (
                media + pdt
                    + "#EXT-X-DATERANGE:ID=\"p\",START-DATE=\"2026-01-01T00:00:00Z\",PLANNED-DURATION=-1.0\n"
                    + "#EXTINF:6.0,\na.ts\n",
                media + pdt
                    + "#EXT-X-DATERANGE:ID=\"p\",START-DATE=\"2026-01-01T00:00:00Z\",PLANNED-DURATION=0.0\n"
                    + "#EXTINF:6.0,\na.ts\n", .dateRangeDates, 5
            ),
            (
                media + "#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"k\",KEYFORMAT=\"x\",KEYFORMATVERSIONS=\"1/0\"\n"
                    + "#EXTINF:6.0,\na.ts\n",
                media + "#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"k\",KEYFORMAT=\"x\",KEYFORMATVERSIONS=\"1/2\"\n"
                    + "#EXTINF:6.0,\na.ts\n", .keyAttributes, 4
            ),
            // AES-256-GCM is a METHOD of RFC 8216bis 4.4.4.4 (not an HLS-ATTR-ENUM error) and takes no IV.
            (
                media + "#EXT-X-KEY:METHOD=AES-256-GCM,URI=\"k\",IV=0x00000000000000000000000000000001\n"
                    + "#EXTINF:6.0,\na.ts\n",
                media + "#EXT-X-KEY:METHOD=AES-256-GCM,URI=\"k\"\n#EXTINF:6.0,\na.ts\n", .keyAttributes, 4
            ),
            (
                media + "#EXT-X-KEY:METHOD=SAMPLE-AES-CTR,URI=\"k\",IV=0x00000000000000000000000000000001\n"
                    + "#EXTINF:6.0,\na.ts\n",
                media + "#EXT-X-KEY:METHOD=SAMPLE-AES-CTR,URI=\"k\"\n#EXTINF:6.0,\na.ts\n", .keyAttributes, 4
            ),
            (
                media + "#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"12-34\"\n#EXTINF:6.0,\na.m4s\n",
                media + "#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"12@34\"\n#EXTINF:6.0,\na.m4s\n", .mapByteRange, 4
            ),
            // EXT-X-MAP BYTERANGE needs its offset even after a sub-range of the same resource (RFC 8216bis 4.4.4.5).
            (
                media + "#EXT-X-BYTERANGE:720@0\n#EXTINF:6.0,\ni.mp4\n#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"500\"\n"
                    + "#EXT-X-BYTERANGE:1000@1220\n#EXTINF:6.0,\ni.mp4\n",
                media + "#EXT-X-BYTERANGE:720@0\n#EXTINF:6.0,\ni.mp4\n#EXT-X-MAP:URI=\"i.mp4\",BYTERANGE=\"500@720\"\n"
                    + "#EXT-X-BYTERANGE:1000@1220\n#EXTINF:6.0,\ni.mp4\n", .mapByteRange, 7
            ),
            (
                media + "#EXT-X-PART-INF:PART-TARGET=2.0\n#EXT-X-SERVER-CONTROL:PART-HOLD-BACK=6.0\n"
                    + "#EXT-X-PART:DURATION=2.0,URI=\"p.mp4\",BYTERANGE=\"100\"\n",
                media + "#EXT-X-PART-INF:PART-TARGET=2.0\n#EXT-X-SERVER-CONTROL:PART-HOLD-BACK=6.0\n"
                    + "#EXT-X-PART:DURATION=2.0,URI=\"p.mp4\",BYTERANGE=\"100@0\"\n", .byteRangeOffset, 6
            ),
            (
                media + pdt + interstitial + "X-ASSET-URI=\"a.m3u8\",X-SNAP=\"OUT,LATER\"\n#EXTINF:6.0,\na.ts\n",
                media + pdt + interstitial + "X-ASSET-URI=\"a.m3u8\",X-SNAP=\"OUT,IN\"\n#EXTINF:6.0,\na.ts\n",
                .interstitial, 5
            ),
            // X-PLAYOUT-LIMIT is a decimal-floating-point (appendix D.2): a negative one is reported, 0 is not.
            (
                media + pdt + interstitial + "X-ASSET-URI=\"a.m3u8\",X-PLAYOUT-LIMIT=-5.0\n#EXTINF:6.0,\na.ts\n",
                media + pdt + interstitial + "X-ASSET-URI=\"a.m3u8\",X-PLAYOUT-LIMIT=0\n#EXTINF:6.0,\na.ts\n",
                .interstitial, 5
            ),
            // PART-HOLD-BACK is required with EXT-X-PART-INF even when there is no EXT-X-SERVER-CONTROL at all.
            (
                media + "#EXT-X-PART-INF:PART-TARGET=2.0\n#EXT-X-PART:DURATION=2.0,URI=\"p.mp4\"\n",
                media + "#EXT-X-PART-INF:PART-TARGET=2.0\n#EXT-X-SERVER-CONTROL:PART-HOLD-BACK=4.0\n"
                    + "#EXT-X-PART:DURATION=2.0,URI=\"p.mp4\"\n", .serverControl, 4
            ),
            // BIT-DEPTH, SAMPLE-RATE and CHANNELS only for AUDIO (RFC 8216bis 4.4.6.1): the fixture shows SAMPLE-RATE.
            (
                "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID=\"v\",NAME=\"Main\",BIT-DEPTH=16\n"
                    + variant + ",VIDEO=\"v\"\nv.m3u8\n",
                "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-MEDIA:TYPE=VIDEO,GROUP-ID=\"v\",NAME=\"Main\"\n" + variant
                    + ",VIDEO=\"v\"\nv.m3u8\n", .mediaAudioAttributes, 3
            ),
            (
                "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n"
                    + "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"s\",NAME=\"English\",CHANNELS=\"2\",URI=\"en.m3u8\"\n"
                    + variant + ",SUBTITLES=\"s\"\nv.m3u8\n",
                "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n"
                    + "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"s\",NAME=\"English\",URI=\"en.m3u8\"\n" + variant
                    + ",SUBTITLES=\"s\"\nv.m3u8\n", .mediaAudioAttributes, 3
            ),
            // A quoted-string is non-empty unless its attribute allows it (RFC 8216bis 4.2): URI, GROUP-ID, NAME...
            (
                "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"\",URI=\"en.m3u8\"\n"
                    + variant + ",AUDIO=\"a\"\nv.m3u8\n",
                "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"E\",URI=\"en.m3u8\"\n"
                    + variant + ",AUDIO=\"a\"\nv.m3u8\n", .attributeType, 3
            ),
            (
                media + "#EXT-X-MAP:URI=\"\"\n#EXTINF:6.0,\na.m4s\n",
                media + "#EXT-X-MAP:URI=\"i.mp4\"\n#EXTINF:6.0,\na.m4s\n", .attributeType, 4
            ),
            // ... while EXT-X-DEFINE VALUE may be empty: the fixed playlist has VALUE="" and must raise no error.
            (
                media + pdt + "#EXT-X-DATERANGE:ID=\"d\",START-DATE=\"2026-01-01T00:00:00Z\",X-COM-EXAMPLE=\"\"\n"
                    + "#EXTINF:6.0,\na.ts\n",
                media + "#EXT-X-DEFINE:NAME=\"x\",VALUE=\"\"\n" + pdt
                    + "#EXT-X-DATERANGE:ID=\"d\",START-DATE=\"2026-01-01T00:00:00Z\",X-COM-EXAMPLE=\"1{$x}\"\n"
                    + "#EXTINF:6.0,\na.ts\n", .attributeType, 5
            ),
            // SCORE is a positive decimal-floating-point (RFC 8216bis 4.4.6.2): 0 passes the type check, not this one.
            (
                "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n" + variant + ",SCORE=0\nv.m3u8\n",
                "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n" + variant + ",SCORE=0.5\nv.m3u8\n", .valuePositive, 3
            ),
        ]
        for c in cases {
            let findings = PlaylistLinter(url: "https://example.com/a.m3u8").lint(try Playlist(c.text))
            #expect(
                findings.contains { $0.rule == c.rule && $0.line == c.line },
                "\(c.rule.id)@\(c.line): \(findings.map(\.description))")
            let fixed = PlaylistLinter(url: "https://example.com/a.m3u8").lint(try Playlist(c.fixed))
            let left = fixed.filter { $0.rule == c.rule || $0.severity == .error }
            #expect(left.isEmpty, "\(c.rule.id)@\(c.line) fixed: \(left.map(\.description))")
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
