import FileRange
import HTTPWire
import LoopbackHTTP
import MPEGTS

/// Serving a file whose packets are not plain 188-byte TS from byte 0 (192-byte M2TS, 204-byte DVB, or a file that
/// begins in the middle of a packet) as plain 188-byte TS: the served `media.ts` is the file's packets without their
/// extra bytes (`MPEGTS.PacketLayout`), made on the fly from the file; the playlists' byte ranges are in those bytes.
extension TSPlaybackSession {
    /// The packet layout `media.ts` is served by: the index's runs; while the file is still being indexed, its last
    /// run (or, before the first, the packets from the first one found at open) taken on to the file's current end.
    func servedLayout() -> PacketLayout {
        let index = self.index
        var layout = index?.layout ?? PacketLayout(packetSize: probe.packetSize, runs: [])
        guard index?.isComplete != true, let size = try? file.size() else { return layout }
        if let last = layout.runs.last {
            let extra = size > last.fileOffset ? (size - last.fileOffset) / UInt64(last.packetSize) : 0
            layout.runs[layout.runs.count - 1].packets = max(last.packets, extra)
        } else if size > firstPacketOffset {
            layout.runs = [
                PacketRun(
                    fileOffset: firstPacketOffset, servedOffset: 0,
                    packets: (size - firstPacketOffset) / UInt64(layout.packetSize), packetSize: layout.packetSize)
            ]
        }
        return layout
    }

    /// A segment of the file (offsets in the file) as its range in `media.ts` as served.
    static func served(_ segment: PlannedSegment, layout: PacketLayout?) -> PlannedSegment {
        guard let layout, !layout.isIdentity else { return segment }
        let start = layout.servedOffset(ofFileOffset: segment.offset)
        let end = layout.servedOffset(ofFileOffset: segment.offset + segment.length)
        return PlannedSegment(offset: start, length: end - min(end, start), duration: segment.duration)
    }

    /// `media.ts` made from the file's packets: the whole view, or the one range a `Range` header asks for (206; 416
    /// when it lies past the end; several ranges are answered with the whole view, as RFC 9110 §14.2 allows).
    func servedPacketsResponse(_ request: HTTPRequest) -> HTTPResponse {
        let layout = servedLayout()
        return Self.rangedResponse(request, total: layout.servedLength) { wanted in
            .stream(.init(length: wanted.length, ServedPackets(file: file, layout: layout, range: wanted)))
        }
    }

    /// A TS resource of `total` bytes made on the fly: the whole, or the one range a `Range` header asks for (206;
    /// 416 when it lies past the end; several ranges are answered with the whole, as RFC 9110 §14.2 allows), its
    /// body from `body` for the bytes wanted (never called for none).
    static func rangedResponse(
        _ request: HTTPRequest, total: UInt64, body: (ByteRange) -> HTTPResponse.Body
    ) -> HTTPResponse {
        var headers = HTTPHeaders(reservingCapacity: 4)
        headers.add(name: "Content-Type", value: "video/mp2t")
        headers.add(name: "Accept-Ranges", value: "bytes")
        headers.add(name: "Cache-Control", value: "no-cache")
        var status = HTTPStatus.ok
        var wanted = ByteRange(offset: 0, length: total)
        if request.method == .get || request.method == .head, let value = request.headers.first(name: "Range"),
            let range = RangeRequest.parse(value)
        {
            switch range.resolve(length: total, maxRanges: 16) {
            case .full:
                break
            case .unsatisfiable:
                var fields = HTTPHeaders(reservingCapacity: 1)
                fields.add(name: "Content-Range", value: ContentRange.unsatisfiedValue(completeLength: total))
                return HTTPResponse(status: .rangeNotSatisfiable, headers: fields, body: .empty)
            case .partial(let ranges):
                if ranges.count == 1 {
                    status = .partialContent
                    wanted = ranges[0]
                    headers.add(name: "Content-Range", value: ContentRange.value(for: ranges[0], completeLength: total))
                }
            }
        }
        guard let wanted, wanted.length > 0 else {
            return HTTPResponse(status: status, headers: headers, body: .empty)
        }
        return HTTPResponse(status: status, headers: headers, body: body(wanted))
    }
}

