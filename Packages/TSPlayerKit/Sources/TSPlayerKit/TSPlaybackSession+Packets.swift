import FileRange
import HTTPWire
import LoopbackHTTP
import MPEGTS

/// Serving a file whose packets are not plain 188-byte TS from byte 0 (192-byte M2TS, 204-byte DVB, or a file that
/// begins in the middle of a packet) as plain 188-byte TS: the served `media.ts` is the file's packets without their
/// extra bytes (``PacketLayout``), made on the fly from the file; the playlists' byte ranges are in those bytes.
extension TSPlaybackSession {
    /// The packet layout `media.ts` is served by: the index's runs; while the file is still being indexed, its last
    /// run (or, before the first, the packets from the first one found at open) taken on to the file's current end.
    func servedLayout() -> PacketLayout {
        let index = self.index
        var layout = index?.layout ?? PacketLayout(packetSize: probe.packetSize, runs: [])
        guard index?.isComplete != true, let size = try? file.size() else { return layout }
        let packetSize = UInt64(layout.packetSize)
        if let last = layout.runs.last {
            let extra = size > last.fileOffset ? (size - last.fileOffset) / packetSize : 0
            layout.runs[layout.runs.count - 1].packets = max(last.packets, extra)
        } else if size > firstPacketOffset {
            layout.runs = [
                PacketRun(
                    fileOffset: firstPacketOffset, servedOffset: 0, packets: (size - firstPacketOffset) / packetSize)
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
        let total = layout.servedLength
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
        let body = ServedPackets(file: file, layout: layout, range: wanted)
        return HTTPResponse(status: status, headers: headers, body: .stream(.init(length: wanted.length, body)))
    }
}

/// The bytes of one range of a ``PacketLayout``'s served view, read from the file in steps of at most 256 KiB of
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
            let bytes = try sequence.file.read(at: found.packetOffset, length: packets * layout.packetSize)
            var output: [UInt8] = []
            output.reserveCapacity(packets * 188)
            let limit = Int(Swift.min(wanted, UInt64(packets * 188)))
            let added = bytes.withUnsafeBytes {
                layout.appendServed($0, skip: found.within, limit: limit, to: &output)
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
