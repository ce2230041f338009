// The summary report of tsinspect, as text and as JSON.
import CLIToolkit
import MPEGTS

struct Report {
    let path: String
    let fileSize: UInt64
    let demuxer: Demuxer
    let analyzer: TSAnalyzer
    let garbage: GarbageRegions

    var durationSeconds: Double? { analyzer.durationTicks.map { Timestamp.seconds(ticks: $0) } }

    var bitrate: Int64? {
        guard let durationSeconds, durationSeconds > 0 else { return nil }
        return Int64((Double(fileSize) * 8 / durationSeconds).rounded())
    }

    var tableNames: [String] {
        analyzer.tables.keys.sorted().map(Self.tableName)
    }

    static func tableName(_ id: UInt8) -> String {
        switch id {
        case 0x00: "PAT"
        case 0x01: "CAT"
        case 0x02: "PMT"
        case 0x40, 0x41: "NIT"
        case 0x42, 0x46: "SDT"
        case 0x4E...0x6F: "EIT"
        case 0x70: "TDT"
        case 0x73: "TOT"
        case 0xFC: "SCTE-35"
        default: "table " + hexByte(id)
        }
    }

    /// What a PID carries, for PIDs that are not elementary streams.
    func role(of pid: UInt16) -> String {
        if pid == 0 { return "PAT" }
        if pid == 0x11 { return "SDT" }
        if pid == 0x1FFF { return "null" }
        if analyzer.pmtPIDs.values.contains(pid) { return "PMT" }
        return "unknown"
    }

    var errorCounts: [(String, Int64)] {
        let stats = demuxer.statistics
        return [
            ("syncLosses", Int64(stats.syncLosses)), ("skippedBytes", stats.skippedBytes),
            ("truncatedBytes", Int64(stats.truncatedBytes)), ("continuityErrors", Int64(stats.continuityErrors)),
            ("crcErrors", Int64(stats.crcErrors)), ("pesErrors", Int64(stats.pesErrors)),
            ("transportErrors", Int64(stats.transportErrors)),
            ("adaptationFieldErrors", Int64(stats.adaptationFieldErrors)),
        ]
    }

    func share(_ packets: Int64) -> Double {
        demuxer.statistics.packets == 0 ? 0 : Double(packets) / Double(demuxer.statistics.packets)
    }

    // MARK: Text

