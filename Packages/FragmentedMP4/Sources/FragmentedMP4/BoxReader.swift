/// Caps on what the reader accepts, so that hostile input cannot make it recurse or allocate without bound.
public struct BoxLimits: Hashable, Sendable {
    /// The deepest nesting accepted; top-level boxes are at depth 1.
    public var maximumDepth: Int
    /// The most boxes accepted in one buffer, at all depths.
    public var maximumBoxCount: Int

    public init(maximumDepth: Int = 16, maximumBoxCount: Int = 100_000) {
        self.maximumDepth = maximumDepth
        self.maximumBoxCount = maximumBoxCount
    }

    public static let `default` = BoxLimits()
}

/// Reads ISO BMFF boxes from a byte buffer (ISO/IEC 14496-12, 4.2).
///
/// Sizes are 32-bit, or 64-bit after `size == 1`, or "to the end of the container" for `size == 0`; a `uuid` box
/// carries a 16-byte extended type. Every length is checked against what is left before anything is cut, so no
/// input traps. Container boxes (``containerTypes``) are read into children; every other box keeps its body as raw
/// bytes, so that unknown boxes survive a read and a write unchanged.
///
/// The truncation rule: ``parse(_:limits:)`` throws ``FragmentedMP4Error/Code/truncated`` for input that ends inside
/// a top-level box (its header, or before the end its size declares). Input that ends exactly after a top-level box
/// is complete: it parses to the boxes before that point. A box that runs past the box containing it is
/// ``FragmentedMP4Error/Code/invalidSize``, since its container was complete.
public enum BoxReader {
    /// The box types read as containers of other boxes: boxes whose body is nothing but boxes.
    public static let containerTypes: Set<FourCC> = [
        .moov, .trak, .edts, .mdia, .minf, .dinf, .stbl, .mvex, .moof, .traf, .mfra,
    ]

    /// All the boxes in `bytes`; throws on any malformed or truncated box.
    public static func parse(
        _ bytes: [UInt8], limits: BoxLimits = .default
    ) throws(FragmentedMP4Error) -> [Box] {
        var state = State(bytes: bytes, limits: limits)
        return try state.boxes(from: 0, to: bytes.count, path: [])
    }

    /// The complete top-level boxes at the start of `bytes` and the number of bytes they take; stops, without
    /// consuming it, before a box that has not fully arrived (or one with `size == 0`, whose end is unknown until
    /// the input ends). For input arriving in pieces: parse what is complete, keep the rest, append, repeat.
    /// Throws only for boxes that are complete yet malformed.
    public static func parsePrefix(
        _ bytes: [UInt8], limits: BoxLimits = .default
    ) throws(FragmentedMP4Error) -> (boxes: [Box], consumed: Int) {
        var state = State(bytes: bytes, limits: limits)
        var boxes: [Box] = []
        var position = 0
        while position < bytes.count {
            guard let header = try state.header(at: position, end: bytes.count, path: [], allowTruncated: true),
                header.sizeForm != .toEnd
            else { break }
            boxes.append(try state.box(header, at: position, path: []))
            position = header.end
        }
        return (boxes, position)
    }

    struct Header {
        var type: FourCC
        var userType: [UInt8]?
        var sizeForm: BoxSizeForm
        var bodyStart: Int
        var end: Int
    }

    struct State {
        let bytes: [UInt8]
        let limits: BoxLimits
        var count = 0

        init(bytes: [UInt8], limits: BoxLimits) {
            self.bytes = bytes
            self.limits = limits
        }

        func uint32(at position: Int) -> UInt32 {
            var value: UInt32 = 0
            for index in position..<position + 4 { value = value << 8 | UInt32(bytes[index]) }
            return value
        }

        /// The header of the box at `position`, which must end by `end`. With `allowTruncated`, a box that runs past
        /// the end of the buffer gives `nil` instead of an error.
        func header(
            at position: Int, end: Int, path: [FourCC], allowTruncated: Bool = false
        ) throws(FragmentedMP4Error) -> Header? {
            let topLevel = path.isEmpty
            let left = end - position
            func short(_ what: String, type: FourCC? = nil) -> FragmentedMP4Error {
                let where_ = path + (type.map { [$0] } ?? [])
                if topLevel { return FragmentedMP4Error(.truncated, offset: position, path: where_, what) }
                return FragmentedMP4Error(
                    .invalidSize, offset: position, path: where_, what + " runs past its container")
            }
            guard left >= 8 else {
                if allowTruncated { return nil }
                throw short("box header")
            }
            let size32 = uint32(at: position)
            let type = FourCC(rawValue: uint32(at: position + 4))
            var headerLength = 8
            var size: Int
            var form = BoxSizeForm.automatic
            switch size32 {
            case 0:
                form = .toEnd
                size = left
            case 1:
                form = .large
                guard left >= 16 else {
                    if allowTruncated { return nil }
                    throw short("64-bit box size", type: type)
                }
                let large = UInt64(uint32(at: position + 8)) << 32 | UInt64(uint32(at: position + 12))
                headerLength = 16
                guard let exact = Int(exactly: large), exact <= left else {
                    if allowTruncated, topLevel, large >= 16 { return nil }
                    guard large >= 16 else {
                        throw FragmentedMP4Error(
                            .invalidSize, offset: position, path: path + [type], "64-bit size \(large) below 16")
                    }
                    throw short("box of \(large) bytes with \(left) left", type: type)
                }
                size = exact
            default:
                size = Int(size32)
                guard size <= left else {
                    if allowTruncated, topLevel, size >= 8 { return nil }
                    guard size >= 8 else {
                        throw FragmentedMP4Error(.invalidSize, offset: position, path: path + [type], "size \(size)")
                    }
                    throw short("box of \(size) bytes with \(left) left", type: type)
                }
            }
            var userType: [UInt8]?
            if type == .uuid {
                guard left >= headerLength + 16 else {
                    if allowTruncated { return nil }
                    throw short("extended type", type: type)
                }
                userType = Array(bytes[position + headerLength..<position + headerLength + 16])
                headerLength += 16
            }
            guard size >= headerLength else {
                throw FragmentedMP4Error(
                    .invalidSize, offset: position, path: path + [type],
                    "size \(size) is smaller than its \(headerLength)-byte header")
            }
            return Header(
                type: type, userType: userType, sizeForm: form, bodyStart: position + headerLength,
                end: position + size)
        }

        mutating func box(_ header: Header, at position: Int, path: [FourCC]) throws(FragmentedMP4Error) -> Box {
            count += 1
            let here = path + [header.type]
            guard count <= limits.maximumBoxCount else {
                throw FragmentedMP4Error(
                    .tooManyBoxes, offset: position, path: here, "more than \(limits.maximumBoxCount) boxes")
            }
            guard here.count <= limits.maximumDepth else {
                throw FragmentedMP4Error(.tooDeep, offset: position, path: here, "deeper than \(limits.maximumDepth)")
            }
            let content: Box.Content
            if BoxReader.containerTypes.contains(header.type) {
                content = .children(try boxes(from: header.bodyStart, to: header.end, path: here))
            } else {
                content = .data(Array(bytes[header.bodyStart..<header.end]))
            }
            return Box(type: header.type, userType: header.userType, sizeForm: header.sizeForm, content: content)
        }

        mutating func boxes(from start: Int, to end: Int, path: [FourCC]) throws(FragmentedMP4Error) -> [Box] {
            var boxes: [Box] = []
            var position = start
            while position < end {
                guard let header = try header(at: position, end: end, path: path) else { break }
                boxes.append(try box(header, at: position, path: path))
                position = header.end
            }
            return boxes
        }
    }
}
