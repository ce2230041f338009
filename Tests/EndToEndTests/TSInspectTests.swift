// End-to-end tests of tsinspect against ffprobe on fixtures made by Scripts/make-fixtures.sh.
import Foundation
import Testing

/// Fixture files in .fixtures/, made on demand by Scripts/make-fixtures.sh.
enum TSFixtures {
    static let directory = EndToEnd.repositoryRoot.appendingPathComponent(".fixtures")
    static let lock = NSLock()

    static func url(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> URL {
        let url = directory.appendingPathComponent(name)
        lock.lock()
        defer { lock.unlock() }
        if !FileManager.default.fileExists(atPath: url.path) {
            let script = EndToEnd.repositoryRoot.appendingPathComponent("Scripts/make-fixtures.sh")
            let result = try EndToEnd.run(script, [])
            #expect(result.status == 0, "make-fixtures.sh failed: \(result.err)", sourceLocation: sourceLocation)
        }
        #expect(
            FileManager.default.fileExists(atPath: url.path), "fixture \(name) missing", sourceLocation: sourceLocation)
        return url
    }
}

/// What ffprobe says about a file.
struct FFProbeReport {
    struct Packet: Equatable {
        var pid: Int
        var pts: Int64?
        var dts: Int64?
        var keyframe: Bool
        var position: Int64?
    }
    var programs: [Int: [Int]] = [:]
    var codecs: [Int: String] = [:]
    /// width, height, level, sample_rate, channels by PID (the ones ffprobe gives).
    var details: [Int: [String: Int]] = [:]
    var duration: Double?
    var packets: [Packet] = []

    static func load(_ file: URL) throws -> FFProbeReport? {
        guard let ffprobe = EndToEnd.tool("ffprobe") else { return nil }
        let result = try EndToEnd.run(
            ffprobe,
            [
                "-v", "error", "-show_programs", "-show_streams", "-show_format", "-show_packets", "-of", "json",
                file.path,
            ])
        guard
            let root = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        else { return nil }
        var report = FFProbeReport()
        var pidOfIndex: [Int: Int] = [:]
        for stream in root["streams"] as? [[String: Any]] ?? [] {
            guard let id = (stream["id"] as? String).flatMap({ Int($0.dropFirst(2), radix: 16) }),
                let index = stream["index"] as? Int
            else { continue }
            pidOfIndex[index] = id
            report.codecs[id] = stream["codec_name"] as? String ?? "unknown"
            var details: [String: Int] = [:]
            for key in ["width", "height", "level", "channels"] { details[key] = stream[key] as? Int }
            details["sampleRate"] = (stream["sample_rate"] as? String).flatMap { Int($0) }
            report.details[id] = details
        }
        for program in root["programs"] as? [[String: Any]] ?? [] {
            guard let number = program["program_num"] as? Int else { continue }
            report.programs[number] = (program["streams"] as? [[String: Any]] ?? []).compactMap {
                ($0["id"] as? String).flatMap { Int($0.dropFirst(2), radix: 16) }
            }
        }
        report.duration = ((root["format"] as? [String: Any])?["duration"] as? String).flatMap(Double.init)
        for packet in root["packets"] as? [[String: Any]] ?? [] {
            guard let index = packet["stream_index"] as? Int, let pid = pidOfIndex[index] else { continue }
            report.packets.append(
                Packet(
                    pid: pid, pts: (packet["pts"] as? NSNumber)?.int64Value,
                    dts: (packet["dts"] as? NSNumber)?.int64Value,
                    keyframe: (packet["flags"] as? String)?.hasPrefix("K") == true,
                    position: (packet["pos"] as? String).flatMap { Int64($0) }))
        }
        return report
    }
}

/// What tsinspect says, from --json and --pts --json.
struct InspectReport {
    var json: [String: Any]
    var pes: [FFProbeReport.Packet]
    var status: Int32

    static func load(_ file: URL) throws -> InspectReport? {
        guard let tool = EndToEnd.product("tsinspect") else { return nil }
        let summary = try EndToEnd.run(tool, ["--json", file.path])
        guard let json = try JSONSerialization.jsonObject(with: summary.stdout) as? [String: Any] else {
            Issue.record("tsinspect --json printed no JSON: \(summary.err)")
            return nil
        }
        let lines = try EndToEnd.run(tool, ["--pts", "--json", file.path])
        #expect(lines.status == summary.status)
        var pes: [FFProbeReport.Packet] = []
        for line in lines.out.split(separator: "\n") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                continue
            }
            pes.append(
                FFProbeReport.Packet(
                    pid: object["pid"] as? Int ?? -1, pts: (object["pts"] as? NSNumber)?.int64Value,
                    dts: (object["dts"] as? NSNumber)?.int64Value, keyframe: object["keyframe"] as? Bool ?? false,
                    position: (object["offset"] as? NSNumber)?.int64Value))
        }
        return InspectReport(json: json, pes: pes, status: summary.status)
    }

    var streams: [[String: Any]] { json["streams"] as? [[String: Any]] ?? [] }
    var errors: [String: Int] { json["errors"] as? [String: Int] ?? [:] }
}