    var text: String {
        let stats = demuxer.statistics
        var lines: [String] = []
        func row(_ label: String, _ value: String) { lines.append(label.padding(15) + value) }
        row("File:", path)
        row("Size:", "\(fileSize) bytes")
        row("Packet size:", "\(demuxer.packetSize?.length ?? 188) bytes")
        row("Packets:", "\(stats.packets)")
        row("Duration:", durationSeconds.map { formatSeconds($0) + " s" } ?? "unknown")
        row("Bitrate:", bitrate.map { formatSeconds(Double($0) / 1_000_000) + " Mbit/s" } ?? "unknown")
        row("Tables:", tableNames.isEmpty ? "none" : tableNames.joined(separator: ", "))
        let parts = analyzer.parts
        if parts.count > 1 {
            // A file of several recordings joined end to end: each on its own timeline.
            row("Parts:", "\(parts.count) recordings joined end to end")
            for (number, part) in parts.enumerated() {
                let pids = part.pids.map(hexPID).joined(separator: ", ")
                lines.append(
                    "  part \(number + 1) at offset \(part.offset) (\(describe(part.cause))): program "
                        + "\(part.programNumber), PMT PID \(hexPID(part.pmtPID)), PIDs \(pids), "
                        + formatSeconds(part.duration) + " s from "
                        + formatSeconds(Timestamp.seconds(ticks: part.startTicks))
                        + " s")
            }
        }
        for number in analyzer.programs.keys.sorted() {
            guard let program = analyzer.programs[number] else { continue }
            lines.append("")
            var title = "Program \(number)"
            if let name = analyzer.serviceNames[number] { title += " \"\(name)\"" }
            let pmtPID = analyzer.pmtPIDs[number].map(hexPID) ?? "?"
            lines.append(title + " (PMT PID \(pmtPID), PCR PID \(hexPID(program.pcrPID)))")
            lines.append(
                "  " + "PID".padding(8) + "Type".padding(24) + "Codec".padding(11) + "Packets".padding(18)
                    + "First PTS".padding(24) + "Last PTS".padding(24) + "CC errors")
            for stream in program.streams {
                let pidStats = demuxer.statistics(pid: stream.pid)
                let summary = analyzer.stream(pid: stream.pid)
                let type = hexByte(stream.streamType.rawValue) + " " + stream.streamType.name
                let packets = "\(pidStats.packets) (" + formatPercent(share(pidStats.packets)) + ")"
                var codec = stream.codec.name
                let languages = stream.languages.filter { !$0.isEmpty }
                if !languages.isEmpty { codec += " [" + languages.joined(separator: ",") + "]" }
                lines.append(
                    "  " + hexPID(stream.pid).padding(8) + type.padding(24) + codec.padding(11) + packets.padding(18)
                        + formatPTS(summary?.firstPTS).padding(24) + formatPTS(summary?.lastPTS).padding(24)
                        + "\(pidStats.continuityErrors)")
                if let details = summary?.details { lines.append("          " + describe(details)) }
            }
        }
        let streamPIDs = Set(analyzer.streams.keys)
        let others = demuxer.pidStatistics.filter { !streamPIDs.contains($0.pid) }
        if !others.isEmpty {
            lines.append("")
            lines.append("Other PIDs")
            for pid in others {
                lines.append(
                    "  " + hexPID(pid.pid).padding(8) + role(of: pid.pid).padding(24)
                        + "\(pid.packets) (\(formatPercent(share(pid.packets))))".padding(18)
                        + "CC errors \(pid.continuityErrors)")
            }
        }
        lines.append("")
        if analyzer.scte35.isEmpty {
            lines.append("SCTE-35 cues:  none")
        } else {
            lines.append("SCTE-35 cues:  \(analyzer.scte35.count)")
            for record in analyzer.scte35 { lines.append("  " + describeSCTE35(record)) }
        }
        lines.append(
            "Sync losses:   \(stats.syncLosses) (\(stats.skippedBytes) bytes skipped, "
                + "\(stats.truncatedBytes) bytes in a truncated last packet)")
        for region in garbage.first {
            lines.append("  garbage at offset \(region.offset): \(region.length) bytes skipped")
        }
        lines.append(
            "Errors:        continuity \(stats.continuityErrors), CRC \(stats.crcErrors), PES \(stats.pesErrors), "
                + "transport \(stats.transportErrors)")
        for sample in stats.firstContinuityErrors.prefix(8) {
            lines.append("  continuity error on PID \(hexPID(sample.pid)) at offset \(sample.offset)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: JSON

    var json: JSON {
        let stats = demuxer.statistics
        let programs: [JSON] = analyzer.programs.keys.sorted().compactMap { number in
            guard let program = analyzer.programs[number] else { return nil }
            var members: [(String, JSON)] = [
                ("programNumber", .int(number)), ("pmtPid", .optional(analyzer.pmtPIDs[number])),
                ("pcrPid", .int(program.pcrPID)),
            ]
            members.append(("serviceName", analyzer.serviceNames[number].map { .string($0) } ?? .null))
            members.append(("streams", .array(program.streams.map { .int($0.pid) })))
            return .object(members)
        }
        let streams: [JSON] = analyzer.orderedStreams.map { summary in
            let pidStats = demuxer.statistics(pid: summary.pid)
            return .object([
                ("pid", .int(summary.pid)), ("programNumber", .int(summary.programNumber)),
                ("streamType", .int(summary.streamType.rawValue)), ("streamTypeName", .string(summary.streamType.name)),
                ("codec", .string(summary.codec.name)), ("kind", .string(summary.codec.kind.rawValue)),
                ("languages", .array(summary.languages.map { .string($0) })),
                ("packets", .int(pidStats.packets)), ("share", .double(share(pidStats.packets))),
                ("pesCount", .int(summary.pesCount)),
                ("firstPts", .optional(summary.firstPTS?.value)), ("lastPts", .optional(summary.lastPTS?.value)),
                ("durationSeconds", summary.durationTicks.map { .double(Timestamp.seconds(ticks: $0)) } ?? .null),
                ("continuityErrors", .int(pidStats.continuityErrors)),
                ("codecString", summary.details?.codecString.map { .string($0) } ?? .null),
                ("profile", .optional(summary.details?.profile)), ("level", .optional(summary.details?.level)),
                ("width", .optional(summary.details?.width)), ("height", .optional(summary.details?.height)),
                ("frameRate", summary.details?.frameRate.map { .double($0) } ?? .null),
                ("sampleRate", .optional(summary.details?.sampleRate)),
                ("channels", .optional(summary.details?.channels)),
            ])
        }
        let parts: [JSON] = analyzer.parts.map { part in
            .object([
                ("offset", .int(part.offset)), ("cause", .string(describe(part.cause))),
                ("programNumber", .int(part.programNumber)), ("pmtPid", .int(part.pmtPID)),
                ("pcrPid", .int(part.pcrPID)), ("streams", .array(part.pids.map { .int($0) })),
                ("startSeconds", .double(Timestamp.seconds(ticks: part.startTicks))),
                ("durationSeconds", .double(part.duration)),
            ])
        }
        let pids: [JSON] = demuxer.pidStatistics.map { pid in
            let isStream = analyzer.stream(pid: pid.pid) != nil
            return .object([
                ("pid", .int(pid.pid)), ("role", .string(isStream ? "stream" : role(of: pid.pid))),
                ("packets", .int(pid.packets)), ("share", .double(share(pid.packets))),
                ("continuityErrors", .int(pid.continuityErrors)),
            ])
        }
        return .object([
            ("schemaVersion", .int(schemaVersion)),
            ("file", .object([("path", .string(path)), ("size", .int(fileSize))])),
            ("packetSize", .int(demuxer.packetSize?.length ?? 188)),
            ("packetCount", .int(stats.packets)),
            ("durationSeconds", durationSeconds.map { .double($0) } ?? .null),
            ("durationTicks", .optional(analyzer.durationTicks)),
            ("bitrate", .optional(bitrate)),
            ("tables", .array(tableNames.map { .string($0) })),
            ("programs", .array(programs)),
            ("parts", .array(parts)),
            ("streams", .array(streams)),
            ("pids", .array(pids)),
            ("scte35", .array(analyzer.scte35.map(scte35JSON))),
            ("errors", .object(errorCounts.map { ($0.0, .int($0.1)) })),
            (
                "garbage",
                .array(garbage.first.map { .object([("offset", .int($0.offset)), ("length", .int($0.length))]) })
            ),
            (
                "firstContinuityErrors",
                .array(
                    stats.firstContinuityErrors.map { .object([("pid", .int($0.pid)), ("offset", .int($0.offset))]) })
            ),
        ])
    }
}

func formatPTS(_ pts: Timestamp?) -> String {
    guard let pts else { return "-" }
    return "\(pts.value) (\(formatSeconds(pts.seconds)) s)"
}

func formatPercent(_ fraction: Double) -> String {
    let tenths = Int64((fraction * 1000).rounded())
    return "\(tenths / 10).\(tenths % 10)%"
}

extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}

/// Where bytes that are not TS packets were skipped: from where a sync byte was missing (or the start of the
/// input) to where packets were found again (or the end). The first 16 are kept.
struct GarbageRegions {
    struct Region {
        var offset: Int64
        var length: Int64
    }
    static let kept = 16
    private(set) var first: [Region] = []
    private var lostAt: Int64?
    private var synchronizedBefore = false

    mutating func lost(at offset: Int64?) {
        if lostAt == nil { lostAt = offset }
    }

    mutating func synchronized(at offset: Int64) {
        if let lostAt {
            add(Region(offset: lostAt, length: offset - lostAt))
        } else if !synchronizedBefore, offset > 0 {
            add(Region(offset: 0, length: offset))
        }
        lostAt = nil
        synchronizedBefore = true
    }

    /// The end of the input: a region still open ends there.
    mutating func finish(at end: Int64) {
        if let lostAt, end > lostAt { add(Region(offset: lostAt, length: end - lostAt)) }
        lostAt = nil
    }

    private mutating func add(_ region: Region) {
        if region.length > 0, first.count < Self.kept { first.append(region) }
    }
}

/// One --pts line.
/// Writes ASCII into a scratch buffer the caller sized for the longest line.
struct LineWriter {
    let line: UnsafeMutableBufferPointer<UInt8>
    var count = 0

    @inline(__always)
    mutating func put(_ text: StaticString) {
        text.withUTF8Buffer { source in
            for byte in source {
                line[count] = byte
                count += 1
            }
        }
    }

    @inline(__always)
    mutating func put(decimal value: UInt64) {
        var digits = 1
        var rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        rest = value
        var index = count + digits
        repeat {
            index -= 1
            line[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        } while index > count
        count += digits
    }

    @inline(__always)
    mutating func put(signed value: Int64) {
        if value < 0 { put("-") }
        put(decimal: value.magnitude)
    }
}

/// One `--pts` line, formatted in a scratch area on the stack and appended to `out` in one copy (a line is at most
/// about 100 bytes: the numbers are bounded).
func writePTSLine(_ info: PESInfo, json: Bool, into out: inout OutputBuffer) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 192) { line in
        var writer = LineWriter(line: line)
        if json {
            writer.put("{\"pid\":")
            writer.put(decimal: UInt64(info.pid))
            writer.put(",\"pts\":")
            if let pts = info.pts { writer.put(decimal: pts.value) } else { writer.put("null") }
            writer.put(",\"dts\":")
            if let dts = info.dts { writer.put(decimal: dts.value) } else { writer.put("null") }
            writer.put(info.isKeyframe ? ",\"keyframe\":true,\"offset\":" : ",\"keyframe\":false,\"offset\":")
            writer.put(signed: info.offset)
            writer.put("}\n")
        } else {
            writer.put("pid=")
            writer.put(decimal: UInt64(info.pid))
            writer.put(" pts=")
            if let pts = info.pts { writer.put(decimal: pts.value) } else { writer.put("-") }
            writer.put(" dts=")
            if let dts = info.dts { writer.put(decimal: dts.value) } else { writer.put("-") }
            writer.put(info.isKeyframe ? " keyframe=1 offset=" : " keyframe=0 offset=")
            writer.put(signed: info.offset)
            writer.put("\n")
        }
        out.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: line[..<writer.count]))
    }
}

