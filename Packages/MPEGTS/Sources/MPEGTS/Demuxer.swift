// Long file: the demuxer is one hot loop over packets with its per-PID state; its parts are not useful apart.
import FileRange

/// The start of one PES packet, as the demuxer reports it.
public struct PESInfo: Hashable, Sendable {
    public var pid: UInt16
    public var streamID: UInt8
    public var pts: Timestamp?
    public var dts: Timestamp?
    /// H.264 IDR / HEVC IRAP / MPEG-2 I picture after a sequence or GOP header, found at the start of the payload
    /// for video; true for audio (every frame is a sync point); the random-access indicator otherwise, or when
    /// keyframe scanning is off.
    public var isKeyframe: Bool
    /// The adaptation field's random_access_indicator on the packet that starts this PES (a hint only).
    public var randomAccessIndicator: Bool
    /// The stream offset of the TS packet that starts this PES (of its timecode, for M2TS).
    public var offset: Int64
    /// PES_packet_length (0 = unbounded).
    public var packetLength: Int

    public init(
        pid: UInt16, streamID: UInt8, pts: Timestamp?, dts: Timestamp?, isKeyframe: Bool,
        randomAccessIndicator: Bool, offset: Int64, packetLength: Int
    ) {
        self.pid = pid
        self.streamID = streamID
        self.pts = pts
        self.dts = dts
        self.isKeyframe = isKeyframe
        self.randomAccessIndicator = randomAccessIndicator
        self.offset = offset
        self.packetLength = packetLength
    }
}

/// A complete PES packet with its payload, reported when ``DemuxOptions/reassemblePES`` is on.
public struct PESPacket: Hashable, Sendable {
    public var info: PESInfo
    public var header: PESHeader
    /// The payload (elementary stream bytes) after the PES header.
    public var payload: [UInt8]
}

/// What the demuxer reports, in stream order.
public enum DemuxEvent: Hashable, Sendable {
    /// Packets of this size start at this offset (at the start and after every resynchronisation).
    case synchronized(PacketSize, offset: Int64)
    /// A new or changed PAT.
    case programAssociation(ProgramAssociationTable, offset: Int64)
    /// A new or changed PMT, on its PID.
    case programMap(ProgramMapTable, pid: UInt16, offset: Int64)
    /// A PES packet started (reported once its keyframe flag is known).
    case pes(PESInfo)
    /// A complete PES packet (only with ``DemuxOptions/reassemblePES``).
    case pesPacket(PESPacket)
    /// Any other checked PSI section: SCTE-35 (table 0xFC, every one), SDT (0x42) ... (other tables only when
    /// they differ from the previous section with the same PID, table id, extension and number).
    case section(PSISection, pid: UInt16, offset: Int64)
    /// A PCR on a program's PCR PID (only with ``DemuxOptions/reportPCR``).
    case pcr(PCR, pid: UInt16, offset: Int64)
    /// A stream whose PMT entry did not say its codec (private data) was identified from its first payload
    /// (ADTS AAC, AC-3, E-AC-3, MPEG audio).
    case streamIdentified(Codec, pid: UInt16)
    /// Details from a stream's own headers (SPS, ADTS, AC-3), once per stream (with
    /// ``DemuxOptions/detectCodecDetails``).
    case codecDetails(CodecDetails, pid: UInt16)
    /// A problem in the stream; the demuxer carries on.
    case error(MPEGTSError)
}

/// What the demuxer does beyond the basics.
public struct DemuxOptions: Hashable, Sendable {
    /// Scan H.264/HEVC payloads for IDR/IRAP NAL units to set ``PESInfo/isKeyframe``.
    public var scanKeyframes: Bool = true
    /// Report whole PES packets with their payloads (allocates per PES).
    public var reassemblePES: Bool = false
    /// Largest PES payload kept when reassembling; longer ones are cut (and reported as an error).
    public var maximumPESSize: Int = 16 << 20
    /// Report every PCR.
    public var reportPCR: Bool = false
    /// Read each stream's first parameter sets / frame header and report ``DemuxEvent/codecDetails(_:pid:)``.
    public var detectCodecDetails: Bool = true

    public init(scanKeyframes: Bool = true, reassemblePES: Bool = false, reportPCR: Bool = false) {
        self.scanKeyframes = scanKeyframes
        self.reassemblePES = reassemblePES
        self.reportPCR = reportPCR
    }
}

/// Counters kept by the demuxer.
public struct DemuxStatistics: Hashable, Sendable {
    /// Bytes fed so far.
    public var bytes: Int64 = 0
    /// Complete packets read.
    public var packets: Int64 = 0
    /// Times the sync byte was missing where a packet should start.
    public var syncLosses: Int = 0
    /// Bytes that were not part of any packet (garbage before or between packets).
    public var skippedBytes: Int64 = 0
    /// Bytes of an incomplete last packet.
    public var truncatedBytes: Int = 0
    public var continuityErrors: Int = 0
    public var crcErrors: Int = 0
    /// PES headers that could not be read.
    public var pesErrors: Int = 0
    /// Packets with the transport_error_indicator set.
    public var transportErrors: Int = 0
    /// Packets with an adaptation field whose length is impossible.
    public var adaptationFieldErrors: Int = 0
    /// Packets with scrambled payloads (not decoded).
    public var scrambledPackets: Int64 = 0
    /// Offsets of the first few continuity errors, with their PIDs.
    public var firstContinuityErrors: [(pid: UInt16, offset: Int64)] {
        get { continuityErrorSamples.map { ($0.pid, $0.offset) } }
        set { continuityErrorSamples = newValue.map { Sample(pid: $0.pid, offset: $0.offset) } }
    }
    struct Sample: Hashable, Sendable {
        var pid: UInt16
        var offset: Int64
    }
    var continuityErrorSamples: [Sample] = []