private let wrapModulus: Int64 = 1 << 33

@Suite(.serialized) struct TSInspectAgreesWithFFProbe {
    /// PIDs, codecs, programs, every PES PTS/DTS and the duration agree with ffprobe.
    @Test(arguments: ["h264_aac.ts", "hevc_ac3.ts", "programs.ts", "m2ts.m2ts", "wrap.ts", "cut.ts"])
    func agrees(name: String) throws {
        let file = try TSFixtures.url(name)
        guard let probe = try FFProbeReport.load(file), let ours = try InspectReport.load(file) else { return }
        // Streams and codecs.
        var ourCodecs: [Int: String] = [:]
        for stream in ours.streams {
            if let pid = stream["pid"] as? Int { ourCodecs[pid] = stream["codec"] as? String }
        }
        #expect(ourCodecs == probe.codecs, "\(name): codecs by PID")
        // Codec details from the SPS / ADTS / AC-3 headers.
        for stream in ours.streams {
            guard let pid = stream["pid"] as? Int, let theirs = probe.details[pid] else { continue }
            for (key, value) in theirs where key != "level" || stream["codec"] as? String != "ac3" {
                let ourKey = key
                #expect(stream[ourKey] as? Int == value, "\(name) PID \(pid) \(key)")
            }
        }
        // Programs.
        var ourPrograms: [Int: [Int]] = [:]
        for program in ours.json["programs"] as? [[String: Any]] ?? [] {
            if let number = program["programNumber"] as? Int { ourPrograms[number] = program["streams"] as? [Int] }
        }
        #expect(ourPrograms == probe.programs, "\(name): programs")
        // Every PES: PTS and DTS (modulo 2^33: ffprobe unwraps), in order per PID.
        for pid in probe.codecs.keys.sorted() {
            let theirs = probe.packets.filter { $0.pid == pid }
            let mine = ours.pes.filter { $0.pid == pid }
            #expect(
                mine.count == theirs.count, "\(name) PID \(pid): \(mine.count) PES vs \(theirs.count) ffprobe packets")
            for (index, (a, b)) in zip(mine, theirs).enumerated() {
                let theirPTS = b.pts.map { (($0 % wrapModulus) + wrapModulus) % wrapModulus }
                let theirDTS = b.dts.map { (($0 % wrapModulus) + wrapModulus) % wrapModulus }
                guard a.pts == theirPTS, (a.dts ?? a.pts) == theirDTS else {
                    Issue.record(
                        "\(name) PID \(pid) PES \(index): ours pts \(a.pts ?? -1) dts \(a.dts ?? -1), ffprobe \(b)")
                    break
                }
                if probe.codecs[pid] == "h264" || probe.codecs[pid] == "hevc" {
                    #expect(a.keyframe == b.keyframe, "\(name) PID \(pid) PES \(index) keyframe flag")
                    if !name.hasSuffix(".m2ts") {
                        #expect(a.position == b.position, "\(name) PID \(pid) PES \(index) offset")
                    }
                }
            }
        }
        // Duration within one video frame (25 fps).
        let duration = ours.json["durationSeconds"] as? Double
        #expect(duration != nil && probe.duration != nil)
        if let duration, let theirs = probe.duration {
            #expect(abs(duration - theirs) <= 0.040 + 1e-6, "\(name): duration \(duration) vs ffprobe \(theirs)")
        }
        // Exit status: 0 for clean files, 1 for the cut one.
        #expect(ours.status == (name == "cut.ts" ? 1 : 0), "\(name) exit status")
        let expectedPacketSize = name.hasSuffix(".m2ts") ? 192 : 188
        #expect(ours.json["packetSize"] as? Int == expectedPacketSize)
        #expect(ours.json["schemaVersion"] as? Int == 1)
    }

    @Test func cutFileReportsTruncation() throws {
        let file = try TSFixtures.url("cut.ts")
        guard let ours = try InspectReport.load(file) else { return }
        #expect(ours.errors["truncatedBytes"] == 100)
        #expect(ours.errors["syncLosses"] == 0)
        #expect(ours.status == 1)
    }

    @Test func garbageIsSkippedAndCounted() throws {
        let clean = try TSFixtures.url("h264_aac.ts")
        let dirty = try TSFixtures.url("garbage.ts")
        guard let cleanReport = try InspectReport.load(clean), let dirtyReport = try InspectReport.load(dirty) else {
            return
        }
        #expect(dirtyReport.status == 1)
        #expect(dirtyReport.errors["syncLosses"] == 2)
        #expect(dirtyReport.errors["skippedBytes"] == 1000 + 77)
        // Everything outside the one damaged packet is read: at most one PES lost or changed.
        let cleanSet = Set(cleanReport.pes.map { "\($0.pid) \($0.pts ?? -1) \($0.dts ?? -1)" })
        let dirtySet = Set(dirtyReport.pes.map { "\($0.pid) \($0.pts ?? -1) \($0.dts ?? -1)" })
        #expect(cleanSet.subtracting(dirtySet).count <= 1)
        #expect(dirtySet.isSubset(of: cleanSet))
        #expect(cleanReport.status == 0)
    }

    @Test func keyframesMatchFFProbe() throws {
        let file = try TSFixtures.url("h264_aac.ts")
        guard let tool = EndToEnd.product("tsinspect"), let probe = try FFProbeReport.load(file) else { return }
        let result = try EndToEnd.run(tool, ["--keyframes", "--json", file.path])
        #expect(result.status == 0)
        let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        let keyframes = json?["keyframes"] as? [[String: Any]] ?? []
        let expected = probe.packets.filter { $0.pid == 0x100 && $0.keyframe }
        #expect(keyframes.map { ($0["offset"] as? NSNumber)?.int64Value } == expected.map(\.position))
        #expect(keyframes.map { ($0["pts"] as? NSNumber)?.int64Value } == expected.map(\.pts))
        #expect(json?["keyframePid"] as? Int == 0x100)
        #expect(keyframes.count == 4)  // 4 s at one keyframe per second
        let text = try EndToEnd.run(tool, ["--keyframes", file.path])
        #expect(text.out.split(separator: "\n").first == "offset=564 pts=133200 seconds=0.021")
    }

    @Test func probeAgreesWithFullScan() throws {
        let file = try TSFixtures.url("wrap.ts")
        guard let tool = EndToEnd.product("tsinspect"), let ours = try InspectReport.load(file) else { return }
        let result = try EndToEnd.run(tool, ["--probe", "--json", file.path])
        #expect(result.status == 0)
        let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        let probed = json?["durationSeconds"] as? Double
        let scanned = ours.json["durationSeconds"] as? Double
        #expect(probed != nil && probed == scanned)
    }
}