func writeKeyframes(_ analyzer: TSAnalyzer, json: Bool, into out: inout OutputBuffer) {
    if json {
        let document = JSON.object([
            ("schemaVersion", .int(schemaVersion)),
            ("keyframePid", .optional(analyzer.keyframePID)),
            (
                "keyframes",
                .array(
                    analyzer.keyframesFromStart.map {
                        .object([
                            ("offset", .int($0.offset)), ("pts", .int($0.pts.value)),
                            ("seconds", .double(Timestamp.seconds(ticks: $0.ticks))),
                        ])
                    })
            ),
        ])
        out.append(document.render() + "\n")
        return
    }
    for keyframe in analyzer.keyframesFromStart {
        out.append(
            "offset=\(keyframe.offset) pts=\(keyframe.pts.value) seconds=\(formatSeconds(Timestamp.seconds(ticks: keyframe.ticks)))\n"
        )
    }
}

/// Prints a probe's result; `nanoseconds` (with `--timing`) is the time the probe took inside the process.
func printProbe(_ probe: TSProbe, path: String, json: Bool, nanoseconds: UInt64? = nil) {
    if json {
        var members: [(String, JSON)] = [
            ("schemaVersion", .int(schemaVersion)),
            ("file", .object([("path", .string(path)), ("size", .int(probe.fileSize))])),
            ("packetSize", .int(probe.packetSize)),
            ("firstPts", .optional(probe.firstPTS?.value)), ("lastPts", .optional(probe.lastPTS?.value)),
            ("durationSeconds", probe.duration.map { .double($0) } ?? .null),
            ("bytesRead", .int(probe.bytesRead)),
        ]
        if let nanoseconds { members.append(("probeSeconds", .double(Double(nanoseconds) / 1e9))) }
        Output.write(JSON.object(members).render() + "\n")
    } else {
        let duration = probe.duration.map { formatSeconds($0) + " s" } ?? "unknown"
        let time = nanoseconds.map { "Probe time:    " + formatSeconds(Double($0) / 1e6) + " ms\n" } ?? ""
        let text: String =
            "File:          \(path)\nSize:          \(probe.fileSize) bytes\n"
            + "Duration:      \(duration)\n"
            + "First PTS:     \(formatPTS(probe.firstPTS))\nLast PTS:      \(formatPTS(probe.lastPTS))\n"
            + "Bytes read:    \(probe.bytesRead)\n"
            + time
        Output.write(text)
    }
}

