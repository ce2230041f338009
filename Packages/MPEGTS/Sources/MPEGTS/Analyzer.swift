/// What one elementary stream held, gathered from the demuxer's events.
public struct StreamSummary: Hashable, Sendable {
    public var pid: UInt16
    public var programNumber: UInt16
    public var streamType: StreamType
    public var codec: Codec
    public var languages: [String]
    /// PES packets started on this PID.
    public var pesCount: Int64 = 0
    /// PES packets that start a keyframe (for audio: every PES).
    public var keyframeCount: Int64 = 0
    /// The earliest PTS (wrap-aware).
    public var firstPTS: Timestamp?
    /// The latest PTS (wrap-aware).
    public var lastPTS: Timestamp?
    /// Ticks from the file's reference PTS (the first PTS of any stream) to ``firstPTS`` and ``lastPTS``.
    public var startTicks: Int64?
    public var endTicks: Int64?
    /// The last step between consecutive decode times, used as the duration of the last PES unless
    /// ``lastPESTicks`` is known.
    public var lastStepTicks: Int64?
    /// The offset of the TS packet that starts the last PES seen on this stream.
    public var lastPESOffset: Int64?
    /// The last PES's own duration, when its frames were counted (see
    /// ``TSAnalyzer/measureLastAudioPES(fileSize:limit:read:)``): audio PES often carry several frames and the
    /// last one fewer than the rest, so the step before it overstates where the stream ends.
    public var lastPESTicks: Int64?
    /// What the stream's own headers say (profile, level, size, CODECS string ...), when read.
    public var details: CodecDetails?

    var lastDecode: Timestamp?
    var lastDecodeTicks: Int64 = 0
    /// Time stamp breaks seen on this stream (``TimelineBreak``).
    var breaks = 0

    public init(pid: UInt16, programNumber: UInt16, stream: ElementaryStream) {
        self.pid = pid
        self.programNumber = programNumber
        self.streamType = stream.streamType
        self.codec = stream.codec
        self.languages = stream.languages
    }

    /// ``endTicks`` − ``startTicks`` plus the last PES's duration: the time the stream covers.
    public var durationTicks: Int64? {
        guard let startTicks, let endTicks else { return nil }
        return endTicks - startTicks + lastPESDuration
    }

    /// The duration given to the last PES: ``lastPESTicks`` when measured, else ``lastStepTicks``.
    public var lastPESDuration: Int64 { lastPESTicks ?? lastStepTicks ?? 0 }
}

/// A keyframe: the offset of the TS packet that starts its PES, and its PTS.
public struct Keyframe: Hashable, Sendable {
    public var offset: Int64
    public var pts: Timestamp
    /// Ticks from the index's reference PTS (unwrapped; a time stamp reset is closed up, so ticks keep growing
    /// where ``pts`` jumps: compare the two to find the reset).
    public var ticks: Int64

    public init(offset: Int64, pts: Timestamp, ticks: Int64) {
        self.offset = offset
        self.pts = pts
        self.ticks = ticks
    }
}

/// A PSI section seen on a PID other than PAT/PMT (SCTE-35 cues, SDT ...).
public struct SectionRecord: Hashable, Sendable {
    public var pid: UInt16
    public var offset: Int64
    public var section: PSISection
}

/// Gathers the demuxer's events into per-stream summaries, the keyframe list of the main stream, the tables
/// seen and the SCTE-35 sections.
public struct TSAnalyzer: Sendable {
    /// Keep a keyframe list (of the first video stream, or the first audio stream when there is no video).
    public var recordKeyframes: Bool
    /// Keep every SCTE-35 section (table 0xFC).
    public var recordSCTE35: Bool

    /// The latest PMT of each program, by program number.
    public private(set) var programs: [UInt16: ProgramMapTable] = [:]
    /// The PMT PID of each program.
    public private(set) var pmtPIDs: [UInt16: UInt16] = [:]
    public private(set) var programAssociation: ProgramAssociationTable?
    /// Streams in the order they were first listed.
    public private(set) var orderedStreams: [StreamSummary] = []
    /// Index into `orderedStreams` by PID, -1 for none.
    private var indexByPID: [Int32] = Array(repeating: -1, count: 8192)

