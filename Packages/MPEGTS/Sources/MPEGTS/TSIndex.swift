public import FileRange

/// An error while indexing or probing a file.
public struct TSFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case io
            case notTransportStream
            case invalidSidecar
        }
        private let kind: Kind
        private init(_ kind: Kind) { self.kind = kind }
        /// The file could not be opened or read.
        public static let io = Code(.io)
        /// No MPEG-TS packets were found.
        public static let notTransportStream = Code(.notTransportStream)
        /// A sidecar index is malformed.
        public static let invalidSidecar = Code(.invalidSidecar)
        public var description: String {
            switch kind {
            case .io: "io"
            case .notTransportStream: "notTransportStream"
            case .invalidSidecar: "invalidSidecar"
            }
        }
    }
    public var code: Code
    public var path: String?
    public var offset: Int64?
    public var detail: String

    public init(_ code: Code, path: String? = nil, offset: Int64? = nil, _ detail: String) {
        self.code = code
        self.path = path
        self.offset = offset
        self.detail = detail
    }

    init(_ error: FileStreamerError) {
        self.init(.io, path: error.path, offset: error.offset.flatMap { Int64(exactly: $0) }, error.description)
    }

    public var description: String {
        var text = "\(code)"
        if let path { text += " \(path)" }
        if let offset { text += " at offset \(offset)" }
        return text + ": " + detail
    }
}

/// The index of a transport stream file: programs, streams with their PTS range, duration, bitrate and the
/// keyframes of the main stream (byte offset of the packet that starts each keyframe's PES, and its PTS).
///
/// Local playback builds HLS byte-range playlists from it. It is a plain value: `Sendable`, comparable, and
/// saved to / loaded from a small sidecar file keyed by the file's size and modification time.
public struct TSIndex: Hashable, Sendable {
    public struct Program: Hashable, Sendable {
        public var programNumber: UInt16
        public var pmtPID: UInt16
        public var pcrPID: UInt16
        public var streamPIDs: [UInt16]
    }

    public struct Stream: Hashable, Sendable {
        public var pid: UInt16
        public var programNumber: UInt16
        public var streamType: StreamType
        public var codec: Codec
        public var pesCount: Int64
        public var firstPTS: Timestamp?
        public var lastPTS: Timestamp?
        /// PTS span plus the last frame's step, in 90 kHz ticks.
        public var durationTicks: Int64?
    }

    /// The file's size and modification time when it was indexed.
    public var fileSize: UInt64
    public var modificationSeconds: Int64
    public var modificationNanoseconds: Int64
    /// Bytes covered by this index (less than `fileSize` while a scan is in progress).
    public var bytesIndexed: UInt64
    /// Whether the scan reached the end of the file.
    public var isComplete: Bool
    public var packetSize: Int
    public var programs: [Program]
    public var streams: [Stream]
    /// The earliest PTS of the audio/video streams; keyframe `ticks` count from it.
    public var firstPTS: Timestamp?
    public var durationTicks: Int64?
    /// The stream the keyframe list is for (first video stream, else first audio stream).
    public var keyframePID: UInt16?
    public var keyframes: [Keyframe]
    /// The runs of whole packets the scan found (see ``layout``).
    public var packetRuns: [PacketRun] = []
    /// Packets per PID in each keyframe span: from the file's start to the first keyframe, then from each keyframe to
    /// the next (the last to ``bytesIndexed``); `keyframes.count + 1` spans, or none when not known (an index of an
    /// older sidecar, or a file whose packets could not all be counted). A segment's size filtered to one program is
    /// known from them without reading it (``PIDPacketCounts/packets(keptBy:)``).
    public var spanPacketCounts: [PIDPacketCounts] = []

    /// The recordings the file is made of (one for most files; see ``RecordingPart``), their ticks counted from
    /// ``firstPTS`` as the keyframes' are. Empty when the followed program's PMT was not found.
    public var parts: [RecordingPart] = []

    /// The part that holds byte `offset` (the last that begins at or before it).
    public func part(at offset: Int64) -> RecordingPart? {
        parts.last { $0.offset <= offset } ?? parts.first
    }

    /// The stream the keyframe at byte `offset` is one of: its part's keyframe stream.
    public func keyframePID(at offset: Int64) -> UInt16? {
        part(at: offset)?.keyframePID ?? keyframePID
    }

    /// How the file's packets look as plain 188-byte TS: the served view of ``packetRuns``.
    public var layout: PacketLayout { PacketLayout(packetSize: packetSize, runs: packetRuns) }

    /// Duration in seconds.
    public var duration: Double? { durationTicks.map { Timestamp.seconds(ticks: $0) } }