/// "avc1.64000d, 320x240, 25 fps" / "mp4a.40.2, 48000 Hz, 2 channels".
func describe(_ details: CodecDetails) -> String {
    var parts: [String] = []
    if let codec = details.codecString { parts.append(codec) }
    if let width = details.width, let height = details.height { parts.append("\(width)x\(height)") }
    if let rate = details.frameRate {
        parts.append((rate == rate.rounded() ? "\(Int(rate))" : formatSeconds(rate)) + " fps")
    }
    if let rate = details.sampleRate { parts.append("\(rate) Hz") }
    if let channels = details.channels { parts.append("\(channels) channels") }
    return parts.joined(separator: ", ")
}

/// One `--pts --frames` line for an audio frame: the PES line's fields (its PTS and DTS moved on by the frames
/// before it) plus the frame's index in its PES and its size.
func writeFrameLine(_ frame: AudioFrameSplitter.Frame, pid: UInt16, json: Bool, into out: inout OutputBuffer) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 192) { line in
        var writer = LineWriter(line: line)
        if json {
            writer.put("{\"pid\":")
            writer.put(decimal: UInt64(pid))
            writer.put(",\"pts\":")
            if let pts = frame.pts { writer.put(decimal: pts.value) } else { writer.put("null") }
            writer.put(",\"dts\":")
            if let dts = frame.dts { writer.put(decimal: dts.value) } else { writer.put("null") }
            writer.put(",\"keyframe\":true,\"offset\":")
            writer.put(signed: frame.offset)
            writer.put(",\"frame\":")
            writer.put(decimal: UInt64(frame.index))
            writer.put(",\"size\":")
            writer.put(decimal: UInt64(frame.size))
            writer.put("}\n")
        } else {
            writer.put("pid=")
            writer.put(decimal: UInt64(pid))
            writer.put(" pts=")
            if let pts = frame.pts { writer.put(decimal: pts.value) } else { writer.put("-") }
            writer.put(" dts=")
            if let dts = frame.dts { writer.put(decimal: dts.value) } else { writer.put("-") }
            writer.put(" keyframe=1 offset=")
            writer.put(signed: frame.offset)
            writer.put(" frame=")
            writer.put(decimal: UInt64(frame.index))
            writer.put(" size=")
            writer.put(decimal: UInt64(frame.size))
            writer.put("\n")
        }
        out.bytes.append(contentsOf: UnsafeBufferPointer(rebasing: line[..<writer.count]))
    }
}

/// How a part began, in the report's words.
func describe(_ cause: RecordingPart.Cause) -> String {
    switch cause {
    case .start: "start"
    case .timestampBreak: "time stamps break"
    case .streamsChanged: "streams change"
    }
}