    /// Whether any stream error was seen (sync loss, continuity, CRC, PES header, truncation, TEI).
    public var hasErrors: Bool {
        syncLosses > 0 || continuityErrors > 0 || crcErrors > 0 || pesErrors > 0 || truncatedBytes > 0
            || transportErrors > 0 || adaptationFieldErrors > 0 || skippedBytes > 0
    }
}

/// Per-PID counters.
public struct PIDStatistics: Hashable, Sendable {
    public var pid: UInt16
    public var packets: Int64
    public var continuityErrors: Int
}

/// A streaming MPEG-TS demuxer: bytes in, in chunks of any size, events out.
///
/// The demuxer finds the packet size (188/192/204) and the first packet by itself, resynchronises after
/// garbage, checks continuity counters per PID, assembles and checks PSI sections, follows PAT and PMT changes,
/// and reports each PES start with its PTS/DTS and keyframe flag. Any chunking of the same bytes gives the same
/// events. It allocates per PSI section and per PES (when reassembling), never per packet.
public struct Demuxer: Sendable {
    enum Role: UInt8, Sendable {
        case none
        case pat
        case pmt
        case section
        case pes
    }

    /// Counters updated for every packet; moved out of `self` while a buffer is processed.
    struct PIDCounters: Sendable {
        var packets: Int64 = 0
        var continuityErrors: Int32 = 0
        var lastCC: UInt8 = 0xFF
        var duplicateSeen = false
        /// The second header byte (flags and the PID's high bits) and the last 8 bytes of the PID's last packet with
        /// a payload: a packet with the same continuity counter is a duplicate only when these agree too (ISO/IEC
        /// 13818-1 2.4.3.3: every byte repeated but the PCR). A recording joined to another whose packet on the same
        /// PID happens to carry the same counter is a new packet, not a duplicate to drop.
        var lastByte1: UInt8 = 0
        var lastTail: UInt64 = 0
        /// Nothing but counting is needed for this PID's packets without a unit start while their continuity
        /// counter goes up by one (no role, or a PES whose start was already read): see ``processPackets``.
        var countOnly = true
    }

    struct StreamState: Sendable {
        var pid: UInt16
        var codec: Codec
        var scanner: KeyframeScanner?
        var pending: PESInfo?
        var headerBuffer: [UInt8] = []
        var awaitingHeader = false
        var headerOffset: Int64 = 0
        var headerRandomAccess = false
        var reassembling: PESHeader?
        var reassemblyInfo: PESInfo?
        var payload: [UInt8] = []
        var payloadOverflow = false
        /// The PMT did not name the codec: look at the first payload.
        var needsSniff: Bool
        var isAudio: Bool
        var scans: Bool
        var wantsDetails = true
        var detailsBuffer: [UInt8] = []
        var detailsTries = 0

        init(pid: UInt16, codec: Codec, scanner: KeyframeScanner?) {
            self.pid = pid
            self.codec = codec
            self.scanner = scanner
            needsSniff = codec == .privateData || codec == .unknown
            isAudio = codec.kind == .audio
            scans = scanner != nil
        }

        mutating func setCodec(_ codec: Codec) {
            self.codec = codec
            needsSniff = false
            isAudio = codec.kind == .audio
        }
    }

    public let options: DemuxOptions
    /// The packet size in use (nil before the first sync and while resynchronising).
    public private(set) var packetSize: PacketSize?
    public private(set) var statistics = DemuxStatistics()
    /// The latest PAT.
    public private(set) var programAssociation: ProgramAssociationTable?
    /// The latest PMT of each program, by program number.
    public private(set) var programMaps: [UInt16: ProgramMapTable] = [:]

    private var counters: [PIDCounters]
    private var roles: [Role]
    private var slots: [Int32]
    private var streams: [StreamState] = []
    private var slotForPID: [UInt16: Int32] = [:]
    /// By stream slot: see ``refreshPayloadWanted(_:)``.
    private var payloadWanted: [Bool] = []
    private var assemblers: [UInt16: SectionAssembler] = [:]
    private var lastTableCRC: [UInt32: UInt64] = [:]
    /// Sections of multi-section PATs and PMTs gathered so far, by PID, table id and table id extension.
    private var sectionSets: [UInt64: [PSISection]] = [:]
    private var lastSections: [UInt64: [UInt8]] = [:]
    /// By PID: the last single-packet table, and whether the PID's assembler is idle.
    private var repeatedSections: [[UInt8]] = Array(repeating: [], count: 8192)
    private var sectionIdle: [Bool] = Array(repeating: true, count: 8192)
    private var pcrPIDs: Set<UInt16> = []
    /// The roles changed: the `countOnly` flags of the counters must be recomputed.
    private var rolesChanged = true
    private var carry: [UInt8] = []
    private var carryOffset: Int64 = 0
    private var everSynced = false
    private var finished = false