@Suite struct SlatesReadCleanly {
    /// Slates made by SlateBuilder (through tsinspect --make-slate) decode with no errors in ffmpeg and have
    /// continuous time stamps in ffprobe, also across the 33-bit wrap.
    @Test(arguments: [(2.5, UInt64(126_000)), (4.0, (UInt64(1) << 33) - 2 * 90_000)])
    func slate(seconds: Double, start: UInt64) throws {
        guard let tool = EndToEnd.product("tsinspect"), let ffmpeg = EndToEnd.tool("ffmpeg"),
            EndToEnd.tool("ffprobe") != nil
        else { return }
        let made = try EndToEnd.run(tool, ["--make-slate", "\(seconds)", "--start-pts", "\(start)"])
        #expect(made.status == 0, "\(made.err)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("slate-\(getpid())-\(start).ts")
        try made.stdout.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let decode = try EndToEnd.run(ffmpeg, ["-v", "error", "-i", file.path, "-f", "null", "-"])
        #expect(decode.status == 0)
        #expect(decode.err.isEmpty, "ffmpeg decoding errors: \(decode.err)")
        guard let probe = try FFProbeReport.load(file) else { return }
        #expect(probe.codecs == [0x100: "h264", 0x101: "aac"])
        let video = probe.packets.filter { $0.pid == 0x100 }.compactMap(\.pts)
        let audio = probe.packets.filter { $0.pid == 0x101 }.compactMap(\.pts)
        let expectedFrames = Int((seconds * 25).rounded())
        #expect(video.count == expectedFrames)
        #expect(video.first.map { ($0 % wrapModulus + wrapModulus) % wrapModulus } == Int64(start))
        #expect(audio.first.map { ($0 % wrapModulus + wrapModulus) % wrapModulus } == Int64(start))
        for (a, b) in zip(video, video.dropFirst()) { #expect((b - a + wrapModulus) % wrapModulus == 3600) }
        for (a, b) in zip(audio, audio.dropFirst()) { #expect((b - a + wrapModulus) % wrapModulus == 1920) }
        if let duration = probe.duration { #expect(abs(duration - Double(expectedFrames) * 0.04) < 0.0005) }
        let inspect = try EndToEnd.run(tool, [file.path])
        #expect(inspect.status == 0, "tsinspect finds no stream errors in the slate")
    }
}

@Suite struct TSInspectCommandLine {
    @Test func helpAndVersion() throws {
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let help = try EndToEnd.run(tool, ["--help"])
        #expect(help.status == 0)
        #expect(help.out.hasPrefix("OVERVIEW: Show what is inside an MPEG-TS file"))
        for heading in [
            "USAGE: tsinspect", "ARGUMENTS:", "OPTIONS:", "  --json", "  --pts", "  --keyframes", "  --version",
        ] {
            #expect(help.out.contains(heading), "help mentions \(heading)")
        }
        #expect(help.err.isEmpty)
        let version = try EndToEnd.run(tool, ["--version"])
        #expect(version.status == 0 && version.out == "1.0.0\n")
    }

    @Test func usageErrors() throws {
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let cases: [([String], String)] = [
            ([], "Error: missing expected argument '<file>'"),
            (["--bogus", "x.ts"], "Error: unknown option '--bogus'"),
            (["a.ts", "b.ts"], "Error: unexpected argument 'b.ts' after 'a.ts'"),
            (["--pts", "--keyframes", "a.ts"], "Error: '--keyframes' cannot be combined with '--pts'"),
        ]
        for (arguments, message) in cases {
            let result = try EndToEnd.run(tool, arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.out.isEmpty)
            #expect(
                result.err
                    == message + "\nUSAGE: tsinspect [--json] [--pts | --keyframes | --scte35 | --probe] <file>\n"
                    + "       tsinspect --make-slate <seconds> [--start-pts <ticks>]\n"
                    + "  See 'tsinspect --help' for more information.\n", "\(arguments)")
        }
    }

    @Test func unreadableAndNotTransportStream() throws {
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let missing = try EndToEnd.run(tool, ["/nonexistent/file.ts"])
        #expect(missing.status == 2)
        #expect(missing.err == "Error: cannot read /nonexistent/file.ts: ENOENT (No such file or directory)\n")
        let text = FileManager.default.temporaryDirectory.appendingPathComponent("tsinspect-not-ts-\(getpid()).txt")
        try Data(repeating: 0x41, count: 5000).write(to: text)
        defer { try? FileManager.default.removeItem(at: text) }
        let notTS = try EndToEnd.run(tool, [text.path])
        #expect(notTS.status == 2)
        #expect(
            notTS.err
                == "Error: \(text.path) is not an MPEG-TS stream: no sync byte pattern found in 5000 bytes (gave up at offset 5000)\n"
        )
    }

    @Test func standardInputGivesTheSameReport() throws {
        let file = try TSFixtures.url("hevc_ac3.ts")
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let fromFile = try EndToEnd.run(tool, ["--json", file.path])
        let fromStdin = try EndToEnd.run(tool, ["--json", "-"], input: try Data(contentsOf: file))
        #expect(fromStdin.status == 0)
        #expect(fromStdin.out == fromFile.out.replacingOccurrences(of: "\"\(file.path)\"", with: "\"-\""))
        let ptsFile = try EndToEnd.run(tool, ["--pts", file.path])
        let ptsStdin = try EndToEnd.run(tool, ["--pts", "-"], input: try Data(contentsOf: file))
        #expect(ptsFile.out == ptsStdin.out)
        #expect(ptsFile.out.split(separator: "\n").first == "pid=256 pts=133200 dts=126000 keyframe=1 offset=564")
    }

    @Test func summaryText() throws {
        let file = try TSFixtures.url("h264_aac.ts")
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let result = try EndToEnd.run(tool, [file.path])
        #expect(result.status == 0)
        let lines = result.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == "File:          \(file.path)")
        #expect(lines.contains("Packet size:   188 bytes"))
        #expect(lines.contains("Duration:      4.032 s"))
        #expect(lines.contains("Tables:        PAT, PMT, SDT"))
        #expect(lines.contains("Program 1 \"Service01\" (PMT PID 0x1000, PCR PID 0x0100)"))
        #expect(lines.contains { $0.hasPrefix("  0x0100  0x1b H.264") && $0.contains("133200 (1.480 s)") })
        #expect(lines.contains { $0.hasPrefix("  0x0101  0x0f AAC (ADTS)") && $0.contains("aac") })
        #expect(lines.contains("Sync losses:   0 (0 bytes skipped, 0 bytes in a truncated last packet)"))
    }
}