/// The bytes of one range of a `MPEGTS.PacketLayout`'s served view, read from the file in steps of at most 256 KiB of
/// packets (one read and one buffer a step, nothing per packet). Ends with an error, which closes the connection,
/// when the file no longer holds a packet the layout names.
struct ServedPackets: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let file: FileStreamer
    let layout: PacketLayout
    let range: ByteRange

    struct ReadFailure: Error {
        var offset: UInt64
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: ServedPackets
        var position: UInt64

        mutating func next() async throws -> [UInt8]? {
            let end = sequence.range.upperBound
            guard position < end else { return nil }
            let layout = sequence.layout
            guard let found = layout.locate(servedOffset: position) else { throw ReadFailure(offset: position) }
            let wanted = end - position
            // The packets that hold the next served bytes, at most 256 KiB of output a step.
            let needed = (UInt64(found.within) + Swift.min(wanted, 256 << 10) + 187) / 188
            let packets = Int(Swift.min(needed, found.packetsLeft))
            let bytes = try await sequence.file.readOnPool(at: found.packetOffset, length: packets * found.packetSize)
            var output: [UInt8] = []
            output.reserveCapacity(packets * 188)
            let limit = Int(Swift.min(wanted, UInt64(packets * 188)))
            let added = bytes.withUnsafeBytes {
                layout.appendServed(
                    $0, packetSize: found.packetSize, skip: found.within, limit: limit, to: &output)
            }
            guard added > 0 else { throw ReadFailure(offset: found.packetOffset) }
            position += UInt64(added)
            return output
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(sequence: self, position: range.offset)
    }
}

/// One program of several, served as TS: each media segment is its own resource (`program/<n>.ts`), the segment's
/// packets of that program alone with a PAT that names it alone (`MPEGTS.ProgramFilter`), made on request from the
/// index's packet runs.
extension TSPlaybackSession {
    /// Whether TS segments are made on request (`program/<n>.ts`): filtered to ``program`` (a file of several
    /// programs served as TS), or a joined recording whose later parts are on other programs or PIDs, served on its
    /// first part's (``remapsParts``).
    var filtersProgram: Bool {
        (program != nil || remapsParts) && presentation == nil && givenSegments == nil
    }

    /// Whether the index's parts are on different programs, PMT PIDs or stream PIDs, so that TS segments carry each
    /// later part moved onto the first part's program and PIDs (`MPEGTS.PartRemapper`).
    var remapsParts: Bool {
        guard givenSegments == nil, let parts = index?.parts, let first = parts.first else { return false }
        return parts.dropFirst().contains {
            $0.programNumber != first.programNumber || $0.pmtPID != first.pmtPID || $0.pids != first.pids
        }
    }

    /// What a made segment's packets go through: the remapper of the part that holds `offset` (a joined recording
    /// on several programs or PIDs), else the program's filter.
    enum SegmentFilter {
        case program(ProgramFilter)
        case part(PartRemapper)

        func append(_ packets: UnsafeRawBufferPointer, packetSize: Int, syncOffset: Int, to output: inout [UInt8])
            -> Int
        {
            switch self {
            case .program(let filter):
                filter.append(packets, packetSize: packetSize, syncOffset: syncOffset, to: &output)
            case .part(let remapper):
                remapper.append(packets, packetSize: packetSize, syncOffset: syncOffset, to: &output)
            }
        }
    }

    /// The filter of the segment at file offset `offset`.
    func segmentFilter(at offset: UInt64) -> SegmentFilter? {
        if remapsParts, let index, let first = index.parts.first, let position = Int64(exactly: offset) {
            let number = index.parts.lastIndex { $0.offset <= position } ?? 0
            return .part(PartRemapper(from: index.parts[number], to: first, version: number))
        }
        return programFilter().map { .program($0) }
    }