    /// Average bits per second over the indexed bytes.
    public var bitrate: Double? {
        guard let duration, duration > 0 else { return nil }
        return Double(bytesIndexed) * 8 / duration
    }
}

/// Progress of a sequential indexing scan.
public struct TSIndexProgress: Hashable, Sendable {
    public var bytesIndexed: UInt64
    public var fileSize: UInt64
    public var keyframes: Int
    public var durationTicks: Int64?
    public var fraction: Double { fileSize == 0 ? 1 : min(1, Double(bytesIndexed) / Double(fileSize)) }
}

/// Builds a ``TSIndex`` by a sequential scan; can be resumed as a file grows, and gives a usable index at any
/// point.
public struct TSIndexer: Sendable {
    public private(set) var demuxer: Demuxer
    public private(set) var analyzer = TSAnalyzer(recordKeyframes: true, recordSCTE35: false)
    public private(set) var bytesIndexed: UInt64 = 0
    public private(set) var isFinished = false
    private var runs = PacketRunRecorder()
    private var spans = SpanPacketCounter()

    /// An indexer; with `program`, the keyframes are those of that program's first video (else audio) stream.
    public init(scanKeyframes: Bool = true, program: UInt16? = nil) {
        demuxer = Demuxer(options: DemuxOptions(scanKeyframes: scanKeyframes))
        analyzer.keyframeProgram = program
    }

    /// Feeds the next bytes of the file.
    public mutating func consume(_ bytes: UnsafeRawBufferPointer) {
        var analyzer = self.analyzer
        var runs = self.runs
        demuxer.feed(bytes) { event in
            runs.note(event)
            analyzer.consume(event)
        }
        self.analyzer = analyzer
        self.runs = runs
        bytesIndexed += UInt64(bytes.count)
        countSpans(bytes)
    }

    /// Counts the packets of each PID in the bytes just read, per keyframe span (see ``TSIndex/spanPacketCounts``).
    private mutating func countSpans(_ bytes: UnsafeRawBufferPointer) {
        spans.count(
            chunk: bytes, end: bytesIndexed, runs: runs.layout(end: bytesIndexed).runs,
            candidatePID: analyzer.keyframes.isEmpty ? nil : analyzer.keyframePID, keyframes: analyzer.keyframes)
    }

    /// Marks the end of the file (open PES packets are counted).
    public mutating func finish() {
        var analyzer = self.analyzer
        var runs = self.runs
        demuxer.finish { event in
            runs.note(event)
            analyzer.consume(event)
        }
        self.analyzer = analyzer
        self.runs = runs
        countSpans(UnsafeRawBufferPointer(start: nil, count: 0))
        isFinished = true
    }

    /// After ``finish()``: reads each audio stream's last PES again from `file` (a few KiB near the end) and counts
    /// its frames, so the index ends where the audio really ends rather than one PES step after the last PES
    /// started (see ``TSAnalyzer/measureLastAudioPES(fileSize:limit:read:)``).
    /// ``scan(_:bufferSize:finishAtEnd:progress:)`` does this itself; a caller that feeds ``consume(_:)`` calls it
    /// after ``finish()``. A failed read (the file shrank) keeps the PES step.
    public mutating func measureLastAudioPES(in file: FileStreamer) {
        let end = bytesIndexed
        try? analyzer.measureLastAudioPES(fileSize: end) { (offset, length) throws(FileStreamerError) in
            try file.read(at: offset, length: length)
        }
    }

    /// Reads `file` from where the previous call stopped to its current end, in chunks of `bufferSize` bytes that a
    /// second thread helps read (`FileRange.FileStreamer.readAhead(from:length:chunkSize:_:)`). Calls `progress`
    /// after each chunk; returning false stops the scan (it can be resumed). With `finishAtEnd`, the index is
    /// completed at the end. Returns whether the scan reached the end.
    @discardableResult
    public mutating func scan(
        _ file: FileStreamer, bufferSize: Int = 2 << 20, finishAtEnd: Bool = true,
        progress: (TSIndexProgress) -> Bool = { _ in true }
    ) throws(FileStreamerError) -> Bool {
        let size = try file.size()
        var stopped = false
        var copy = self
        try file.readAhead(from: bytesIndexed, length: size - min(size, bytesIndexed), chunkSize: bufferSize) { chunk in
            copy.consume(chunk)
            let report = TSIndexProgress(
                bytesIndexed: copy.bytesIndexed, fileSize: size, keyframes: copy.analyzer.keyframes.count,
                durationTicks: copy.analyzer.durationTicks)
            if !progress(report) { stopped = true }
            return !stopped
        }
        self = copy
        if !stopped && finishAtEnd {
            finish()
            measureLastAudioPES(in: file)
        }
        return !stopped
    }