    /// Streams by PID.
    public var streams: [UInt16: StreamSummary] {
        Dictionary(orderedStreams.map { ($0.pid, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The summary of one PID's stream.
    public func stream(pid: UInt16) -> StreamSummary? {
        let index = Int(indexByPID[Int(pid & 0x1FFF)])
        return index >= 0 ? orderedStreams[index] : nil
    }
    /// The first PTS seen in the input, the zero of every `ticks` value.
    public private(set) var reference: Timestamp?
    public internal(set) var keyframePID: UInt16?
    public private(set) var keyframes: [Keyframe] = []
    /// table_id values seen, with how many distinct sections of each (PAT/PMT count changes only).
    public private(set) var tables: [UInt8: Int] = [:]
    public private(set) var scte35: [SectionRecord] = []
    /// Service names from the SDT, by program (service) number.
    public private(set) var serviceNames: [UInt16: String] = [:]
    /// The first errors the demuxer reported (at most 64).
    public private(set) var errors: [MPEGTSError] = []
    public private(set) var errorCount = 0

    /// The program whose first video (else audio) stream the keyframes are recorded for; nil: the first program
    /// map table's. Where a later PAT no longer lists it (a recording joined to another), the new PAT's first program
    /// with video is followed (see ``parts``).
    public var keyframeProgram: UInt16? {
        get { tracker.requested }
        set { tracker.requested = newValue }
    }
    var tracker = PartTracker()

    public init(recordKeyframes: Bool = true, recordSCTE35: Bool = true) {
        self.recordKeyframes = recordKeyframes
        self.recordSCTE35 = recordSCTE35
    }

    /// The span from the earliest PTS to the latest PTS plus that stream's last PES duration, over audio and
    /// video streams (all streams when there is neither).
    public var durationTicks: Int64? {
        let timed = orderedStreams.filter { $0.codec.kind == .audio || $0.codec.kind == .video }
        let candidates = timed.isEmpty ? orderedStreams : timed
        let starts = candidates.compactMap(\.startTicks)
        let ends = candidates.compactMap { stream in stream.endTicks.map { $0 + stream.lastPESDuration } }
        guard let start = starts.min(), let end = ends.max() else { return nil }
        return end - start
    }

    /// The earliest PTS over audio and video streams.
    public var firstPTS: Timestamp? {
        guard let reference, let startTicks else { return nil }
        return reference.advanced(by: startTicks)
    }

    /// Ticks from ``reference`` to the earliest PTS of the audio and video streams (all streams when there is
    /// neither).
    public var startTicks: Int64? {
        let timed = orderedStreams.filter { $0.codec.kind == .audio || $0.codec.kind == .video }
        return (timed.isEmpty ? orderedStreams : timed).compactMap(\.startTicks).min()
    }

    /// The keyframes with `ticks` counted from ``firstPTS`` (the presentation start).
    public var keyframesFromStart: [Keyframe] {
        let start = startTicks ?? 0
        return keyframes.map { Keyframe(offset: $0.offset, pts: $0.pts, ticks: $0.ticks - start) }
    }

    /// Feeds one demuxer event.
    public mutating func consume(_ event: DemuxEvent) {
        switch event {
        case .programAssociation(let table, let offset):
            programAssociation = table
            tracker.note(table, offset: offset)
            tables[0x00, default: 0] += 1
            for entry in table.programs { pmtPIDs[entry.programNumber] = entry.pmtPID }
        case .programMap(let table, let pid, let offset):
            tables[0x02, default: 0] += 1
            programs[table.programNumber] = table
            pmtPIDs[table.programNumber] = pid
            for stream in table.streams {
                let index = Int(indexByPID[Int(stream.pid & 0x1FFF)])
                if index < 0 {
                    indexByPID[Int(stream.pid & 0x1FFF)] = Int32(orderedStreams.count)
                    orderedStreams.append(
                        StreamSummary(pid: stream.pid, programNumber: table.programNumber, stream: stream))
                } else {
                    orderedStreams[index].streamType = stream.streamType
                    orderedStreams[index].codec = stream.codec
                    orderedStreams[index].languages = stream.languages
                }
            }
            if keyframePID == nil && recordKeyframes && (keyframeProgram ?? table.programNumber) == table.programNumber
            {
                keyframePID =
                    table.streams.first { $0.codec.kind == .video }?.pid
                    ?? table.streams.first { $0.codec.kind == .audio }?.pid
            }
            noteParts(table, pmtPID: pid, offset: offset)
        case .pes(let info):
            consume(pes: info)
        case .section(let section, let pid, let offset):
            tables[section.tableID, default: 0] += 1
            if section.tableID == 0xFC && recordSCTE35 {
                scte35.append(SectionRecord(pid: pid, offset: offset, section: section))
            } else if section.tableID == 0x42 {
                for (number, name) in ServiceDescriptionTable.serviceNames(section) { serviceNames[number] = name }
            }
        case .error(let error):
            errorCount += 1
            if errors.count < 64 { errors.append(error) }
        case .streamIdentified(let codec, let pid):
            let index = Int(indexByPID[Int(pid & 0x1FFF)])
            if index >= 0 { orderedStreams[index].codec = codec }
            if keyframePID == nil && recordKeyframes && codec.kind == .audio && index >= 0
                && (keyframeProgram ?? orderedStreams[index].programNumber) == orderedStreams[index].programNumber
            {
                keyframePID = pid
            }
        case .codecDetails(let details, let pid):
            let index = Int(indexByPID[Int(pid & 0x1FFF)])
            if index >= 0 { orderedStreams[index].details = details }
        case .synchronized, .pesPacket, .pcr:
            break
        }
    }

    /// Counts the frames of each audio stream's last PES (ADTS AAC, AC-3, E-AC-3) by reading it again, so that
    /// the stream ends where that PES ends instead of one PES step after its start (see
    /// ``StreamSummary/lastPESTicks``). `read(offset, length)` returns bytes of the input, which is `fileSize`
    /// bytes long. Streams whose last PES starts more than `limit` bytes before the end, or whose codec has no
    /// frame lengths, keep the step.
    public mutating func measureLastAudioPES<Failure: Error>(
        fileSize: UInt64, limit: Int = 4 << 20, read: (_ offset: UInt64, _ length: Int) throws(Failure) -> [UInt8]
    ) throws(Failure) {
        guard let programAssociation else { return }
        let maps = Array(programs.values)
        for index in orderedStreams.indices {
            let stream = orderedStreams[index]
            guard stream.codec == .aac || stream.codec == .ac3 || stream.codec == .eac3,
                let offset = stream.lastPESOffset, offset >= 0, UInt64(offset) < fileSize,
                fileSize - UInt64(offset) <= UInt64(max(limit, 0))
            else { continue }
            let bytes = try read(UInt64(offset), Int(fileSize - UInt64(offset)))
            var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: false, reassemblePES: true))
            demuxer.prime(programAssociation: programAssociation, programMaps: maps)
            var payload: [UInt8]?
            demuxer.feed(bytes) { event in
                if payload == nil, case .pesPacket(let pes) = event, pes.info.pid == stream.pid, pes.info.offset == 0 {
                    payload = pes.payload
                }
            }
            demuxer.finish { event in
                if payload == nil, case .pesPacket(let pes) = event, pes.info.pid == stream.pid, pes.info.offset == 0 {
                    payload = pes.payload
                }
            }
            if let payload, let ticks = AudioFrames.ticks(codec: stream.codec, payload: payload) {
                orderedStreams[index].lastPESTicks = ticks
            }
        }
    }

    /// Feeds one PES start (the same as `consume(.pes(info))`, without building the event).
    public mutating func consume(pes info: PESInfo) {
        let index = Int(indexByPID[Int(info.pid & 0x1FFF)])
        guard index >= 0 else { return }
        if reference == nil, let first = info.dts ?? info.pts { reference = first }
        guard var reference else { return }
        var base: Int64 = 0
        if !tracker.joining.isEmpty, tracker.joining.contains(info.pid), let pts = info.pts {
            // The first time stamp of a stream that joined at a cut: placed after the part before, as far from the
            // part's start as it lies from the part's first PTS (its first picture: where the part begins).
            tracker.joining.remove(info.pid)
            if tracker.partReference == nil { tracker.partReference = pts }
            reference = tracker.partReference ?? pts
            base = tracker.partBase
        }
        let isFollowed = info.pid == (recordKeyframes ? keyframePID : tracker.mainPID) && !tracker.parts.isEmpty
        let endBefore = isFollowed ? partEnd() : 0
        let breaksBefore = orderedStreams[index].breaks
        guard let ticks = orderedStreams[index].record(info, reference: reference, base: base) else { return }
        if isFollowed {
            if orderedStreams[index].breaks != breaksBefore && tracker.followedPES > 0 {
                cutPart(at: info.offset, cause: .timestampBreak, end: endBefore, table: nil, pmtPID: nil)
            }
            tracker.followedPES += 1
        }
        if keyframes.isEmpty, recordKeyframes, let current = keyframePID, current != info.pid, info.isKeyframe {
            // A PID the PMT lists that never carries a packet is no keyframe stream: the first stream of the same
            // program and kind (a video, or audio where there is no video) that shows a keyframe takes its place.
            let currentIndex = Int(indexByPID[Int(current & 0x1FFF)])
            let stream = orderedStreams[index]
            if currentIndex < 0
                || (orderedStreams[currentIndex].pesCount == 0
                    && orderedStreams[currentIndex].programNumber == stream.programNumber
                    && orderedStreams[currentIndex].codec.kind == stream.codec.kind)
            {
                keyframePID = info.pid
            }
        }
        if info.isKeyframe && info.pid == keyframePID, let pts = info.pts {
            keyframes.append(Keyframe(offset: info.offset, pts: pts, ticks: ticks))
        }
    }
}

extension StreamSummary {
    /// How far decode time stamps may go back or jump forward from one PES to the next before the step counts as a
    /// time stamp reset rather than a step of the stream: ``TimelineBreak``'s.
    public static let resetBackTicks: Int64 = TimelineBreak.backTicks
    public static let resetForwardTicks: Int64 = TimelineBreak.forwardTicks

    /// Whether a step between consecutive decode time stamps of one stream is a reset (``TimelineBreak/isBreak(_:)``).
    public static func isReset(_ step: Int64) -> Bool {
        TimelineBreak.isBreak(step)
    }

    /// Counts a PES and extends the PTS range; returns the PES's PTS in ticks from `reference` (plus `base` for the
    /// stream's first PES).
    mutating func record(_ info: PESInfo, reference: Timestamp, base: Int64 = 0) -> Int64? {
        pesCount += 1
        if info.isKeyframe { keyframeCount += 1 }
        lastPESOffset = info.offset
        lastPESTicks = nil
        guard let pts = info.pts else { return nil }
        let decode = info.dts ?? pts
        let decodeTicks: Int64
        if let last = lastDecode {
            let step = last.distance(to: decode)
            if Self.isReset(step) {
                // A time stamp reset (a concatenation, a restarted encoder): the timeline runs on one step later.
                decodeTicks = lastDecodeTicks + (lastStepTicks ?? 1)
                breaks += 1
            } else {
                decodeTicks = lastDecodeTicks + step
                if step > 0 { lastStepTicks = step }
            }
        } else {
            decodeTicks = base + reference.distance(to: decode)
        }
        lastDecode = decode
        lastDecodeTicks = decodeTicks
        let ptsTicks = decodeTicks + decode.distance(to: pts)
        if startTicks.map({ ptsTicks < $0 }) ?? true {
            startTicks = ptsTicks
            firstPTS = pts
        }
        if endTicks.map({ ptsTicks > $0 }) ?? true {
            endTicks = ptsTicks
            lastPTS = pts
        }
        return ptsTicks
    }
}

/// The service description table (table 0x42): service names.
public enum ServiceDescriptionTable {
    /// (service_id, service name) pairs from an SDT section's service descriptors (tag 0x48).
    public static func serviceNames(_ section: PSISection) -> [(UInt16, String)] {
        guard section.tableID == 0x42 else { return [] }
        let body = Array(section.body)
        var result: [(UInt16, String)] = []
        var index = 3  // original_network_id, reserved
        while index + 5 <= body.count {
            let serviceID = UInt16(body[index]) << 8 | UInt16(body[index + 1])
            let loopLength = Int(body[index + 3] & 0x0F) << 8 | Int(body[index + 4])
            var position = index + 5
            let end = min(body.count, position + loopLength)
            while position + 2 <= end {
                let tag = body[position]
                let length = Int(body[position + 1])
                let dataEnd = position + 2 + length
                guard dataEnd <= end else { break }
                if tag == 0x48, length >= 2 {
                    let providerLength = Int(body[position + 3])
                    let nameLengthIndex = position + 4 + providerLength
                    if nameLengthIndex < dataEnd {
                        let nameLength = Int(body[nameLengthIndex])
                        let nameEnd = min(dataEnd, nameLengthIndex + 1 + nameLength)
                        var nameBytes = Array(body[(nameLengthIndex + 1)..<nameEnd])
                        // A leading byte below 0x20 selects a character table; names here are read as UTF-8.
                        if let first = nameBytes.first, first < 0x20 { nameBytes.removeFirst() }
                        result.append((serviceID, String(decoding: nameBytes, as: UTF8.self)))
                    }
                }
                position = dataEnd
            }
            index = end
        }
        return result
    }
}