    /// The filter for ``program``: its PMT PID from the index, its streams and PCR PID from the probe's PMT.
    func programFilter() -> ProgramFilter? {
        guard let program, let index,
            let entry = index.programs.first(where: { $0.programNumber == program })
        else { return nil }
        let table = probe.programs.first { $0.programNumber == program }
        let pids =
            entry.streamPIDs + [entry.pcrPID] + (table?.streams.map(\.pid) ?? []) + (table.map { [$0.pcrPID] } ?? [])
        return ProgramFilter(programNumber: program, pmtPID: entry.pmtPID, pids: pids)
    }

    /// `program/<n>.ts`: media segment `n` filtered to the program, streamed: its length is known from the index's
    /// packets per PID (`MPEGTS.TSIndex.spanPacketCounts`), so it carries `Content-Length` and a `Range` gives exactly
    /// those bytes of the filtered segment (the segment is filtered from its start and the bytes before the range
    /// dropped); nothing is held but one step's packets. Without the counts (an index of a file whose packets could
    /// not all be counted), and for `program-iframe/<n>.ts` (I-frame `n`, after a PAT naming the program alone and
    /// the program's PMT packet, the first in the file, so that it can be read on its own), the bytes are made in
    /// memory and Range answered from them.
    func programSegmentResponse(_ name: String, iFrame: Bool, request: HTTPRequest) -> HTTPResponse {
        guard name.hasSuffix(".ts"), let number = Int(name.dropLast(3)), number >= 0 else {
            return .error(.notFound)
        }
        let planned = iFrame ? (iFrameSegments ?? []) : segments
        guard number < planned.count, let filter = segmentFilter(at: planned[number].offset) else {
            return .error(.notFound)
        }
        let layout = servedLayout()
        let range = Self.served(planned[number], layout: layout)
        if !iFrame, case .program(let programFilter) = filter, let index,
            let packets = Self.filteredPackets(of: planned[number], in: index, keptBy: programFilter)
        {
            let file = self.file
            return Self.rangedResponse(request, total: packets * 188) { wanted in
                .stream(
                    .init(
                        length: wanted.length,
                        FilteredPackets(
                            file: file, layout: layout, served: range, filter: programFilter, range: wanted)))
            }
        }
        var output: [UInt8] = []
        if iFrame {
            let tables: [UInt8]?
            switch filter {
            case .program(let programFilter): tables = programTables(programFilter, layout: layout)
            case .part(let remapper): tables = partTables(remapper, at: planned[number].offset, layout: layout)
            }
            guard let tables else { return .error(.notFound) }
            output = tables
        }
        guard appendFiltered(range, layout: layout, filter: filter, to: &output) else {
            return .error(.internalServerError)
        }
        return .bytes(output, contentType: "video/mp2t")
    }

    /// Appends the packets `filter` keeps from `range` (in the served view of `layout`) to `output`; false when the
    /// file no longer holds a packet the layout names.
    func appendFiltered(_ range: PlannedSegment, layout: PacketLayout, filter: SegmentFilter, to output: inout [UInt8])
        -> Bool
    {
        output.reserveCapacity(output.count + Int(clamping: range.length / 2))
        var position = range.offset
        let end = range.offset + range.length
        while position < end, let found = layout.locate(servedOffset: position) {
            let packets = Int(Swift.min(found.packetsLeft, (end - position + 187) / 188, 2048))
            let size = found.packetSize
            guard let bytes = try? file.read(at: found.packetOffset, length: packets * size),
                bytes.count == packets * size
            else { return false }
            _ = bytes.withUnsafeBytes {
                filter.append($0, packetSize: size, syncOffset: size == 192 ? 4 : 0, to: &output)
            }
            position += UInt64(packets * 188)
        }
        return true
    }

