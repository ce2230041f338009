/// The version and flags that start the body of a full box (ISO/IEC 14496-12, 4.2).
public struct FullBoxHeader: Hashable, Sendable {
    public var version: UInt8
    /// The low 24 bits are written.
    public var flags: UInt32

    public init(version: UInt8 = 0, flags: UInt32 = 0) {
        self.version = version
        self.flags = flags
    }
}

/// A box that can be written: it knows its type, its version and flags when it is a full box, and writes its body.
/// ``BoxWriter`` writes the header and patches the size once the body is written.
public protocol MP4Box: Sendable {
    /// The box type.
    var type: FourCC { get }
    /// The 16-byte extended type, for a `uuid` box.
    var userType: [UInt8]? { get }
    /// How the size is written; ``BoxSizeForm/automatic`` unless a box was read in another form.
    var sizeForm: BoxSizeForm { get }
    /// The version and flags of a full box, written before the body; `nil` for a plain box.
    var fullBoxHeader: FullBoxHeader? { get }
    /// Writes everything after the header (and after the version and flags of a full box).
    func writeBody(to writer: inout BoxWriter)
}

extension MP4Box {
    public var userType: [UInt8]? { nil }
    public var sizeForm: BoxSizeForm { .automatic }
    public var fullBoxHeader: FullBoxHeader? { nil }

    /// The box's bytes.
    public func serialized() -> [UInt8] {
        var writer = BoxWriter()
        writer.write(self)
        return writer.bytes
    }
}

/// Writes boxes and big-endian fields into a growing byte array.
public struct BoxWriter: Sendable {
    /// Everything written so far.
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// The number of bytes written so far.
    public var count: Int { bytes.count }

    /// Makes room for `capacity` bytes in all, so that a large body is not copied as it grows.
    public mutating func reserveCapacity(_ capacity: Int) { bytes.reserveCapacity(capacity) }

    /// Writes a box: the header, the version and flags of a full box, the body, then the size, patched in. A box
    /// larger than 4 GiB − 1 gets `size == 1` and a 64-bit `largesize` automatically.
    public mutating func write(_ box: some MP4Box) {
        let start = bytes.count
        let form = box.sizeForm
        append(UInt32(form == .large ? 1 : 0))
        append(box.type)
        if form == .large { append(UInt64(0)) }
        if let userType = box.userType { append(userType) }
        if let header = box.fullBoxHeader {
            append(header.version)
            append24(header.flags)
        }
        box.writeBody(to: &self)
        let size = bytes.count - start
        switch form {
        case .large:
            patch(UInt64(size), at: start + 8)
        case .toEnd:
            break
        case .automatic:
            if let size32 = UInt32(exactly: size) {
                patch(size32, at: start)
            } else {
                // Too large for 32 bits: make room for the 64-bit size after the type.
                bytes.insert(contentsOf: [UInt8](repeating: 0, count: 8), at: start + 8)
                patch(UInt32(1), at: start)
                patch(UInt64(size + 8), at: start + 8)
            }
        }
    }

    /// Writes each box in turn.
    public mutating func write(_ boxes: [any MP4Box]) {
        for box in boxes { write(box) }
    }

    public mutating func append(_ value: UInt8) { bytes.append(value) }

    public mutating func append(_ value: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    /// Writes the low 24 bits.
    public mutating func append24(_ value: UInt32) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 16))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    public mutating func append(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    public mutating func append(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    public mutating func append(_ value: Int32) { append(UInt32(bitPattern: value)) }

    public mutating func append(_ value: Int16) { append(UInt16(bitPattern: value)) }

    public mutating func append(_ type: FourCC) { append(type.rawValue) }

    public mutating func append(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }

    /// Writes `count` zero bytes.
    public mutating func appendZeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: max(0, count))) }

    /// Overwrites four bytes at `position`, which must have been written.
    mutating func patch(_ value: UInt32, at position: Int) {
        for index in 0..<4 { bytes[position + index] = UInt8(truncatingIfNeeded: value >> (24 - 8 * index)) }
    }

    mutating func patch(_ value: UInt64, at position: Int) {
        for index in 0..<8 { bytes[position + index] = UInt8(truncatingIfNeeded: value >> (56 - 8 * index)) }
    }
}

/// The header of an `mdat` box for a payload of a given length, so that a payload too large to hold in memory can
/// be streamed after it: 8 bytes, or 16 (`size == 1` and a 64-bit `largesize`) when the box would exceed 4 GiB − 1.
public enum MediaDataHeader {
    /// The header bytes; throws ``FragmentedMP4Error/Code/invalidValue`` when the box size would not fit 64 bits.
    public static func bytes(payloadLength: UInt64) throws(FragmentedMP4Error) -> [UInt8] {
        var writer = BoxWriter()
        if payloadLength <= UInt64(UInt32.max) - 8 {
            writer.append(UInt32(payloadLength + 8))
            writer.append(FourCC.mdat)
        } else {
            guard payloadLength <= UInt64.max - 16 else {
                throw FragmentedMP4Error(.invalidValue, path: [.mdat], "payload of \(payloadLength) bytes")
            }
            writer.append(UInt32(1))
            writer.append(FourCC.mdat)
            writer.append(payloadLength + 16)
        }
        return writer.bytes
    }
}