    /// The index of what was read so far.
    public func index(fileSize: UInt64, modificationTime: (seconds: Int64, nanoseconds: Int64)) -> TSIndex {
        let analyzer = self.analyzer
        let programs = analyzer.programs.keys.sorted().compactMap { number -> TSIndex.Program? in
            guard let table = analyzer.programs[number] else { return nil }
            return TSIndex.Program(
                programNumber: number, pmtPID: analyzer.pmtPIDs[number] ?? 0, pcrPID: table.pcrPID,
                streamPIDs: table.streams.map(\.pid))
        }
        let streams = analyzer.orderedStreams.map { summary in
            TSIndex.Stream(
                pid: summary.pid, programNumber: summary.programNumber, streamType: summary.streamType,
                codec: summary.codec, pesCount: summary.pesCount, firstPTS: summary.firstPTS,
                lastPTS: summary.lastPTS, durationTicks: summary.durationTicks)
        }
        let layout = runs.layout(end: bytesIndexed)
        // A part begins at the packet that holds its table's section (the demuxer names the section's own byte).
        let parts = analyzer.parts.map { part in
            var part = part
            if let offset = UInt64(exactly: part.offset),
                let run = layout.runs.last(where: { $0.fileOffset <= offset }), run.packetSize > 0
            {
                let start = run.fileOffset + (offset - run.fileOffset) / UInt64(run.packetSize) * UInt64(run.packetSize)
                part.offset = Int64(exactly: start) ?? part.offset
            }
            return part
        }
        // Span counts follow one keyframe stream through the file: a file of several parts (whose keyframe stream may
        // change at a cut, in the middle of a chunk) has none, and its segments are filtered as they are read.
        let keyframes = analyzer.keyframesFromStart
        let spanCounts =
            parts.count <= 1 && keyframes.count == analyzer.keyframes.count
            ? spans.spans(keyframes: keyframes.count) : []
        return TSIndex(
            fileSize: fileSize, modificationSeconds: modificationTime.seconds,
            modificationNanoseconds: modificationTime.nanoseconds, bytesIndexed: bytesIndexed,
            isComplete: isFinished, packetSize: demuxer.packetSize?.length ?? 188, programs: programs,
            streams: streams, firstPTS: analyzer.firstPTS, durationTicks: analyzer.durationTicks,
            keyframePID: analyzer.keyframePID, keyframes: keyframes, packetRuns: layout.runs,
            spanPacketCounts: spanCounts, parts: parts)
    }
}

extension TSIndex {
    /// Indexes a whole file by a sequential scan.
    public static func build(
        path: String, bufferSize: Int = 2 << 20, progress: (TSIndexProgress) -> Bool = { _ in true }
    ) throws(TSFileError) -> TSIndex {
        do {
            let file = try FileStreamer(path: path)
            defer { file.close() }
            var indexer = TSIndexer()
            try indexer.scan(file, bufferSize: bufferSize, progress: progress)
            guard indexer.demuxer.statistics.packets > 0 else {
                throw TSFileError(.notTransportStream, path: path, offset: 0, "no MPEG-TS packets found")
            }
            return indexer.index(fileSize: try file.size(), modificationTime: try file.modificationTime())
        } catch let error as FileStreamerError {
            throw TSFileError(error)
        } catch let error as TSFileError {
            throw error
        } catch {
            throw TSFileError(.io, path: path, "\(error)")
        }
    }
}

/// What a quick look at both ends of a file gives: programs, streams, first and last PTS and the duration.
public struct TSProbe: Hashable, Sendable {
    public var fileSize: UInt64
    public var packetSize: Int
    public var programs: [ProgramMapTable]
    public var firstPTS: Timestamp?
    public var lastPTS: Timestamp?
    /// From the earliest PTS near the start to the latest PTS near the end plus one frame step, in 90 kHz ticks.
    public var durationTicks: Int64?
    /// Bytes read (head plus tail).
    public var bytesRead: UInt64
    /// The main stream (the first video, else the first audio stream): where its time stamps begin, and where it
    /// ends (its latest PTS plus its last frame or PES), so that a folder's files can be compared by
    /// ``TimelineBreak``.
    public var mainStream: StreamSpan?

    /// Where one stream's time stamps begin and end.
    public struct StreamSpan: Hashable, Sendable {
        public var pid: UInt16
        public var firstPTS: Timestamp
        public var endPTS: Timestamp

