// End-to-end tests of tsinspect against ffprobe on fixtures made by Scripts/make-fixtures.sh.
import Foundation
import Testing

/// Fixture files in .fixtures/, made on demand by Scripts/make-fixtures.sh.
enum TSFixtures {
    static let directory = EndToEnd.repositoryRoot.appendingPathComponent(".fixtures")
    /// Scripts/make-fixtures.sh, run once, by the first test that finds its fixture missing; the others await it.
    static let made = SharedFixture<Result<ProcessResult, any Error>> {
        let script = EndToEnd.repositoryRoot.appendingPathComponent("Scripts/make-fixtures.sh")
        do { return .success(try await EndToEnd.run(script, [])) } catch { return .failure(error) }
    }

    static func url(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> URL {
        let url = directory.appendingPathComponent(name)
        if !FileManager.default.fileExists(atPath: url.path) {
            let result = try await made.value.get()
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

    static func load(_ file: URL) async throws -> FFProbeReport? {
        guard let ffprobe = EndToEnd.tool("ffprobe") else { return nil }
        let result = try await EndToEnd.run(
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

    static func load(_ file: URL) async throws -> InspectReport? {
        guard let tool = EndToEnd.product("tsinspect") else { return nil }
        let summary = try await EndToEnd.run(tool, ["--json", file.path])
        guard let json = try JSONSerialization.jsonObject(with: summary.stdout) as? [String: Any] else {
            Issue.record("tsinspect --json printed no JSON: \(summary.err)")
            return nil
        }
        let lines = try await EndToEnd.run(tool, ["--pts", "--json", file.path])
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

@Suite(.serialized, .temporaryFolders) struct TSInspectAgreesWithFFProbe {
    /// PIDs, codecs, programs, every PES PTS/DTS and the duration agree with ffprobe.
    @Test(arguments: ["h264_aac.ts", "hevc_ac3.ts", "programs.ts", "m2ts.m2ts", "wrap.ts", "cut.ts"])
    func agrees(name: String) async throws {
        let file = try await TSFixtures.url(name)
        let probe = try #require(try await FFProbeReport.load(file))
        let ours = try #require(try await InspectReport.load(file))
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

    @Test func cutFileReportsTruncation() async throws {
        let file = try await TSFixtures.url("cut.ts")
        guard let ours = try await InspectReport.load(file) else { return }
        #expect(ours.errors["truncatedBytes"] == 100)
        #expect(ours.errors["syncLosses"] == 0)
        #expect(ours.status == 1)
    }

    @Test func garbageIsSkippedAndCounted() async throws {
        let clean = try await TSFixtures.url("h264_aac.ts")
        let dirty = try await TSFixtures.url("garbage.ts")
        guard let cleanReport = try await InspectReport.load(clean),
            let dirtyReport = try await InspectReport.load(dirty)
        else {
            return
        }
        #expect(dirtyReport.status == 1)
        #expect(dirtyReport.errors["syncLosses"] == 2)
        #expect(dirtyReport.errors["skippedBytes"] == 1000 + 77)
        // Where: the 1000 bytes after packet 300 exactly; the 77 inside packet 600 from where packet 601's sync
        // byte was missing (56400 + 1000 + 301 * 188) to where packets start again.
        let regions = dirtyReport.json["garbage"] as? [[String: Int]]
        #expect(regions == [["offset": 56400, "length": 1000], ["offset": 57400 + 301 * 188, "length": 77]])
        #expect(cleanReport.json["garbage"] as? [[String: Int]] == [])
        if let tool = EndToEnd.product("tsinspect") {
            let text = try await EndToEnd.run(tool, [dirty.path]).out.split(separator: "\n").map(String.init)
            let losses = text.firstIndex { $0.hasPrefix("Sync losses:") } ?? 0
            #expect(
                Array(text.dropFirst(losses).prefix(3)) == [
                    "Sync losses:   2 (1077 bytes skipped, 0 bytes in a truncated last packet)",
                    "  garbage at offset 56400: 1000 bytes skipped", "  garbage at offset 113988: 77 bytes skipped",
                ])
            // Garbage before the first packet is a region at offset 0.
            let leading = TemporaryFolders.make(prefix: "lead-").appendingPathComponent("lead.ts")
            try (Data(repeating: 0x55, count: 333) + Data(contentsOf: clean)).write(to: leading)
            let json = try await EndToEnd.run(tool, ["--json", leading.path])
            let object = try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any]
            #expect(object?["garbage"] as? [[String: Int]] == [["offset": 0, "length": 333]])
        }
        // Everything outside the one damaged packet is read: at most one PES lost or changed.
        let cleanSet = Set(cleanReport.pes.map { "\($0.pid) \($0.pts ?? -1) \($0.dts ?? -1)" })
        let dirtySet = Set(dirtyReport.pes.map { "\($0.pid) \($0.pts ?? -1) \($0.dts ?? -1)" })
        #expect(cleanSet.subtracting(dirtySet).count <= 1)
        #expect(dirtySet.isSubset(of: cleanSet))
        #expect(cleanReport.status == 0)
    }

    @Test func keyframesMatchFFProbe() async throws {
        let file = try await TSFixtures.url("h264_aac.ts")
        let tool = try #require(EndToEnd.product("tsinspect"))
        let probe = try await #require(try FFProbeReport.load(file))
        let result = try await EndToEnd.run(tool, ["--keyframes", "--json", file.path])
        #expect(result.status == 0)
        let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        let keyframes = json?["keyframes"] as? [[String: Any]] ?? []
        let expected = probe.packets.filter { $0.pid == 0x100 && $0.keyframe }
        #expect(keyframes.map { ($0["offset"] as? NSNumber)?.int64Value } == expected.map(\.position))
        #expect(keyframes.map { ($0["pts"] as? NSNumber)?.int64Value } == expected.map(\.pts))
        #expect(json?["keyframePid"] as? Int == 0x100)
        #expect(keyframes.count == 4)  // 4 s at one keyframe per second
        let text = try await EndToEnd.run(tool, ["--keyframes", file.path])
        #expect(text.out.split(separator: "\n").first == "offset=564 pts=133200 seconds=0.021")
    }

    /// MPEG-2 video and AAC packed several frames to a PES (the last PES shorter): keyframes are the I pictures
    /// ffprobe flags, the duration (full scan and --probe) is ffprobe's within one frame, not a PES step more.
    @Test func mpeg2AndMultiFrameAudio() async throws {
        let file = try await TSFixtures.url("mpeg2_multiframe.ts")
        let tool = try #require(EndToEnd.product("tsinspect"))
        let probe = try await #require(try FFProbeReport.load(file))
        let ours = try await #require(try InspectReport.load(file))
        #expect(ours.status == 0)
        #expect(probe.codecs == [0x100: "mpeg2video", 0x101: "aac"])
        let theirKeyframes = probe.packets.filter { $0.pid == 0x100 && $0.keyframe }
        let ourKeyframes = ours.pes.filter { $0.pid == 0x100 && $0.keyframe }
        #expect(ourKeyframes.map(\.pts) == theirKeyframes.map(\.pts))
        #expect(ourKeyframes.map(\.position) == theirKeyframes.map(\.position))
        #expect(ourKeyframes.count == 9, "4.01 s at 25 fps, one I picture every 12 frames")
        #expect(ours.pes.filter { $0.pid == 0x100 }.count == probe.packets.filter { $0.pid == 0x100 }.count)
        let duration = ours.json["durationSeconds"] as? Double
        #expect(duration != nil && probe.duration != nil)
        if let duration, let theirs = probe.duration {
            #expect(abs(duration - theirs) <= 1024.0 / 48000 + 1e-6, "duration \(duration) vs ffprobe \(theirs)")
        }
        let probed = try await EndToEnd.run(tool, ["--probe", "--json", file.path])
        let probedJSON = try JSONSerialization.jsonObject(with: probed.stdout) as? [String: Any]
        #expect(probedJSON?["durationSeconds"] as? Double == duration, "--probe agrees with the full scan")
    }

    @Test func probeAgreesWithFullScan() async throws {
        let file = try await TSFixtures.url("wrap.ts")
        guard let tool = EndToEnd.product("tsinspect"), let ours = try await InspectReport.load(file) else { return }
        let result = try await EndToEnd.run(tool, ["--probe", "--json", file.path])
        #expect(result.status == 0)
        let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        let probed = json?["durationSeconds"] as? Double
        let scanned = ours.json["durationSeconds"] as? Double
        #expect(probed != nil && probed == scanned)
        #expect(json?["probeSeconds"] == nil, "no timing unless asked")
        // --timing: the probe's own time, measured inside the process, in text and JSON.
        let timed = try await EndToEnd.run(tool, ["--probe", "--timing", "--json", file.path])
        #expect(timed.status == 0)
        let timedJSON = try JSONSerialization.jsonObject(with: timed.stdout) as? [String: Any]
        let seconds = timedJSON?["probeSeconds"] as? Double
        #expect(seconds.map { $0 > 0 } == true)
        #expect(timedJSON?["durationSeconds"] as? Double == probed)
        let text = try await EndToEnd.run(tool, ["--probe", "--timing", file.path])
        #expect(text.out.split(separator: "\n").last?.hasPrefix("Probe time:    ") == true)
        #expect(text.out.hasSuffix(" ms\n"))
    }
}

@Suite(.temporaryFolders) struct SlatesReadCleanly {
    /// Slates made by SlateBuilder (through tsinspect --make-slate) decode with no errors in ffmpeg and have
    /// continuous time stamps in ffprobe, also across the 33-bit wrap.
    @Test(arguments: [(2.5, UInt64(126_000)), (4.0, (UInt64(1) << 33) - 2 * 90_000)])
    func slate(seconds: Double, start: UInt64) async throws {
        guard let tool = EndToEnd.product("tsinspect"), let ffmpeg = EndToEnd.tool("ffmpeg"),
            EndToEnd.tool("ffprobe") != nil
        else { return }
        let made = try await EndToEnd.run(tool, ["--make-slate", "\(seconds)", "--start-pts", "\(start)"])
        #expect(made.status == 0, "\(made.err)")
        let file = TemporaryFolders.make(prefix: "slate-").appendingPathComponent("slate-\(start).ts")
        try made.stdout.write(to: file)
        let decode = try await EndToEnd.run(ffmpeg, ["-v", "error", "-i", file.path, "-f", "null", "-"])
        #expect(decode.status == 0)
        #expect(decode.err.isEmpty, "ffmpeg decoding errors: \(decode.err)")
        let probe = try await #require(try FFProbeReport.load(file))
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
        let inspect = try await EndToEnd.run(tool, [file.path])
        #expect(inspect.status == 0, "tsinspect finds no stream errors in the slate")
    }
}

/// Template slates chained with `--audio-origin` (tsinspect --make-slate, SlateBuilder's template path): ffprobe
/// reads each slate's audio packets; every join between consecutive slates is 0 ticks (0.00 ms), each slot holds
/// its duration of audio within one AAC frame, and 30 slots do not drift. Slots of 2 s and of 2.5 s (not whole
/// AAC frames), the chain crossing the 33-bit wrap.
@Suite struct ChainedTemplateSlates {
    @Test(arguments: [2.0, 2.5]) func joinsHaveNoAudioGap(seconds: Double) async throws {
        guard let tool = EndToEnd.product("tsinspect"), let ffprobe = EndToEnd.tool("ffprobe") else { return }
        let origin = (Int64(1) << 33) - 20 * 90_000
        let slot = Int64((seconds * 90_000).rounded())
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("chain-\(UUID().uuidString).ts")
        defer { try? FileManager.default.removeItem(at: file) }
        var previousEnd: Int64?
        var gaps: [Int64] = []
        var holes: [Int64] = []
        var total: Int64 = 0
        for n in 0..<30 {
            let start = (origin + Int64(n) * slot) % wrapModulus
            let made = try await EndToEnd.run(
                tool, ["--make-slate", "\(seconds)", "--start-pts", "\(start)", "--audio-origin", "\(origin)"])
            #expect(made.status == 0, "\(made.err)")
            try made.stdout.write(to: file)
            let probe = try await EndToEnd.run(
                ffprobe,
                [
                    "-v", "error", "-select_streams", "a", "-show_entries", "packet=pts,duration", "-of", "csv=p=0",
                    file.path,
                ])
            let packets: [(pts: Int64, duration: Int64)] = probe.out.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: ",")
                guard fields.count == 2, let pts = Int64(fields[0]), let duration = Int64(fields[1]) else { return nil }
                return ((pts % wrapModulus + wrapModulus) % wrapModulus, duration)
            }
            let first = try #require(packets.first, "slate \(n) has no audio")
            let sum = packets.reduce(Int64(0)) { $0 + $1.duration }
            // Unwrapped onto the chain's timeline (which crosses 2^33).
            let begin = (first.pts - origin + wrapModulus) % wrapModulus
            if let previousEnd { gaps.append(begin - previousEnd) }
            holes.append(slot - sum)
            total += sum
            previousEnd = begin + sum
        }
        #expect(gaps.count == 29 && gaps.allSatisfy { $0 == 0 }, "audio gaps (ticks) at the joins: \(gaps)")
        #expect(holes.allSatisfy { abs($0) < 1920 }, "per-slot audio shortfall (ticks): \(holes)")
        #expect(abs(total - 30 * slot) < 1920, "30 slots hold \(total) ticks of audio for \(30 * slot)")
    }
}

/// `--pts --frames`: one line per audio frame, with the PTS and size ffprobe gives each audio packet.
@Suite(.serialized, .temporaryFolders) struct TSInspectAudioFrames {
    struct Frame: Equatable, CustomStringConvertible {
        var pts: Int64
        var size: Int
        var description: String { "\(pts)/\(size)" }
    }

    /// ffprobe's audio packets by PID (PTS modulo 2^33: ffprobe unwraps), and the positions it gives.
    static func ffprobeFrames(_ file: URL) async throws -> (frames: [Int: [Frame]], positions: [Int: [Int64]])? {
        guard let ffprobe = EndToEnd.tool("ffprobe") else { return nil }
        let result = try await EndToEnd.run(
            ffprobe,
            [
                "-v", "error", "-select_streams", "a", "-show_streams", "-show_packets", "-show_entries",
                "stream=index,id:packet=stream_index,pts,size,pos", "-of", "json", file.path,
            ])
        guard let root = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else { return nil }
        var pidOfIndex: [Int: Int] = [:]
        for stream in root["streams"] as? [[String: Any]] ?? [] {
            if let index = stream["index"] as? Int,
                let pid = (stream["id"] as? String).flatMap({ Int($0.dropFirst(2), radix: 16) })
            {
                pidOfIndex[index] = pid
            }
        }
        var frames: [Int: [Frame]] = [:]
        var positions: [Int: [Int64]] = [:]
        for packet in root["packets"] as? [[String: Any]] ?? [] {
            guard let index = packet["stream_index"] as? Int, let pid = pidOfIndex[index],
                let pts = (packet["pts"] as? NSNumber)?.int64Value,
                let size = (packet["size"] as? String).flatMap({ Int($0) })
            else { continue }
            frames[pid, default: []].append(Frame(pts: (pts % wrapModulus + wrapModulus) % wrapModulus, size: size))
            if let pos = (packet["pos"] as? String).flatMap({ Int64($0) }) { positions[pid, default: []].append(pos) }
        }
        return (frames, positions)
    }

    /// tsinspect's frame lines by PID, and the offsets of the first frame of each PES.
    static func ourFrames(_ file: URL) async throws -> (frames: [Int: [Frame]], positions: [Int: [Int64]], lines: Int)?
    {
        guard let tool = EndToEnd.product("tsinspect") else { return nil }
        let result = try await EndToEnd.run(tool, ["--pts", "--frames", "--json", file.path])
        var frames: [Int: [Frame]] = [:]
        var positions: [Int: [Int64]] = [:]
        var lines = 0
        for line in result.out.split(separator: "\n") {
            lines += 1
            guard let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let pid = o["pid"] as? Int, let size = o["size"] as? Int,
                let pts = (o["pts"] as? NSNumber)?.int64Value, let index = o["frame"] as? Int,
                let offset = (o["offset"] as? NSNumber)?.int64Value
            else { continue }
            frames[pid, default: []].append(Frame(pts: pts, size: size))
            if index == 0 { positions[pid, default: []].append(offset) }
        }
        return (frames, positions, lines)
    }

    static func compare(_ file: URL, label: String, codecs: Set<String>) async throws {
        let theirs = try #require(try await ffprobeFrames(file), "\(label): ffprobe's packets")
        let ours = try #require(try await ourFrames(file), "\(label): tsinspect's frames")
        #expect(!theirs.frames.isEmpty, "\(label): ffprobe lists audio packets")
        #expect(Set(ours.frames.keys) == Set(theirs.frames.keys), "\(label): audio PIDs")
        for (pid, expected) in theirs.frames {
            let mine = ours.frames[pid] ?? []
            #expect(mine.count == expected.count, "\(label) PID \(pid): \(mine.count) frames vs \(expected.count)")
            let first = zip(mine, expected).enumerated().first { $0.element.0 != $0.element.1 }
            let mineText = first.map { "\($0.element.0)" } ?? ""
            let theirText = first.map { "\($0.element.1)" } ?? ""
            #expect(
                first == nil, "\(label) PID \(pid) frame \(first?.offset ?? -1): ours \(mineText) ffprobe \(theirText)")
            // ffprobe gives a position for the first packet of each PES: the PES's offset, as ours.
            #expect(ours.positions[pid] == theirs.positions[pid], "\(label) PID \(pid) PES offsets")
        }
        do {
            let probe = try #require(try await FFProbeReport.load(file))
            #expect(Set(theirs.frames.keys.compactMap { probe.codecs[$0] }) == codecs, "\(label) codecs")
            // Video PES lines are still there, one per PES.
            let video = probe.packets.filter { !theirs.frames.keys.contains($0.pid) }.count
            #expect(ours.lines == video + theirs.frames.values.map(\.count).reduce(0, +), "\(label) line count")
        }
    }

    @Test(arguments: [
        ("mpeg2_multiframe.ts", "aac"), ("h264_aac.ts", "aac"), ("hevc_ac3.ts", "ac3"), ("programs.ts", "aac"),
        ("wrap.ts", "aac"), ("garbage.ts", "aac"),
    ])
    func fixtureFramesMatchFFProbe(name: String, codec: String) async throws {
        try await Self.compare(try await TSFixtures.url(name), label: name, codecs: [codec])
    }

    /// Audio packed several frames to a PES (ffmpeg's default), in codecs and rates whose frame durations are not
    /// whole ticks (AAC and AC-3 at 44.1 kHz, MPEG audio at 22.05 kHz), E-AC-3, and AAC at 44.1 kHz just before
    /// the 33-bit wrap.
    @Test(arguments: [
        ("aac44", ["-c:a", "aac", "-b:a", "64k"], 44100, 0.0, "aac"),
        ("ac3_44", ["-c:a", "ac3", "-b:a", "96k"], 44100, 0.0, "ac3"),
        ("eac3", ["-c:a", "eac3", "-b:a", "96k"], 48000, 0.0, "eac3"),
        ("mp2_22", ["-c:a", "mp2", "-b:a", "64k"], 22050, 0.0, "mp2"),
        ("aac44_wrap", ["-c:a", "aac", "-b:a", "64k"], 44100, 95441.7, "aac"),
    ])
    func multiFramePESMatchFFProbe(name: String, codec: [String], rate: Int, offset: Double, codecName: String)
        async throws
    {
        guard let ffmpeg = EndToEnd.tool("ffmpeg") else { return }
        let file = TemporaryFolders.make(prefix: "frames-").appendingPathComponent("\(name).ts")
        var arguments = [
            "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
            "testsrc2=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(rate)", "-t",
            "3.03", "-c:v", "libx264", "-preset", "ultrafast",
        ]
        arguments += codec
        if offset > 0 { arguments += ["-output_ts_offset", "\(offset)"] }
        arguments += ["-f", "mpegts", file.path]
        let made = try await EndToEnd.run(ffmpeg, arguments)
        #expect(made.status == 0, "ffmpeg: \(made.err)")
        try await Self.compare(file, label: name, codecs: [codecName])
    }

    @Test func textLinesAndFrameTimes() async throws {
        let file = try await TSFixtures.url("mpeg2_multiframe.ts")
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let plain = try await EndToEnd.run(tool, ["--pts", file.path]).out.split(separator: "\n")
        let framed = try await EndToEnd.run(tool, ["--pts", "--frames", file.path]).out.split(separator: "\n")
        // The first audio PES, then its frames: the PES PTS plus 1920 ticks (1024 samples at 48 kHz) per frame.
        let pes = try #require(plain.first { $0.hasPrefix("pid=257 ") })
        let frames = framed.filter { $0.hasPrefix("pid=257 ") }
        #expect(frames.first?.hasPrefix(pes + " frame=0 size=") == true, "\(frames.first ?? "")")
        let pts = frames.prefix(3).compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("pts=") }.flatMap { Int($0.dropFirst(4)) }
        }
        #expect(pts.count == 3 && pts[1] - pts[0] == 1920 && pts[2] - pts[1] == 1920)
        #expect(frames[1].contains(" frame=1 size="))
        // Video lines are the same as without --frames.
        #expect(framed.filter { $0.hasPrefix("pid=256 ") } == plain.filter { $0.hasPrefix("pid=256 ") })
        #expect(framed.count > plain.count)
    }
}

@Suite(.temporaryFolders) struct TSInspectCommandLine {
    @Test func helpAndVersion() async throws {
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let help = try await EndToEnd.run(tool, ["--help"])
        #expect(help.status == 0)
        #expect(help.out.hasPrefix("OVERVIEW: Show what is inside an MPEG-TS file"))
        for heading in [
            "USAGE: tsinspect", "ARGUMENTS:", "OPTIONS:", "  --json", "  --pts", "  --frames", "  --keyframes",
            "  --version",
        ] {
            #expect(help.out.contains(heading), "help mentions \(heading)")
        }
        #expect(help.err.isEmpty)
        let version = try await EndToEnd.run(tool, ["--version"])
        #expect(version.status == 0 && version.out == "1.0.0\n")
    }