    public init(options: DemuxOptions = DemuxOptions()) {
        self.options = options
        counters = Array(repeating: PIDCounters(), count: 8192)
        roles = Array(repeating: .none, count: 8192)
        slots = Array(repeating: -1, count: 8192)
        roles[0] = .pat
        roles[0x11] = .section  // SDT/BAT
    }

    /// The PIDs that carried at least one packet, with their counters, in PID order.
    public var pidStatistics: [PIDStatistics] {
        var result: [PIDStatistics] = []
        for (pid, state) in counters.enumerated() where state.packets > 0 {
            result.append(
                PIDStatistics(pid: UInt16(pid), packets: state.packets, continuityErrors: Int(state.continuityErrors)))
        }
        return result
    }

    /// Counters for one PID.
    public func statistics(pid: UInt16) -> PIDStatistics {
        let state = counters[Int(pid & 0x1FFF)]
        return PIDStatistics(pid: pid & 0x1FFF, packets: state.packets, continuityErrors: Int(state.continuityErrors))
    }

    /// Starts from known tables (for example those read near the start of a file, before reading its tail), so
    /// PES PIDs are recognised before the next PAT/PMT arrive.
    public mutating func prime(programAssociation: ProgramAssociationTable, programMaps: [ProgramMapTable]) {
        self.programAssociation = programAssociation
        for table in programMaps
        where programAssociation.programs.contains(where: { $0.programNumber == table.programNumber }) {
            self.programMaps[table.programNumber] = table
        }
        rebuildRoles()
    }

    // MARK: Feeding