        public init(pid: UInt16, firstPTS: Timestamp, endPTS: Timestamp) {
            self.pid = pid
            self.firstPTS = firstPTS
            self.endPTS = endPTS
        }
    }

    /// The first video, else the first audio stream of `streams`.
    static func main(_ streams: [StreamSummary]) -> StreamSummary? {
        streams.first { $0.codec.kind == .video && $0.firstPTS != nil }
            ?? streams.first { $0.codec.kind == .audio && $0.firstPTS != nil }
    }

    public var duration: Double? { durationTicks.map { Timestamp.seconds(ticks: $0) } }

    /// Reads at most `headBytes` at the start and `tailBytes` at the end of the file.
    public static func probe(path: String, headBytes: Int = 1 << 20, tailBytes: Int = 1 << 20) throws(TSFileError)
        -> TSProbe
    {
        do {
            let file = try FileStreamer(path: path)
            defer { file.close() }
            return try probe(file, headBytes: headBytes, tailBytes: tailBytes)
        } catch let error as FileStreamerError {
            throw TSFileError(error)
        } catch let error as TSFileError {
            throw error
        } catch {
            throw TSFileError(.io, path: path, "\(error)")
        }
    }

    /// Probes an open file.
    ///
    /// The head is read in 128 KiB steps until the tables are known and every audio and video stream has shown
    /// ``pesPerStream`` PES (its earliest PTS is then among them, B-frame reordering included) or `headBytes` were
    /// read; the tail likewise from a 128 KiB window at the end that doubles until every such stream has that many
    /// PES in it or the window is `tailBytes`. One reused buffer; nothing per packet.
    public static func probe(_ file: FileStreamer, headBytes: Int = 1 << 20, tailBytes: Int = 1 << 20) throws
        -> TSProbe
    {
        let size = try file.size()
        let step = 128 << 10
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: step, alignment: 64)
        defer { buffer.deallocate() }
        var demuxer = Demuxer(options: DemuxOptions(scanKeyframes: false))
        var analyzer = TSAnalyzer(recordKeyframes: false, recordSCTE35: false)
        let headLimit = min(size, UInt64(max(headBytes, 0)))
        var position: UInt64 = 0
        while position < headLimit {
            let count = try file.read(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(UInt64(step), headLimit - position))]),
                at: position)
            if count == 0 { break }
            position += UInt64(count)
            demuxer.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { analyzer.consume($0) }
            if headIsEnough(demuxer, analyzer) { break }
        }
        var bytesRead = position
        let tailLimit = UInt64(max(tailBytes, 0))
        if size - position > tailLimit, let pat = demuxer.programAssociation, let reference = analyzer.reference {
            let timed = analyzer.orderedStreams.filter { $0.codec.kind == .audio || $0.codec.kind == .video }
            var latest: [UInt16: Timestamp] = [:]
            var counts: [UInt16: Int] = [:]
            // The last PES of each audio stream, whole, to count its frames: (PTS, duration in ticks).
            var lastAudio: [UInt16: (pts: Timestamp, ticks: Int64)] = [:]
            let audioCodecs = Dictionary(
                timed.filter { $0.codec.kind == .audio }.map { ($0.pid, $0.codec) }, uniquingKeysWith: { a, _ in a })
            // Windows [size - window, end) read newest first; each earlier one ends where the previous began.
            var end = size
            var window = min(UInt64(step), tailLimit)
            while end > position {
                let start = max(position, size - min(window, size))
                guard start < end else { break }
                var tailDemuxer = Demuxer(
                    options: DemuxOptions(scanKeyframes: false, reassemblePES: end == size && !audioCodecs.isEmpty))
                tailDemuxer.prime(programAssociation: pat, programMaps: Array(demuxer.programMaps.values))
                var lastPacket: [UInt16: PESPacket] = [:]
                func collect(_ event: DemuxEvent) {
                    switch event {
                    case .pes(let info):
                        if let pts = info.pts {
                            latest[info.pid] = Self.later(latest[info.pid], pts)
                            counts[info.pid, default: 0] += 1
                        }
                    case .pesPacket(let packet) where audioCodecs[packet.info.pid] != nil:
                        lastPacket[packet.info.pid] = packet
                    default:
                        break
                    }
                }
                var offset = start
                while offset < end {
                    let count = try file.read(
                        into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(UInt64(step), end - offset))]),
                        at: offset)
                    if count == 0 { break }
                    offset += UInt64(count)
                    tailDemuxer.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { collect($0) }
                }
                tailDemuxer.finish { collect($0) }
                // Only the window that reaches the end of the file holds each stream's last PES.
                for (pid, packet) in lastPacket where lastAudio[pid] == nil {
                    guard let codec = audioCodecs[pid], let pts = packet.info.pts,
                        let ticks = AudioFrames.ticks(codec: codec, payload: packet.payload)
                    else { continue }
                    lastAudio[pid] = (pts, ticks)
                }
                bytesRead += offset - start
                end = start
                if timed.allSatisfy({ counts[$0.pid, default: 0] >= pesPerStream }) || window >= tailLimit { break }
                window = min(window * 2, tailLimit)
            }
            var headEnd: Int64?
            for stream in timed {
                guard let last = latest[stream.pid] else { continue }
                // An audio stream's last PES, measured, ends it when it holds the latest PTS; else the step.
                let measured = lastAudio[stream.pid].flatMap { $0.pts == last ? $0.ticks : nil }
                var ticks = reference.distance(to: last)
                if ticks < 0 { ticks += Int64(Timestamp.modulus) }  // the file is longer than half the PTS circle
                let end = ticks + (measured ?? stream.lastStepTicks ?? 0)
                headEnd = max(headEnd ?? end, end)
            }
            let starts = timed.compactMap(\.startTicks)
            let lastPTS = latest.values.reduce(nil as Timestamp?) { Self.later($0, $1) }
            var result = TSProbe(
                fileSize: size, packetSize: demuxer.packetSize?.length ?? 188,
                programs: demuxer.programMaps.keys.sorted().compactMap { demuxer.programMaps[$0] },
                firstPTS: analyzer.firstPTS, lastPTS: lastPTS,
                durationTicks: headEnd.flatMap { end in starts.min().map { end - $0 } }, bytesRead: bytesRead)
            if let main = main(timed), let first = main.firstPTS, let last = latest[main.pid] {
                let step = lastAudio[main.pid].flatMap { $0.pts == last ? $0.ticks : nil } ?? main.lastStepTicks ?? 0
                result.mainStream = StreamSpan(pid: main.pid, firstPTS: first, endPTS: last.advanced(by: step))
            }
            return result
        }
        // Small file (or no tables in the head): what follows the head, up to `tailBytes`, is read in order.
        let restLimit = min(size, position + tailLimit)
        while position < restLimit {
            let count = try file.read(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(min(UInt64(step), restLimit - position))]),
                at: position)
            if count == 0 { break }
            position += UInt64(count)
            bytesRead += UInt64(count)
            demuxer.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { analyzer.consume($0) }
        }
        demuxer.finish { analyzer.consume($0) }
        guard demuxer.statistics.packets > 0 else {
            throw TSFileError(.notTransportStream, path: file.path, offset: 0, "no MPEG-TS packets found")
        }
        if position == size {
            try? analyzer.measureLastAudioPES(fileSize: size) { (offset, length) throws(FileStreamerError) in
                try file.read(at: offset, length: length)
            }
        }
        let lastPTS = analyzer.orderedStreams.compactMap(\.lastPTS).reduce(nil as Timestamp?) { Self.later($0, $1) }
        var result = TSProbe(
            fileSize: size, packetSize: demuxer.packetSize?.length ?? 188,
            programs: demuxer.programMaps.keys.sorted().compactMap { demuxer.programMaps[$0] },
            firstPTS: analyzer.firstPTS, lastPTS: lastPTS, durationTicks: analyzer.durationTicks, bytesRead: bytesRead)
        if let main = main(analyzer.orderedStreams), let first = main.firstPTS, let last = main.lastPTS {
            result.mainStream = StreamSpan(
                pid: main.pid, firstPTS: first, endPTS: last.advanced(by: main.lastPESDuration))
        }
        return result
    }

    /// PES per audio/video stream read at each end before the probe stops early.
    static let pesPerStream = 8

    /// Whether the head read so far is enough: every program of the PAT has its PMT and every audio/video
    /// stream has ``pesPerStream`` PES.
    private static func headIsEnough(_ demuxer: Demuxer, _ analyzer: TSAnalyzer) -> Bool {
        guard let pat = demuxer.programAssociation, !pat.programs.isEmpty,
            pat.programs.allSatisfy({ demuxer.programMaps[$0.programNumber] != nil })
        else { return false }
        let timed = analyzer.orderedStreams.filter { $0.codec.kind == .audio || $0.codec.kind == .video }
        return !timed.isEmpty && timed.allSatisfy { $0.pesCount >= Int64(pesPerStream) && $0.lastStepTicks != nil }
    }

    private static func later(_ a: Timestamp?, _ b: Timestamp) -> Timestamp {
        guard let a else { return b }
        return a.distance(to: b) > 0 ? b : a
    }
}
