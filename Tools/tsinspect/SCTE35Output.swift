// SCTE-35 output of tsinspect.
import CLIToolkit
import MPEGTS

func describeSCTE35(_ record: SectionRecord) -> String {
    let prefix = "PID \(hexPID(record.pid)) offset \(record.offset): "
    let section: SpliceInfoSection
    do {
        section = try SpliceInfoSection(bytes: record.section.bytes)
    } catch {
        return prefix + "undecodable splice_info_section (\(describe(error)))"
    }
    var parts = [section.command.name]
    switch section.command {
    case .insert(let insert):
        parts.append("event \(insert.eventID)")
        if insert.isCancel {
            parts.append("cancel")
        } else {
            parts.append(insert.isOutOfNetwork ? "out" : "in")
            if insert.isImmediate { parts.append("immediate") }
            if let time = insert.spliceTime { parts.append("at " + formatPTS(section.adjusted(time))) }
            if let duration = insert.breakDuration {
                parts.append(
                    "duration \(formatSeconds(duration.seconds)) s" + (duration.autoReturn ? " auto-return" : ""))
            }
        }
    case .timeSignal(let time):
        parts.append(time.map { "at " + formatPTS(section.adjusted($0)) } ?? "immediate")
    case .schedule(let events):
        parts.append("\(events.count) event(s)")
    case .privateCommand(let identifier, let bytes):
        parts.append("identifier 0x\(String(identifier, radix: 16)) \(bytes.count) bytes")
    case .null, .bandwidthReservation, .unknown, .encrypted:
        break
    }
    for descriptor in section.descriptors {
        switch descriptor {
        case .segmentation(let segmentation):
            var text =
                "segmentation \(hexByte(segmentation.typeID)) \(segmentation.typeName) event \(segmentation.eventID)"
            if let seconds = segmentation.durationSeconds { text += " duration \(formatSeconds(seconds)) s" }
            if !segmentation.upid.isEmpty {
                text += " upid \(hexByte(segmentation.upidType)):\(hexString(segmentation.upid))"
            }
            parts.append(text)
        case .avail(let id): parts.append("avail \(id)")
        case .dtmf(_, let characters): parts.append("dtmf \(characters)")
        case .time(let seconds, _, _): parts.append("time TAI \(seconds)")
        case .audio: parts.append("audio descriptor")
        case .unknown(let tag, _, _): parts.append("descriptor \(hexByte(tag))")
        }
    }
    return prefix + parts.joined(separator: "; ")
}

/// An MPEG-TS error in words: what is wrong and where, without the error code's identifier.
func describe(_ error: MPEGTSError) -> String {
    let words: String
    switch error.code {
    case .truncated: words = "truncated"
    case .noSync: words = "no sync byte"
    case .syncLost: words = "sync lost"
    case .invalidLength: words = "invalid length"
    case .invalidMarker: words = "invalid marker bits"
    case .crcMismatch: words = "CRC mismatch"
    case .continuity: words = "continuity error"
    case .unsupported: words = "unsupported"
    case .scrambled: words = "scrambled"
    default: words = "invalid value"
    }
    var text = error.detail.isEmpty ? words : words + ": " + error.detail
    if let offset = error.offset { text += " at offset \(offset)" }
    if let pid = error.pid { text += " on PID \(hexPID(pid))" }
    return text
}

func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

func scte35JSON(_ record: SectionRecord) -> JSON {
    var members: [(String, JSON)] = [("pid", .int(record.pid)), ("offset", .int(record.offset))]
    guard let section = try? SpliceInfoSection(bytes: record.section.bytes) else {
        members.append(("error", .string("undecodable")))
        members.append(("hex", .string(hexString(record.section.bytes))))
        return .object(members)
    }
    members.append(("command", .string(section.command.name)))
    members.append(("ptsAdjustment", .int(section.ptsAdjustment)))
    switch section.command {
    case .insert(let insert):
        members += [
            ("eventId", .int(insert.eventID)), ("cancel", .bool(insert.isCancel)),
            ("outOfNetwork", .bool(insert.isOutOfNetwork)), ("immediate", .bool(insert.isImmediate)),
            ("ptsTime", .optional(insert.spliceTime.map { section.adjusted($0).value })),
            ("breakDurationSeconds", insert.breakDuration.map { .double($0.seconds) } ?? .null),
            ("autoReturn", insert.breakDuration.map { .bool($0.autoReturn) } ?? .null),
        ]
    case .timeSignal(let time):
        members.append(("ptsTime", .optional(time.map { section.adjusted($0).value })))
    default:
        break
    }
    let descriptors: [JSON] = section.descriptors.map { descriptor in
        switch descriptor {
        case .segmentation(let segmentation):
            return .object([
                ("type", .string("segmentation")), ("eventId", .int(segmentation.eventID)),
                ("cancel", .bool(segmentation.isCancel)), ("typeId", .int(segmentation.typeID)),
                ("typeName", .string(segmentation.typeName)),
                ("durationSeconds", segmentation.durationSeconds.map { .double($0) } ?? .null),
                ("upidType", .int(segmentation.upidType)), ("upid", .string(hexString(segmentation.upid))),
                ("segmentNum", .int(segmentation.segmentNumber)),
                ("segmentsExpected", .int(segmentation.segmentsExpected)),
            ])
        case .avail(let id): return .object([("type", .string("avail")), ("providerAvailId", .int(id))])
        case .dtmf(let preroll, let characters):
            return .object([("type", .string("dtmf")), ("preroll", .int(preroll)), ("characters", .string(characters))])
        case .time(let seconds, let nanoseconds, let offset):
            return .object([
                ("type", .string("time")), ("taiSeconds", .int(seconds)), ("taiNanoseconds", .int(nanoseconds)),
                ("utcOffset", .int(offset)),
            ])
        case .audio: return .object([("type", .string("audio"))])
        case .unknown(let tag, _, _): return .object([("type", .string("unknown")), ("tag", .int(tag))])
        }
    }
    members.append(("descriptors", .array(descriptors)))
    return .object(members)
}

func writeSCTE35(_ analyzer: TSAnalyzer, json: Bool, into out: inout OutputBuffer) {
    if json {
        let document = JSON.object([
            ("schemaVersion", .int(schemaVersion)), ("cues", .array(analyzer.scte35.map(scte35JSON))),
        ])
        out.append(document.render() + "\n")
    } else {
        for record in analyzer.scte35 { out.append(describeSCTE35(record) + "\n") }
    }
}
