/// One recording of a file that is several joined end to end (`cat a.ts b.ts`, a DVR that kept recording across
/// programmes, a file cut and rejoined): where it begins, why the previous one ended there, the program it plays and
/// where it lies on the index's timeline.
///
/// The index cuts the file into parts where the followed program's time stamps break (``TimelineBreak``) or where
/// its streams change (a new PAT without the program, so that the recording goes on in the new PAT's first program
/// with video; or a PMT with other PIDs or stream types; a PMT whose new version changes neither is no cut). The
/// parts tile the index's timeline: each begins where the one before it ended.
public struct RecordingPart: Hashable, Sendable {
    /// Why a part begins.
    public enum Cause: UInt8, Hashable, Sendable {
        /// The file's first part.
        case start = 0
        /// The followed stream's decode time stamps broke (``TimelineBreak``); the program and streams stay.
        case timestampBreak = 1
        /// The program's streams changed: a new PAT and PMT (another program number, new PIDs) or a PMT that lists
        /// other PIDs or stream types.
        case streamsChanged = 2
    }

    /// One elementary stream of the part's program.
    public struct Stream: Hashable, Sendable {
        public var pid: UInt16
        public var streamType: StreamType

        public init(pid: UInt16, streamType: StreamType) {
            self.pid = pid
            self.streamType = streamType
        }
    }

    /// The byte offset where the part begins: 0 for the first; the packet of the table that changed the streams
    /// (``Cause/streamsChanged``), or of the PES whose time stamp broke (``Cause/timestampBreak``).
    public var offset: Int64
    public var cause: Cause
    public var programNumber: UInt16
    public var pmtPID: UInt16
    public var pcrPID: UInt16
    public var streams: [Stream]
    /// The stream the part's keyframes are those of (its first video, else first audio stream).
    public var keyframePID: UInt16?
    /// Where the part begins and ends on the timeline, in 90 kHz ticks (in a ``TSIndex``: from its start).
    public var startTicks: Int64
    public var endTicks: Int64

    public init(
        offset: Int64, cause: Cause, programNumber: UInt16, pmtPID: UInt16, pcrPID: UInt16, streams: [Stream],
        keyframePID: UInt16?, startTicks: Int64, endTicks: Int64
    ) {
        self.offset = offset
        self.cause = cause
        self.programNumber = programNumber
        self.pmtPID = pmtPID
        self.pcrPID = pcrPID
        self.streams = streams
        self.keyframePID = keyframePID
        self.startTicks = startTicks
        self.endTicks = endTicks
    }

    /// The part's duration in ticks.
    public var durationTicks: Int64 { max(0, endTicks - startTicks) }

    /// The part's duration in seconds.
    public var duration: Double { Timestamp.seconds(ticks: durationTicks) }

    /// The PIDs of the part's streams.
    public var pids: [UInt16] { streams.map(\.pid) }
}

/// The one rule for where a timeline breaks, for a file's streams and for a folder of files: a stream's decode time
/// stamp that goes back by more than 1 ms, or forward by more than 30 s, from where that stream was to continue (its
/// previous decode time stamp in a file; in a folder, the end of the same stream in the previous file).
///
/// Smaller steps forward are gaps in the signal that the timeline keeps (sparse streams, slide shows).
public enum TimelineBreak {
    /// How far a time stamp may go back (1 ms) before it is a break.
    public static let backTicks: Int64 = 90
    /// How far it may jump forward (30 s) before it is a break.
    public static let forwardTicks: Int64 = 30 * 90_000

    /// Whether a step, in ticks from where the timeline was to continue, breaks it.
    public static func isBreak(_ step: Int64) -> Bool {
        step < -backTicks || step > forwardTicks
    }
}

/// Follows the played program through a file's tables and cuts it into ``RecordingPart``s (used by ``TSAnalyzer``).
struct PartTracker: Sendable {
    /// The program followed; nil until the first PMT (or the requested one) is seen.
    var followed: UInt16?
    /// The program the caller asked for; followed whenever a PAT lists it.
    var requested: UInt16?
    /// The PAT seen last does not list the followed program: its first PMT with video (or, with one program, its
    /// PMT) becomes the followed program.
    var awaitingProgram = false
    var latestPAT: ProgramAssociationTable?
    /// The offset of the PAT that stopped listing the followed program: the part that follows begins there.
    var awaitingSince: Int64 = 0
    var parts: [RecordingPart] = []
    /// PIDs that joined at the last ``RecordingPart/Cause/streamsChanged`` cut and show no PES yet: their first time
    /// stamp is placed on the timeline after the part before (see ``partBase``).
    var joining: Set<UInt16> = []
    /// Where the current part begins on the timeline, and the first PTS seen of its new PIDs (placed there).
    var partBase: Int64 = 0
    var partReference: Timestamp?
    /// PES of the followed stream seen in the current part.
    var followedPES = 0
    /// The current part's main stream (its first video, else first audio stream), whose breaks cut parts.
    var mainPID: UInt16?

    /// The first video, else the first audio stream of a PMT.
    static func mainPID(of table: ProgramMapTable) -> UInt16? {
        table.streams.first { $0.codec.kind == .video }?.pid ?? table.streams.first { $0.codec.kind == .audio }?.pid
    }