    /// The length of `program-iframe/<n>.ts` for the I-frame `frame` (offsets in the file): the PAT and PMT packets
    /// before it and the packets of its range that the segment's filter keeps, exactly as served; nil when the
    /// frame's packets cannot be read or no filter applies. Reads the frame's bytes once.
    func servedIFrameLength(_ frame: PlannedSegment, layout: PacketLayout, scratch: inout [UInt8]) -> UInt64? {
        guard let filter = segmentFilter(at: frame.offset) else { return nil }
        scratch.removeAll(keepingCapacity: true)
        guard appendFiltered(Self.served(frame, layout: layout), layout: layout, filter: filter, to: &scratch) else {
            return nil
        }
        // The tables in front: one PAT packet and one PMT packet.
        return UInt64(scratch.count) + 2 * 188
    }

    /// The packets `filter` keeps from `segment` (offsets in the file; it starts at the file's start or a keyframe
    /// and ends at a keyframe or where the index ends), from the index's packets per PID of each keyframe span; nil
    /// when the index has no counts or the segment does not lie on its spans.
    static func filteredPackets(of segment: PlannedSegment, in index: TSIndex, keptBy filter: ProgramFilter)
        -> UInt64?
    {
        let spans = index.spanPacketCounts
        guard !spans.isEmpty, spans.count == index.keyframes.count + 1 else { return nil }
        let keyframes = index.keyframes
        /// The span that starts at file offset `offset` (0: the head span; a keyframe's: the span after it).
        func span(startingAt offset: UInt64) -> Int? {
            if offset == 0 { return 0 }
            var low = 0
            var high = keyframes.count
            while low < high {
                let middle = (low + high) / 2
                if UInt64(clamping: keyframes[middle].offset) < offset { low = middle + 1 } else { high = middle }
            }
            guard low < keyframes.count, UInt64(clamping: keyframes[low].offset) == offset else { return nil }
            return low + 1
        }
        let end = segment.offset + segment.length
        let indexEnd = index.isComplete ? Swift.max(index.fileSize, index.bytesIndexed) : index.bytesIndexed
        guard let first = span(startingAt: segment.offset),
            let last = end >= indexEnd ? spans.count : span(startingAt: end), first <= last
        else { return nil }
        return spans[first..<last].reduce(UInt64(0)) { $0 + $1.packets(keptBy: filter) }
    }

    /// The segments with the lengths served: filtered to the program where TS segments are (from the index's
    /// counts; a segment without them keeps its unfiltered length, which overstates), else the byte ranges of
    /// `media.ts`. The multivariant playlist's BANDWIDTH and AVERAGE-BANDWIDTH are measured on these; `filtered`
    /// says whether every length is a filtered one.
    func servedSegmentSizes() -> (segments: [PlannedSegment], filtered: Bool) {
        let layout = servesFileAsIs ? nil : index?.layout
        let planned = segments
        // Parts remapped onto the first keep their packets: their lengths are the byte ranges'.
        guard filtersProgram, !remapsParts, let index, let filter = programFilter() else {
            return (planned.map { Self.served($0, layout: layout) }, false)
        }
        var allFiltered = true
        let sizes = planned.map { segment in
            guard let packets = Self.filteredPackets(of: segment, in: index, keptBy: filter) else {
                allFiltered = false
                return Self.served(segment, layout: layout)
            }
            return PlannedSegment(offset: segment.offset, length: packets * 188, duration: segment.duration)
        }
        return (sizes, allFiltered && !planned.isEmpty)
    }

    /// A PAT naming the target program and the first PMT packet of the part that holds file offset `offset`,
    /// rewritten onto the target (looked for from the part's start, in its first 4 MiB), for I-frame segments.
    func partTables(_ remapper: PartRemapper, at offset: UInt64, layout: PacketLayout) -> [UInt8]? {
        guard let index, let position = Int64(exactly: offset),
            let part = index.parts.last(where: { $0.offset <= position }),
            let partStart = UInt64(exactly: part.offset)
        else { return nil }
        var served = layout.servedOffset(ofFileOffset: partStart)
        let limit = Swift.min(layout.servedLength, served + (4 << 20))
        while served < limit, let found = layout.locate(servedOffset: served) {
            let packets = Int(Swift.min(found.packetsLeft, 1024))
            let size = found.packetSize
            guard let bytes = try? file.read(at: found.packetOffset, length: packets * size) else { return nil }
            var start = size == 192 ? 4 : 0
            while start + 188 <= bytes.count {
                let pid = UInt16(bytes[start + 1] & 0x1F) << 8 | UInt16(bytes[start + 2])
                if bytes[start] == 0x47, pid == part.pmtPID,
                    let pmt = bytes.withUnsafeBytes({ remapper.rewrittenPMT($0, at: start) })
                {
                    return remapper.patPacket() + pmt
                }
                start += size
            }
            served += UInt64(packets * 188)
        }
        return nil
    }