    /// Feeds the next bytes of the stream; events go to `handler` as they are found.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ handler: (DemuxEvent) -> Void) {
        guard !finished, !bytes.isEmpty else { return }
        var rest = bytes
        statistics.bytes += Int64(bytes.count)
        while !rest.isEmpty {
            if carry.isEmpty {
                let restOffset = statistics.bytes - Int64(rest.count)
                let used = process(rest, at: restOffset, isFinal: false, handler)
                carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[used...]))
                carryOffset = restOffset + Int64(used)
                return
            }
            let take: Int
            if let packetSize, carry.count < packetSize.length {
                take = min(rest.count, packetSize.length - carry.count)
            } else {
                take = min(rest.count, 1 << 16)
            }
            carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[..<take]))
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            processCarry(isFinal: false, handler)
        }
    }

    /// Feeds bytes from any collection.
    public mutating func feed(_ bytes: some Collection<UInt8>, _ handler: (DemuxEvent) -> Void) {
        let array = Array(bytes)
        array.withUnsafeBytes { feed($0, handler) }
    }

    /// Feeds bytes and returns the events they produced.
    public mutating func feed(_ bytes: some Collection<UInt8>) -> [DemuxEvent] {
        var events: [DemuxEvent] = []
        feed(bytes) { events.append($0) }
        return events
    }

    /// Ends the stream: an incomplete last packet is reported as truncated, PES packets still open are reported.
    public mutating func finish(_ handler: (DemuxEvent) -> Void) {
        guard !finished else { return }
        if !carry.isEmpty { processCarry(isFinal: true, handler) }
        if !carry.isEmpty {
            if packetSize != nil {
                statistics.truncatedBytes += carry.count
                handler(
                    .error(MPEGTSError(.truncated, offset: carryOffset, "last packet has only \(carry.count) bytes")))
            } else {
                statistics.skippedBytes += Int64(carry.count)
            }
            carry.removeAll()
        }
        for slot in streams.indices { endPES(slot: Int32(slot), handler) }
        if !everSynced {
            handler(.error(MPEGTSError(.noSync, offset: 0, "no MPEG-TS sync bytes found in \(statistics.bytes) bytes")))
        }
        finished = true
    }

    /// Ends the stream and returns the last events.
    public mutating func finish() -> [DemuxEvent] {
        var events: [DemuxEvent] = []
        finish { events.append($0) }
        return events
    }

    private mutating func processCarry(isFinal: Bool, _ handler: (DemuxEvent) -> Void) {
        let buffer = carry
        let used = buffer.withUnsafeBytes { process($0, at: carryOffset, isFinal: isFinal, handler) }
        if used > 0 {
            carry.removeFirst(used)
            carryOffset += Int64(used)
        }
    }

    /// Reads packets from `buffer` (stream offset `offset`); returns the bytes used. The rest is too short for a
    /// packet or for a sync decision and must be offered again with more bytes after it.
    private mutating func process(
        _ buffer: UnsafeRawBufferPointer, at offset: Int64, isFinal: Bool, _ handler: (DemuxEvent) -> Void
    ) -> Int {
        // The per-packet counters leave `self` for the loop so that updating them needs no uniqueness checks.
        var table = counters
        counters = []
        let used = table.withUnsafeMutableBufferPointer { table in
            if rolesChanged { refreshCountOnly(table) }
            return processPackets(buffer, at: offset, isFinal: isFinal, counters: table, handler)
        }
        counters = table
        return used
    }

    private mutating func processPackets(
        _ buffer: UnsafeRawBufferPointer, at offset: Int64, isFinal: Bool,
        counters: UnsafeMutableBufferPointer<PIDCounters>, _ handler: (DemuxEvent) -> Void
    ) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        let count = buffer.count
        var position = 0
        var searchFrom = 0
        while true {
            if let size = packetSize {
                let length = size.length
                let syncOffset = size.syncOffset
                var countedOnly: Int64 = 0
                while position + length <= count {
                    let packet = base + position + syncOffset
                    if packet.load(as: UInt8.self) != 0x47 {
                        statistics.syncLosses += 1
                        handler(.error(MPEGTSError(.syncLost, offset: offset + Int64(position), "sync byte missing")))
                        packetSize = nil
                        searchFrom = position + 1
                        break
                    }
                    // The common packet: no error or unit start flag, a payload, an adaptation field (if any) of a
                    // possible length, the next continuity counter, and a PID that needs nothing but counting.
                    // It touches the 4-byte header (and the adaptation field length) only.
                    let byte1 = packet.load(fromByteOffset: 1, as: UInt8.self)
                    let byte3 = packet.load(fromByteOffset: 3, as: UInt8.self)
                    let pid = Int(byte1 & 0x1F) << 8 | Int(packet.load(fromByteOffset: 2, as: UInt8.self))
                    let control = byte3 & 0x30
                    let fieldLength = packet.load(fromByteOffset: 4, as: UInt8.self)
                    let state = counters[pid]
                    if byte1 & 0xC0 == 0 && byte3 & 0xC0 == 0 && state.countOnly
                        && (control == 0x10 || (control == 0x30 && fieldLength <= 182))
                        && byte3 & 0x0F == (state.lastCC &+ 1) & 0x0F
                    {
                        counters[pid].packets &+= 1
                        counters[pid].lastCC = byte3 & 0x0F
                        counters[pid].duplicateSeen = false
                        counters[pid].lastByte1 = byte1
                        counters[pid].lastTail = packet.loadUnaligned(fromByteOffset: 180, as: UInt64.self)
                        countedOnly &+= 1
                        position += length
                        continue
                    }
                    handlePacket(packet, offset: offset + Int64(position), counters: counters, handler)
                    position += length
                }
                statistics.packets &+= countedOnly
                if packetSize != nil { return position }
            }
            switch PacketSize.search(buffer, from: searchFrom, isFinal: isFinal) {
            case .found(let size, let start):
                statistics.skippedBytes += Int64(start - position)
                position = start
                packetSize = size
                everSynced = true
                handler(.synchronized(size, offset: offset + Int64(start)))
            case .needMore(let keepFrom):
                statistics.skippedBytes += Int64(keepFrom - position)
                return keepFrom
            case .notFound:
                statistics.skippedBytes += Int64(count - position)
                return count
            }
        }
    }

    // MARK: Packets

    @inline(__always)
    private mutating func handlePacket(
        _ packet: UnsafeRawPointer, offset: Int64, counters: UnsafeMutableBufferPointer<PIDCounters>,
        _ handler: (DemuxEvent) -> Void
    ) {
        let byte1 = packet.load(fromByteOffset: 1, as: UInt8.self)
        let byte2 = packet.load(fromByteOffset: 2, as: UInt8.self)
        let byte3 = packet.load(fromByteOffset: 3, as: UInt8.self)
        let pid = Int(byte1 & 0x1F) << 8 | Int(byte2)
        statistics.packets &+= 1
        counters[pid].packets &+= 1
        if byte1 & 0x80 != 0 { statistics.transportErrors += 1 }
        let hasPayload = byte3 & 0x10 != 0
        var payloadStart = 4
        var discontinuity = false
        var randomAccess = false
        if byte3 & 0x20 != 0 {
            let fieldLength = Int(packet.load(fromByteOffset: 4, as: UInt8.self))
            if fieldLength > (hasPayload ? 182 : 183) {
                statistics.adaptationFieldErrors += 1
                handler(
                    .error(
                        MPEGTSError(
                            .invalidLength, offset: offset, pid: UInt16(pid), "adaptation_field_length \(fieldLength)"))
                )
                return
            }
            if fieldLength > 0 {
                let flags = packet.load(fromByteOffset: 5, as: UInt8.self)
                discontinuity = flags & 0x80 != 0
                randomAccess = flags & 0x40 != 0
                if flags & 0x10 != 0, fieldLength >= 7, options.reportPCR, pcrPIDs.contains(UInt16(pid)) {
                    var raw: UInt64 = 0
                    for index in 6..<12 { raw = raw << 8 | UInt64(packet.load(fromByteOffset: index, as: UInt8.self)) }
                    handler(
                        .pcr(PCR(base: raw >> 15, extension: UInt16(raw & 0x1FF)), pid: UInt16(pid), offset: offset))
                }
            }
            payloadStart = 5 + fieldLength
        }
        guard hasPayload, pid != 0x1FFF else { return }
        // Continuity: +1 per packet with payload; one duplicate allowed; the discontinuity indicator resets.
        let counter = byte3 & 0x0F
        let last = counters[pid].lastCC
        let tail = packet.loadUnaligned(fromByteOffset: 180, as: UInt64.self)
        if last != 0xFF && !discontinuity {
            if counter == last {
                if !counters[pid].duplicateSeen && counters[pid].lastByte1 == byte1 && counters[pid].lastTail == tail {
                    counters[pid].duplicateSeen = true
                    return  // a duplicate packet: same payload again
                }
                continuityError(
                    pid: pid, offset: offset, expected: (last &+ 1) & 0x0F, got: counter, counters: counters, handler)
            } else if counter != (last &+ 1) & 0x0F {
                continuityError(
                    pid: pid, offset: offset, expected: (last &+ 1) & 0x0F, got: counter, counters: counters, handler)
            } else {
                counters[pid].duplicateSeen = false
            }
        } else {
            counters[pid].duplicateSeen = false
        }
        counters[pid].lastCC = counter
        counters[pid].lastByte1 = byte1
        counters[pid].lastTail = tail
        let role = roles[pid]
        guard role != .none, payloadStart < 188 else { return }
        if byte3 & 0xC0 != 0 {
            statistics.scrambledPackets += 1
            return
        }
        let payload = UnsafeRawBufferPointer(start: packet + payloadStart, count: 188 - payloadStart)
        let unitStart = byte1 & 0x40 != 0
        switch role {
        case .pes:
            let slot = slots[pid]
            // Most packets continue a PES whose start was already read: skip them unless the stream still
            // wants payload (keyframe decision, split header, codec details, reassembly).
            guard unitStart || (slot >= 0 && Int(slot) < payloadWanted.count && payloadWanted[Int(slot)]) else {
                return
            }
            handlePES(
                slot: slot, payload: payload, unitStart: unitStart, randomAccess: randomAccess, offset: offset,
                handler)
            if slot >= 0 && Int(slot) < payloadWanted.count {
                refreshPayloadWanted(Int(slot))
                counters[pid].countOnly = !payloadWanted[Int(slot)]
            }
        case .pat, .pmt, .section:
            handleSectionPayload(
                pid: UInt16(pid), payload: payload, unitStart: unitStart,
                payloadOffset: offset + Int64(payloadStart), handler)
            if rolesChanged { refreshCountOnly(counters) }
        case .none:
            break
        }
    }

    private mutating func continuityError(
        pid: Int, offset: Int64, expected: UInt8, got: UInt8, counters: UnsafeMutableBufferPointer<PIDCounters>,
        _ handler: (DemuxEvent) -> Void
    ) {
        statistics.continuityErrors += 1
        counters[pid].continuityErrors += 1
        counters[pid].duplicateSeen = false
        if statistics.continuityErrorSamples.count < 16 {
            statistics.continuityErrorSamples.append(.init(pid: UInt16(pid), offset: offset))
        }
        assemblers[UInt16(pid)]?.reset()
        handler(
            .error(
                MPEGTSError(
                    .continuity, offset: offset, pid: UInt16(pid), "continuity counter \(got), expected \(expected)")))
    }

    // MARK: PES

    /// Whether a stream's next non-start packets must be looked at.
    @inline(__always)
    private mutating func refreshPayloadWanted(_ index: Int) {
        payloadWanted[index] =
            streams[index].awaitingHeader || streams[index].pending != nil || streams[index].reassembling != nil
            || (streams[index].wantsDetails && !streams[index].detailsBuffer.isEmpty)
    }

    @inline(__always)
    private mutating func handlePES(
        slot: Int32, payload: UnsafeRawBufferPointer, unitStart: Bool, randomAccess: Bool, offset: Int64,
        _ handler: (DemuxEvent) -> Void
    ) {
        guard slot >= 0, Int(slot) < streams.count else { return }
        let index = Int(slot)
        if unitStart {
            endPES(slot: slot, handler)
            if let required = PESHeader.requiredLength(payload), required <= payload.count {
                startPES(index: index, bytes: payload, offset: offset, randomAccess: randomAccess, handler)
            } else {
                streams[index].awaitingHeader = true
                streams[index].headerBuffer = Array(payload)
                streams[index].headerOffset = offset
                streams[index].headerRandomAccess = randomAccess
            }
            return
        }
        if streams[index].awaitingHeader {
            streams[index].headerBuffer.append(contentsOf: payload)
            let buffered = streams[index].headerBuffer
            let ready = buffered.withUnsafeBytes { raw in
                PESHeader.requiredLength(raw).map { $0 <= raw.count }
            }
            if ready == true {
                streams[index].awaitingHeader = false
                streams[index].headerBuffer = []
                let headerOffset = streams[index].headerOffset
                let headerRandomAccess = streams[index].headerRandomAccess
                buffered.withUnsafeBytes { raw in
                    startPES(index: index, bytes: raw, offset: headerOffset, randomAccess: headerRandomAccess, handler)
                }
            } else if buffered.count > 512 {
                streams[index].awaitingHeader = false
                streams[index].headerBuffer = []
                statistics.pesErrors += 1
                handler(
                    .error(
                        MPEGTSError(
                            .invalidLength, offset: streams[index].headerOffset, pid: streams[index].pid,
                            "PES header too long")))
            }
            return
        }
        if streams[index].pending != nil {
            streams[index].scanner?.scan(payload)
            decideKeyframe(index: index, handler)
        }
        if streams[index].wantsDetails && !streams[index].detailsBuffer.isEmpty
            && streams[index].detailsBuffer.count < 1 << 17
        {
            streams[index].detailsBuffer.append(contentsOf: payload)
        }
        if streams[index].reassembling != nil { appendPayload(index: index, payload, handler) }
    }

    @inline(__always)
    private mutating func startPES(
        index: Int, bytes: UnsafeRawBufferPointer, offset: Int64, randomAccess: Bool, _ handler: (DemuxEvent) -> Void
    ) {
        let pid = streams[index].pid
        let header: PESHeader
        do {
            header = try PESHeader.parse(bytes, offset: offset)
        } catch {
            statistics.pesErrors += 1
            var located = error
            located.pid = pid
            handler(.error(located))
            return
        }
        let rest = UnsafeRawBufferPointer(rebasing: bytes[min(header.headerLength, bytes.count)...])
        if streams[index].needsSniff, let sniffed = Codec.sniff(streamID: header.streamID, payload: rest) {
            streams[index].setCodec(sniffed)
            handler(.streamIdentified(sniffed, pid: pid))
        }
        if options.detectCodecDetails && streams[index].wantsDetails {
            startDetails(index: index, rest, handler)
        }
        var info = PESInfo(
            pid: pid, streamID: header.streamID, pts: header.pts, dts: header.dts, isKeyframe: false,
            randomAccessIndicator: randomAccess, offset: offset, packetLength: header.packetLength)
        let scans = options.scanKeyframes && streams[index].scans
        if !scans { info.isKeyframe = streams[index].isAudio || randomAccess }
        // The reassembly's info is set before the keyframe decision, which updates it (the decision may come
        // from these first bytes already).
        if options.reassemblePES {
            streams[index].reassembling = header
            streams[index].reassemblyInfo = info
            streams[index].payload.removeAll(keepingCapacity: true)
            streams[index].payloadOverflow = false
            appendPayload(index: index, rest, handler)
        }
        if scans {
            streams[index].scanner?.reset()
            streams[index].scanner?.scan(rest)
            streams[index].pending = info
            decideKeyframe(index: index, handler)
        } else {
            handler(.pes(info))
        }
    }

    private mutating func appendPayload(index: Int, _ bytes: UnsafeRawBufferPointer, _ handler: (DemuxEvent) -> Void) {
        guard !streams[index].payloadOverflow else { return }
        if streams[index].payload.count + bytes.count > options.maximumPESSize {
            streams[index].payloadOverflow = true
            handler(
                .error(
                    MPEGTSError(
                        .invalidLength, offset: streams[index].reassemblyInfo?.offset, pid: streams[index].pid,
                        "PES longer than \(options.maximumPESSize) bytes")))
            return
        }
        streams[index].payload.append(contentsOf: bytes)
    }

    private mutating func decideKeyframe(index: Int, _ handler: (DemuxEvent) -> Void) {
        guard var info = streams[index].pending, let scanner = streams[index].scanner else { return }
        switch scanner.result {
        case .undecided: return
        case .keyframe: info.isKeyframe = true
        case .notKeyframe: info.isKeyframe = false
        }
        streams[index].pending = nil
        if let reassembly = streams[index].reassemblyInfo, reassembly.offset == info.offset {
            streams[index].reassemblyInfo = info
        }
        handler(.pes(info))
    }

    /// Codec details: audio frame headers are read from the first bytes; video parameter sets are gathered over
    /// the PES and read at its end.
    private mutating func startDetails(index: Int, _ rest: UnsafeRawBufferPointer, _ handler: (DemuxEvent) -> Void) {
        let codec = streams[index].codec
        if codec == .h264 || codec == .hevc {
            streams[index].detailsBuffer = Array(rest)
            return
        }
        if let details = CodecDetails.parse(codec: codec, payload: Array(rest.prefix(64))) {
            streams[index].wantsDetails = false
            handler(.codecDetails(details, pid: streams[index].pid))
        } else {
            streams[index].detailsTries += 1
            if streams[index].detailsTries >= 8 { streams[index].wantsDetails = false }
        }
    }

    @inline(__always)
    private mutating func endDetails(index: Int, _ handler: (DemuxEvent) -> Void) {
        guard streams[index].wantsDetails, !streams[index].detailsBuffer.isEmpty else { return }
        let buffer = streams[index].detailsBuffer
        streams[index].detailsBuffer = []
        if let details = CodecDetails.parse(codec: streams[index].codec, payload: buffer) {
            streams[index].wantsDetails = false
            handler(.codecDetails(details, pid: streams[index].pid))
        } else {
            streams[index].detailsTries += 1
            if streams[index].detailsTries >= 64 { streams[index].wantsDetails = false }
        }
    }

    /// Reports the PES in progress on a stream (at the next unit start and at the end of the input).
    private mutating func endPES(slot: Int32, _ handler: (DemuxEvent) -> Void) {
        guard slot >= 0, Int(slot) < streams.count else { return }
        let index = Int(slot)
        if options.detectCodecDetails { endDetails(index: index, handler) }
        if var info = streams[index].pending {
            info.isKeyframe = false
            streams[index].pending = nil
            handler(.pes(info))
            if streams[index].reassemblyInfo?.offset == info.offset { streams[index].reassemblyInfo = info }
        }
        if streams[index].awaitingHeader {
            streams[index].awaitingHeader = false
            streams[index].headerBuffer = []
            statistics.pesErrors += 1
            handler(
                .error(
                    MPEGTSError(.truncated, offset: streams[index].headerOffset, pid: streams[index].pid, "PES header"))
            )
        }
        if let header = streams[index].reassembling, let info = streams[index].reassemblyInfo {
            var payload = streams[index].payload
            if header.packetLength > 0 {
                let expected = header.packetLength + 6 - header.headerLength
                if expected >= 0 && expected < payload.count { payload.removeLast(payload.count - expected) }
            }
            streams[index].reassembling = nil
            streams[index].reassemblyInfo = nil
            streams[index].payload.removeAll(keepingCapacity: true)
            handler(.pesPacket(PESPacket(info: info, header: header, payload: payload)))
        }
    }

    // MARK: Sections

    private mutating func handleSectionPayload(
        pid: UInt16, payload: UnsafeRawBufferPointer, unitStart: Bool, payloadOffset: Int64,
        _ handler: (DemuxEvent) -> Void
    ) {
        // Fast path for the common case: a table repeated in one packet (pointer_field 0, then stuffing) with
        // the same bytes as last time on this PID, while nothing is being assembled.
        if unitStart && sectionIdle[Int(pid)] && payload.count >= 4 && payload[0] == 0 {
            let length = 3 + (Int(payload[2] & 0x0F) << 8 | Int(payload[3]))
            if 1 + length < payload.count && payload[1 + length] == 0xFF
                && repeatedSections[Int(pid)].count == length
                && repeatedSections[Int(pid)].withUnsafeBytes({
                    ByteComparison.equal($0, UnsafeRawBufferPointer(rebasing: payload[1..<(1 + length)]))
                })
            {
                return
            }
        }
        var complete: [([UInt8], Int64)] = []
        var errors: [MPEGTSError] = []
        let idle = assemblers[pid, default: SectionAssembler()].push(
            payload, payloadUnitStart: unitStart, offset: payloadOffset,
            section: { complete.append(($0, $1)) }, error: { errors.append($0) })
        sectionIdle[Int(pid)] = idle
        let single = unitStart && complete.count == 1 && idle && payload.first == 0
        repeatedSections[Int(pid)] = []
        for var error in errors {
            error.pid = pid
            handler(.error(error))
        }
        for (bytes, offset) in complete {
            let accepted = handleSection(pid: pid, bytes: bytes, offset: offset, handler)
            // Remember a checked, non-SCTE-35 table that fits in one packet, for the fast path above.
            if single && accepted && bytes.first != 0xFC { repeatedSections[Int(pid)] = bytes }
        }
    }

    /// Checks and reports one section; returns whether it passed its checks (or repeats one that did).
    @discardableResult
    private mutating func handleSection(pid: UInt16, bytes: [UInt8], offset: Int64, _ handler: (DemuxEvent) -> Void)
        -> Bool
    {
        // Tables are repeated several times a second: a section identical to the last one with the same PID,
        // table id, extension and number was already checked and reported. SCTE-35 sections are always reported.
        if bytes.count >= 8 && bytes[0] != 0xFC {
            let key =
                UInt64(pid) << 32 | UInt64(bytes[0]) << 24 | UInt64(bytes[3]) << 16 | UInt64(bytes[4]) << 8
                | UInt64(bytes[6])
            if lastSections[key] == bytes { return true }
            lastSections[key] = bytes
        }
        let section: PSISection
        do {
            section = try PSISection(bytes: bytes, offset: offset)
        } catch {
            if error.code == .crcMismatch { statistics.crcErrors += 1 }
            if bytes.count >= 8 {
                let key =
                    UInt64(pid) << 32 | UInt64(bytes[0]) << 24 | UInt64(bytes[3]) << 16 | UInt64(bytes[4]) << 8
                    | UInt64(bytes[6])
                lastSections[key] = nil
            }
            var located = error
            located.pid = pid
            handler(.error(located))
            return false
        }
        let role = roles[Int(pid)]
        switch (section.tableID, role) {
        case (0x00, .pat) where section.sectionSyntaxIndicator:
            guard let sections = gather(section, pid: pid), isNewTable(pid: pid, sections: sections) else {
                return true
            }
            do {
                let table = try ProgramAssociationTable(sections: sections, offset: offset)
                programAssociation = table
                programMaps = programMaps.filter { entry in table.programs.contains { $0.programNumber == entry.key } }
                rebuildRoles()
                handler(.programAssociation(table, offset: offset))
            } catch {
                handler(.error(error.located(pid: pid)))
            }
        case (0x02, .pmt) where section.sectionSyntaxIndicator:
            guard let sections = gather(section, pid: pid), isNewTable(pid: pid, sections: sections) else {
                return true
            }
            do {
                let table = try ProgramMapTable(sections: sections, offset: offset)
                let listed = programAssociation?.programs.contains {
                    $0.programNumber == table.programNumber && $0.pmtPID == pid
                }
                guard listed == true else { return true }
                programMaps[table.programNumber] = table
                rebuildRoles()
                handler(.programMap(table, pid: pid, offset: offset))
            } catch {
                handler(.error(error.located(pid: pid)))
            }
        default:
            handler(.section(section, pid: pid, offset: offset))
        }
        return true
    }

    /// Whether a PAT/PMT (all its sections) differs from the last one seen for the same PID and table id
    /// extension: compared by the sections' CRC_32 values.
    private mutating func isNewTable(pid: UInt16, sections: [PSISection]) -> Bool {
        guard let first = sections.first else { return false }
        let key = UInt32(pid) << 16 | UInt32(first.tableIDExtension)
        var signature: UInt64 = 0
        for section in sections {
            let count = section.bytes.count
            guard count >= 4 else { return true }
            let crc =
                UInt32(section.bytes[count - 4]) << 24 | UInt32(section.bytes[count - 3]) << 16
                | UInt32(section.bytes[count - 2]) << 8 | UInt32(section.bytes[count - 1])
            signature = signature &* 0x1_0000_01B3 ^ UInt64(crc)
        }
        if lastTableCRC[key] == signature { return false }
        lastTableCRC[key] = signature
        return true
    }

    /// Collects the sections of a PAT or PMT split over several sections (section_number 0 ...
    /// last_section_number, one version); returns them in order once the set is complete, else nil. A table in
    /// one section is returned at once.
    private mutating func gather(_ section: PSISection, pid: UInt16) -> [PSISection]? {
        guard section.sectionNumber <= section.lastSectionNumber else { return nil }
        if section.lastSectionNumber == 0 { return [section] }
        let key = UInt64(pid) << 24 | UInt64(section.tableID) << 16 | UInt64(section.tableIDExtension)
        // Bounded: input that keeps inventing table ids extensions cannot make this grow without limit.
        if sectionSets[key] == nil && sectionSets.count >= 64 { sectionSets.removeAll() }
        var set = (sectionSets[key] ?? []).filter {
            $0.version == section.version && $0.lastSectionNumber == section.lastSectionNumber
                && $0.sectionNumber != section.sectionNumber
        }
        set.append(section)
        set.sort { $0.sectionNumber < $1.sectionNumber }
        sectionSets[key] = set
        return set.count == Int(section.lastSectionNumber) + 1 ? set : nil
    }

    /// Recomputes the `countOnly` flag of every PID from its role (and, for PES, whether the stream still
    /// wants payload). The null PID never counts only: it has no continuity counter.
    private mutating func refreshCountOnly(_ counters: UnsafeMutableBufferPointer<PIDCounters>) {
        rolesChanged = false
        for pid in 0..<min(counters.count, roles.count) {
            let countOnly: Bool
            switch roles[pid] {
            case .none:
                countOnly = pid != 0x1FFF && !(options.reportPCR && pcrPIDs.contains(UInt16(pid)))
            case .pes:
                let slot = Int(slots[pid])
                countOnly =
                    slot >= 0 && slot < payloadWanted.count && !payloadWanted[slot]
                    && !(options.reportPCR && pcrPIDs.contains(UInt16(pid)))
            case .pat, .pmt, .section:
                countOnly = false
            }
            counters[pid].countOnly = countOnly
        }
    }

    /// Recomputes which PIDs carry PMTs, PES and sections from the current PAT and PMTs.
    private mutating func rebuildRoles() {
        rolesChanged = true
        for pid in 0..<8192 where pid != 0 && pid != 0x11 { roles[pid] = .none }
        pcrPIDs = []
        guard let programAssociation else { return }
        for entry in programAssociation.programs { roles[Int(entry.pmtPID & 0x1FFF)] = .pmt }
        for number in programMaps.keys.sorted() {
            guard let table = programMaps[number] else { continue }
            pcrPIDs.insert(table.pcrPID)
            for stream in table.streams {
                let pid = Int(stream.pid & 0x1FFF)
                guard roles[pid] == .none else { continue }
                let codec = stream.codec
                if codec.isSectionStream {
                    roles[pid] = .section
                    continue
                }
                roles[pid] = .pes
                if let slot = slotForPID[stream.pid], Int(slot) < streams.count {
                    if streams[Int(slot)].codec != codec {
                        streams[Int(slot)] = StreamState(
                            pid: stream.pid, codec: codec, scanner: Self.scanner(for: codec))
                        payloadWanted[Int(slot)] = false
                    }
                    slots[pid] = slot
                } else {
                    let slot = Int32(streams.count)
                    streams.append(StreamState(pid: stream.pid, codec: codec, scanner: Self.scanner(for: codec)))
                    payloadWanted.append(false)
                    slotForPID[stream.pid] = slot
                    slots[pid] = slot
                }
            }
        }
    }

    private static func scanner(for codec: Codec) -> KeyframeScanner? {
        if codec == .h264 { return KeyframeScanner(syntax: .h264) }
        if codec == .hevc { return KeyframeScanner(syntax: .hevc) }
        if codec == .mpeg2Video || codec == .mpeg1Video { return KeyframeScanner(syntax: .mpegVideo) }
        return nil
    }
}

extension MPEGTSError {
    func located(pid: UInt16) -> MPEGTSError {
        var copy = self
        copy.pid = pid
        return copy
    }
}