    /// The PMT of a program seen: returns whether it starts a part (the caller then closes the part before at the
    /// end of the timeline so far and starts this one there).
    mutating func shouldCut(for table: ProgramMapTable) -> Bool {
        if followed == nil {
            followed = requested ?? table.programNumber
        }
        if awaitingProgram {
            let programs = latestPAT?.programs ?? []
            let hasVideo = table.streams.contains { $0.codec.kind == .video }
            let wanted =
                if let requested, programs.contains(where: { $0.programNumber == requested }) {
                    table.programNumber == requested
                } else {
                    programs.contains(where: { $0.programNumber == table.programNumber })
                        && (hasVideo || programs.count == 1)
                }
            guard wanted else { return false }
            awaitingProgram = false
            followed = table.programNumber
            return !parts.isEmpty
        }
        guard table.programNumber == followed, let current = parts.last else { return false }
        let streams = table.streams.map { RecordingPart.Stream(pid: $0.pid, streamType: $0.streamType) }
        return streams != current.streams || current.programNumber != table.programNumber
    }

    /// A PAT seen: when it no longer lists the followed program, the next PMT that qualifies is followed instead.
    mutating func note(_ table: ProgramAssociationTable, offset: Int64) {
        latestPAT = table
        if !awaitingProgram { awaitingSince = offset }
        guard let followed else { return }
        if let requested, requested != followed, table.programs.contains(where: { $0.programNumber == requested }) {
            // The program asked for is back: follow it again.
            self.followed = nil
            awaitingProgram = true
            return
        }
        if !table.programs.contains(where: { $0.programNumber == followed }) { awaitingProgram = true }
    }
}

extension TSAnalyzer {
    /// The parts of the file (see ``RecordingPart``), their ticks counted from ``firstPTS`` as ``keyframesFromStart``'s
    /// are; the last ends where the followed program's streams end so far. Empty before the followed program's PMT.
    public var parts: [RecordingPart] {
        var result = tracker.parts
        guard !result.isEmpty else { return [] }
        let start = startTicks ?? 0
        result[result.count - 1].endTicks = max(result[result.count - 1].startTicks, partEnd())
        if recordKeyframes, let keyframePID { result[result.count - 1].keyframePID = keyframePID }
        // The first part begins where the presentation does.
        result[0].startTicks = start
        result[0].endTicks = max(result[0].endTicks, start)
        // Each part begins where the one before it ends, whatever damaged input made their ticks (a part with no
        // time stamps, or time stamps before the presentation's start).
        for index in result.indices.dropFirst() {
            result[index].startTicks = result[index - 1].endTicks
            result[index].endTicks = max(result[index].endTicks, result[index].startTicks)
        }
        for index in result.indices {
            result[index].startTicks -= start
            result[index].endTicks -= start
        }
        return result
    }

    /// Where the current part ends on the timeline so far: its video's end (its latest PTS plus its last step) when
    /// the part has video, else the latest end of its audio streams (of all its streams without either).
    func partEnd() -> Int64 {
        guard let part = tracker.parts.last else { return 0 }
        let streams = part.streams.compactMap { stream(pid: $0.pid) }.filter { $0.pesCount > 0 }
        let video = streams.filter { $0.codec.kind == .video }
        let audio = streams.filter { $0.codec.kind == .audio }
        let chosen = !video.isEmpty ? video : !audio.isEmpty ? audio : streams
        let ends = chosen.compactMap { summary in summary.endTicks.map { $0 + summary.lastPESDuration } }
        return max(ends.max() ?? part.startTicks, part.startTicks)
    }

    /// A PMT of a program: starts the first part, or a new one where the followed program's streams change.
    mutating func noteParts(_ table: ProgramMapTable, pmtPID: UInt16, offset: Int64) {
        let wasAwaiting = tracker.awaitingProgram
        let cut = tracker.shouldCut(for: table)
        guard tracker.followed == table.programNumber else { return }
        if tracker.parts.isEmpty {
            tracker.mainPID = PartTracker.mainPID(of: table)
            tracker.parts.append(
                RecordingPart(
                    offset: 0, cause: .start, programNumber: table.programNumber, pmtPID: pmtPID,
                    pcrPID: table.pcrPID,
                    streams: table.streams.map { .init(pid: $0.pid, streamType: $0.streamType) },
                    keyframePID: keyframePID ?? tracker.mainPID, startTicks: startTicks ?? 0, endTicks: startTicks ?? 0)
            )
        } else if cut {
            cutPart(
                at: wasAwaiting ? min(offset, tracker.awaitingSince) : offset, cause: .streamsChanged, end: partEnd(),
                table: table, pmtPID: pmtPID)
        }
    }

    /// Closes the current part at `end` and starts the next there, at byte `offset`: with `table`'s program and
    /// streams (whose PIDs not seen before are placed after the part before), or the same ones.
    mutating func cutPart(
        at offset: Int64, cause: RecordingPart.Cause, end: Int64, table: ProgramMapTable?, pmtPID: UInt16?
    ) {
        guard var part = tracker.parts.last else { return }
        tracker.parts[tracker.parts.count - 1].endTicks = max(part.startTicks, end)
        part.offset = max(offset, part.offset)
        part.cause = cause
        part.startTicks = max(part.startTicks, end)
        part.endTicks = part.startTicks
        if let table {
            part.programNumber = table.programNumber
            part.pmtPID = pmtPID ?? part.pmtPID
            part.pcrPID = table.pcrPID
            part.streams = table.streams.map { .init(pid: $0.pid, streamType: $0.streamType) }
            let media = table.streams.filter { stream in
                let summary = self.stream(pid: stream.pid)
                return summary.map { $0.pesCount == 0 } ?? true
            }
            tracker.joining = Set(media.map(\.pid))
            tracker.partBase = part.startTicks
            tracker.partReference = nil
            tracker.followedPES = 0
            tracker.mainPID = PartTracker.mainPID(of: table)
            part.keyframePID = tracker.mainPID
            if recordKeyframes { keyframePID = tracker.mainPID }
        }
        tracker.parts.append(part)
    }
}