    /// A PAT naming the program alone and the program's first PMT packet in the file (looked for in its first
    /// 4 MiB), for I-frame segments; nil when there is none.
    func programTables(_ filter: ProgramFilter, layout: PacketLayout) -> [UInt8]? {
        guard let program, let index, let pmtPID = index.programs.first(where: { $0.programNumber == program })?.pmtPID
        else { return nil }
        var position: UInt64 = 0
        let limit = Swift.min(layout.servedLength, 4 << 20)
        while position < limit, let found = layout.locate(servedOffset: position) {
            let packets = Int(Swift.min(found.packetsLeft, 1024))
            let size = found.packetSize
            guard let bytes = try? file.read(at: found.packetOffset, length: packets * size) else {
                return nil
            }
            var offset = size == 192 ? 4 : 0
            while offset + 188 <= bytes.count {
                let pid = UInt16(bytes[offset + 1] & 0x1F) << 8 | UInt16(bytes[offset + 2])
                if bytes[offset] == 0x47, pid == pmtPID, bytes[offset + 1] & 0x40 != 0 {
                    return filter.patPacket() + bytes[offset..<(offset + 188)]
                }
                offset += size
            }
            position += UInt64(packets * 188)
        }
        return nil
    }
}

/// The bytes of one range of a segment filtered to one program (`MPEGTS.ProgramFilter`): the segment's packets read
/// from the file in steps of at most 2048 packets, filtered, the bytes before the range dropped and those after it left
/// out. Ends with an error, which closes the connection, when the file no longer holds a packet the layout names or
/// the filtered segment is shorter than the range (the file changed under the index).
struct FilteredPackets: AsyncSequence, Sendable {
    typealias Element = [UInt8]
    let file: FileStreamer
    let layout: PacketLayout
    /// The segment in the served (188-byte) view.
    let served: PlannedSegment
    let filter: ProgramFilter
    /// The bytes wanted, in the filtered segment.
    let range: ByteRange

    struct ReadFailure: Error {
        var offset: UInt64
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: FilteredPackets
        /// The next packet to read, in the served view.
        var position: UInt64
        /// Filtered bytes still to drop before the range, and to send.
        var skip: UInt64
        var left: UInt64

        mutating func next() async throws -> [UInt8]? {
            let end = sequence.served.offset + sequence.served.length
            while left > 0 {
                guard position < end, let found = sequence.layout.locate(servedOffset: position) else {
                    throw ReadFailure(offset: position)
                }
                let packets = Int(Swift.min(found.packetsLeft, (end - position + 187) / 188, 2048))
                let size = found.packetSize
                let bytes = try await sequence.file.readOnPool(at: found.packetOffset, length: packets * size)
                guard bytes.count == packets * size else { throw ReadFailure(offset: found.packetOffset) }
                position += UInt64(packets * 188)
                var output: [UInt8] = []
                output.reserveCapacity(packets * 188)
                _ = bytes.withUnsafeBytes {
                    sequence.filter.append($0, packetSize: size, syncOffset: size == 192 ? 4 : 0, to: &output)
                }
                let count = UInt64(output.count)
                if skip >= count {
                    skip -= count
                    continue
                }
                let from = Int(skip)
                let to = Int(Swift.min(count, skip + left))
                skip = 0
                left -= UInt64(to - from)
                if from == 0 && to == output.count { return output }
                return Array(output[from..<to])
            }
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(sequence: self, position: served.offset, skip: range.offset, left: range.length)
    }
}