    @Test func usageErrors() async throws {
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let cases: [([String], String)] = [
            ([], "Error: missing expected argument '<file>'"),
            (["--bogus", "x.ts"], "Error: unknown option '--bogus'"),
            (["a.ts", "b.ts"], "Error: unexpected argument 'b.ts' after 'a.ts'"),
            (["--pts", "--keyframes", "a.ts"], "Error: '--keyframes' cannot be combined with '--pts'"),
            (["--timing", "a.ts"], "Error: '--timing' needs '--probe'"),
            (["--frames", "a.ts"], "Error: '--frames' needs '--pts'"),
        ]
        for (arguments, message) in cases {
            let result = try await EndToEnd.run(tool, arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.out.isEmpty)
            #expect(
                result.err
                    == message
                    + "\nUSAGE: tsinspect [--json] [--pts [--frames] | --keyframes | --scte35 | --probe [--timing]] <file>\n"
                    + "       tsinspect --make-slate <seconds> [--start-pts <ticks>]\n"
                    + "  See 'tsinspect --help' for more information.\n", "\(arguments)")
        }
    }

    @Test func unreadableAndNotTransportStream() async throws {
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let missing = try await EndToEnd.run(tool, ["/nonexistent/file.ts"])
        #expect(missing.status == 2)
        #expect(missing.err == "Error: cannot read /nonexistent/file.ts: ENOENT (No such file or directory)\n")
        let text = TemporaryFolders.make(prefix: "tsinspect-not-ts-").appendingPathComponent("not-ts.txt")
        try Data(repeating: 0x41, count: 5000).write(to: text)
        let notTS = try await EndToEnd.run(tool, [text.path])
        #expect(notTS.status == 2)
        #expect(
            notTS.err
                == "Error: \(text.path) is not an MPEG-TS stream: no sync byte pattern found in 5000 bytes (gave up at offset 5000)\n"
        )
    }

    @Test func standardInputGivesTheSameReport() async throws {
        let file = try await TSFixtures.url("hevc_ac3.ts")
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let fromFile = try await EndToEnd.run(tool, ["--json", file.path])
        let fromStdin = try await EndToEnd.run(tool, ["--json", "-"], input: try Data(contentsOf: file))
        #expect(fromStdin.status == 0)
        #expect(fromStdin.out == fromFile.out.replacingOccurrences(of: "\"\(file.path)\"", with: "\"-\""))
        let ptsFile = try await EndToEnd.run(tool, ["--pts", file.path])
        let ptsStdin = try await EndToEnd.run(tool, ["--pts", "-"], input: try Data(contentsOf: file))
        #expect(ptsFile.out == ptsStdin.out)
        #expect(ptsFile.out.split(separator: "\n").first == "pid=256 pts=133200 dts=126000 keyframe=1 offset=564")
    }

    @Test func summaryText() async throws {
        let file = try await TSFixtures.url("h264_aac.ts")
        guard let tool = EndToEnd.product("tsinspect") else { return }
        let result = try await EndToEnd.run(tool, [file.path])
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

/// SCTE-35 cues carried in a TS PID: tsinspect --scte35 --json against threefive reading the same file.
@Suite(.temporaryFolders) struct SCTE35AgreesWithThreefive {
    /// The examples of SCTE 35 section 14 (splice_insert with an avail descriptor; time_signal with one and with
    /// two segmentation descriptors), plus a splice_null and the splice_insert again with a pts_adjustment.
    static let examples = [
        "/DAvAAAAAAAA///wFAVIAACPf+/+c2nALv4AUsz1AAAAAAAKAAhDVUVJAAABNWLbowo=",
        "/DA0AAAAAAAA///wBQb+cr0AUAAeAhxDVUVJSAAAjn/PAAGlmbAICAAAAAAsoKGKNAIAmsnRfg==",
        "/DBIAAAAAAAA///wBQb+ek2ItgAyAhdDVUVJSAAAGH+fCAgAAAAALMvDRBEAAAIXQ1VFSUgAABl/nwgIAAAAACyk26AQAACZcuND",
    ]

    /// CRC-32/MPEG-2 (polynomial 0x04C11DB7, no reflection, initial value all ones).
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }

    static func withCRC(_ bytes: [UInt8]) -> [UInt8] {
        let crc = crc32(bytes)
        return bytes + [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
    }

    /// The sections to carry: the three examples, a splice_null, and the first example with pts_adjustment
    /// 900000 (ten seconds), its CRC recomputed.
    static func sections() throws -> [[UInt8]] {
        var sections = try examples.map { try #require(Data(base64Encoded: $0)).map { $0 } }
        // splice_null: table_id, section_length 17, protocol 0, pts_adjustment 0, cw_index, tier 0xFFF, command
        // length 0, type 0, descriptor_loop_length 0, CRC.
        sections.append(withCRC([0xFC, 0x30, 0x11, 0x00, 0x00, 0, 0, 0, 0, 0xFF, 0xFF, 0xF0, 0x00, 0x00, 0x00, 0x00]))
        var adjusted = Array(sections[0].dropLast(4))
        adjusted[4] &= 0xFE
        adjusted[5] = 0x00
        adjusted[6] = 0x0D
        adjusted[7] = 0xBB
        adjusted[8] = 0xA0
        sections.append(withCRC(adjusted))
        return sections
    }

    /// 188-byte packets carrying one section (pointer field 0, then 0xFF stuffing).
    static func packets(_ section: [UInt8], pid: UInt16, counter: inout UInt8) -> [UInt8] {
        var data = [0] + section
        var output: [UInt8] = []
        var first = true
        while !data.isEmpty {
            let chunk = data.prefix(184)
            data.removeFirst(chunk.count)
            output += [0x47, (first ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF), 0x10 | counter]
            output += chunk + Array(repeating: 0xFF, count: 184 - chunk.count)
            counter = (counter + 1) & 0x0F
            first = false
        }
        return output
    }

    /// The ffmpeg fixture with its PMT replaced by one that also lists stream type 0x86 on PID 0x1F0 (and a CUEI
    /// registration descriptor), and one SCTE-35 section after every 250 packets.
    static func makeFile(from fixture: URL, sections: [[UInt8]]) throws -> URL {
        let source = [UInt8](try Data(contentsOf: fixture))
        var pmtBody: [UInt8] = [0xE1, 0x00, 0xF0, 0x06, 0x05, 0x04] + Array("CUEI".utf8)
        pmtBody += [0x1B, 0xE1, 0x00, 0xF0, 0x00, 0x0F, 0xE1, 0x01, 0xF0, 0x00, 0x86, 0xE1, 0xF0, 0xF0, 0x00]
        let length = 5 + pmtBody.count + 4
        let pmt = withCRC([0x02, 0xB0 | UInt8(length >> 8), UInt8(length & 0xFF), 0x00, 0x01, 0xC1, 0, 0] + pmtBody)
        var pmtCounter: UInt8 = 0
        var cueCounter: UInt8 = 0
        var pending = sections[...]
        var output: [UInt8] = []
        var kept = 0
        var index = 0
        while index + 188 <= source.count {
            let packet = source[index..<(index + 188)]
            index += 188
            let pid = UInt16(packet[packet.startIndex + 1] & 0x1F) << 8 | UInt16(packet[packet.startIndex + 2])
            if pid == 0x1000 {
                if packet[packet.startIndex + 1] & 0x40 != 0 {
                    output += packets(pmt, pid: 0x1000, counter: &pmtCounter)
                }
                continue
            }
            output += packet
            kept += 1
            if kept % 250 == 0, let next = pending.popFirst() {
                output += packets(next, pid: 0x1F0, counter: &cueCounter)
            }
        }
        #expect(pending.isEmpty, "the fixture is long enough for every section")
        let file = TemporaryFolders.make(prefix: "scte35-").appendingPathComponent("scte35.ts")
        try Data(output).write(to: file)
        return file
    }

    static let threefiveScript = """
        import json, sys, threefive
        cues = []
        threefive.Stream(sys.argv[1]).decode(func=lambda cue: cues.append(cue.get()))
        print(json.dumps(cues))
        """

    @Test func cuesInATransportStream() async throws {
        let fixture = try await TSFixtures.url("h264_aac.ts")
        guard let tool = EndToEnd.product("tsinspect"), let python = EndToEnd.tool("python3") else { return }
        let sections = try Self.sections()
        let file = try Self.makeFile(from: fixture, sections: sections)

        let ours = try await EndToEnd.run(tool, ["--scte35", "--json", file.path])
        #expect(ours.status == 0, "\(ours.err)")
        let ourCues =
            (try JSONSerialization.jsonObject(with: ours.stdout) as? [String: Any])?["cues"] as? [[String: Any]]
        let theirs = try await EndToEnd.run(python, ["-c", Self.threefiveScript, file.path])
        #expect(theirs.status == 0, "threefive (python3 -m pip install threefive): \(theirs.err)")
        let theirCues = try JSONSerialization.jsonObject(with: theirs.stdout) as? [[String: Any]]
        guard let ourCues, let theirCues else {
            Issue.record("no cue list: ours \(ours.out), threefive \(theirs.out)")
            return
        }
        #expect(ourCues.count == sections.count)
        #expect(theirCues.count == sections.count, "threefive found \(theirCues.count) cues")
        let names = [
            "Splice Null": "splice_null", "Splice Insert": "splice_insert", "Time Signal": "time_signal",
        ]
        func number(_ value: Any?) -> Double? {
            // Strings first: threefive writes some ids as "0x..." hex text.
            if let text = value as? String {
                return text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16).map { Double($0) } : Double(text)
            }
            return (value as? NSNumber)?.doubleValue
        }
        for (index, (mine, peer)) in zip(ourCues, theirCues).enumerated() {
            let command = peer["command"] as? [String: Any] ?? [:]
            let info = peer["info_section"] as? [String: Any] ?? [:]
            #expect(mine["pid"] as? Int == 0x1F0)
            #expect(mine["command"] as? String == (command["name"] as? String).flatMap { names[$0] }, "cue \(index)")
            let adjustment = number(info["pts_adjustment"]) ?? 0
            #expect(
                abs((number(mine["ptsAdjustment"]) ?? -1) / 90_000 - adjustment) < 1e-6, "cue \(index) pts_adjustment")
            // threefive prints pts_time in seconds (6 decimals) before pts_adjustment; ours is adjusted ticks.
            if let time = number(command["pts_time"]) {
                let expected = (time + adjustment).truncatingRemainder(dividingBy: 95_443.717_688_888)
                let ticks = number(mine["ptsTime"]).map { $0 / 90_000 }
                #expect(ticks.map { abs($0 - expected) < 2e-6 } == true, "cue \(index): \(ticks ?? -1) vs \(expected)")
            } else {
                #expect(mine["ptsTime"] == nil || mine["ptsTime"] is NSNull, "cue \(index)")
            }
            if let eventID = command["splice_event_id"] {
                #expect(number(mine["eventId"]) == number(eventID), "cue \(index)")
                #expect(mine["outOfNetwork"] as? Bool == command["out_of_network_indicator"] as? Bool)
                #expect(mine["cancel"] as? Bool == command["splice_event_cancel_indicator"] as? Bool)
                #expect(mine["immediate"] as? Bool == command["splice_immediate_flag"] as? Bool)
                if let duration = number(command["break_duration"]) {
                    #expect(abs((number(mine["breakDurationSeconds"]) ?? -1) - duration) < 2e-6, "cue \(index)")
                    #expect(mine["autoReturn"] as? Bool == command["break_auto_return"] as? Bool)
                }
            }
            let ourDescriptors = mine["descriptors"] as? [[String: Any]] ?? []
            let theirDescriptors = peer["descriptors"] as? [[String: Any]] ?? []
            #expect(ourDescriptors.count == theirDescriptors.count, "cue \(index) descriptors")
            for (a, b) in zip(ourDescriptors, theirDescriptors) {
                switch a["type"] as? String {
                case "avail":
                    #expect(number(a["providerAvailId"]) == number(b["provider_avail_id"]), "cue \(index)")
                case "segmentation":
                    #expect(number(a["eventId"]) == number(b["segmentation_event_id"]), "cue \(index)")
                    #expect(number(a["typeId"]) == number(b["segmentation_type_id"]), "cue \(index)")
                    #expect(a["typeName"] as? String == b["segmentation_message"] as? String, "cue \(index)")
                    #expect(number(a["upidType"]) == number(b["segmentation_upid_type"]), "cue \(index)")
                    let upid = (a["upid"] as? String).flatMap { UInt64($0, radix: 16) }.map { Double($0) }
                    #expect(upid != nil && upid == number(b["segmentation_upid"]), "cue \(index) upid")
                    #expect(number(a["segmentNum"]) == number(b["segment_num"]), "cue \(index)")
                    #expect(number(a["segmentsExpected"]) == number(b["segments_expected"]), "cue \(index)")
                    if let duration = number(b["segmentation_duration"]) {
                        #expect(abs((number(a["durationSeconds"]) ?? -1) - duration) < 2e-6, "cue \(index)")
                    }
                default:
                    Issue.record("cue \(index): unexpected descriptor \(a)")
                }
            }
        }
        // The text form lists the same cues, one line each.
        let text = try await EndToEnd.run(tool, ["--scte35", file.path])
        #expect(text.out.split(separator: "\n").count == sections.count)
    }
}
