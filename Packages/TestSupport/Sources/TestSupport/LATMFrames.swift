// Hand-built LOAS/LATM frames (ISO/IEC 14496-3 1.7) for the tests of the LATM reader and the TS-to-fMP4 bridge:
// every field written bit by bit, so that configurations no encoder here makes (HE-AAC, HE-AAC v2, audioMuxVersion
// 1, otherData, several subframes) can be tried.

/// Bits written most significant first.
public struct BitString: Sendable, Equatable {
    public private(set) var bytes: [UInt8] = []
    public private(set) var count = 0

    public init() {}

    public mutating func put(_ value: Int, _ width: Int) {
        for shift in stride(from: width - 1, through: 0, by: -1) { bit((value >> shift) & 1) }
    }

    public mutating func bit(_ value: Int) {
        if count % 8 == 0 { bytes.append(0) }
        if value != 0 { bytes[bytes.count - 1] |= UInt8(0x80 >> (count % 8)) }
        count += 1
    }

    public mutating func append(_ other: BitString) {
        for index in 0..<other.count { bit(Int(other.bytes[index / 8] >> (7 - index % 8)) & 1) }
    }

    /// LatmGetValue's form: 2 bits of extra byte count, then the bytes.
    public mutating func latmValue(_ value: Int) {
        let extra = value > 0xFF_FFFF ? 3 : value > 0xFFFF ? 2 : value > 0xFF ? 1 : 0
        put(extra, 2)
        put(value, 8 * (extra + 1))
    }
}

/// The fields of one LOAS frame carrying one AudioMuxElement(1).
public struct LATMFrameSpec: Sendable {
    /// The AudioSpecificConfig's bits; nil writes useSameStreamMux 1 (no StreamMuxConfig).
    public var audioSpecificConfig: BitString?
    public var payload: [UInt8]
    public var audioMuxVersion = 0
    public var audioMuxVersionA = 0
    public var subFrames = 0
    public var programs = 0
    public var layers = 0
    public var frameLengthType = 0
    /// Bits written after the ASC inside ascLen (audioMuxVersion 1), such as a backward-compatible extension.
    public var ascTail = BitString()
    /// Other data after the payload: its length in bits (0: otherDataPresent 0).
    public var otherDataBits = 0
    public var crc = false

    public init(audioSpecificConfig: BitString?, payload: [UInt8]) {
        self.audioSpecificConfig = audioSpecificConfig
        self.payload = payload
    }

    /// An AudioSpecificConfig: object type, frequency index, channels, the explicit SBR/PS fields when
    /// `extensionType` is 5 or 29 (the output frequency index, then AAC-LC), and a GASpecificConfig of zeros.
    public static func audioSpecificConfig(
        objectType: Int = 2, frequencyIndex: Int = 3, channels: Int = 2, extensionType: Int? = nil,
        extensionFrequencyIndex: Int = 3
    ) -> BitString {
        var bits = BitString()
        if let extensionType {
            bits.put(extensionType, 5)
            bits.put(frequencyIndex, 4)
            bits.put(channels, 4)
            bits.put(extensionFrequencyIndex, 4)
            bits.put(objectType, 5)
        } else {
            bits.put(objectType, 5)
            bits.put(frequencyIndex, 4)
            bits.put(channels, 4)
        }
        bits.put(0, 3)  // frameLengthFlag, dependsOnCoreCoder, extensionFlag
        return bits
    }

    /// The backward-compatible extension that may follow an AAC-LC AudioSpecificConfig (its `ascTail`): the SBR
    /// sync (0x2B7), type 5, sbrPresentFlag and the output frequency index, then with `ps` the PS sync (0x548) and
    /// psPresentFlag.
    public static func backwardCompatibleExtension(ps: Bool, frequencyIndex: Int = 3) -> BitString {
        var tail = BitString()
        tail.put(0x2B7, 11)
        tail.put(5, 5)
        tail.bit(1)
        tail.put(frequencyIndex, 4)
        if ps {
            tail.put(0x548, 11)
            tail.bit(1)
        }
        return tail
    }

    /// The whole LOAS frame: sync word, length, AudioMuxElement (byte aligned).
    public var bytes: [UInt8] {
        var element = BitString()
        if let asc = audioSpecificConfig {
            element.bit(0)
            element.bit(audioMuxVersion)
            if audioMuxVersion == 1 {
                element.bit(audioMuxVersionA)
                element.latmValue(0xFF)  // taraBufferFullness
            }
            element.bit(1)  // allStreamsSameTimeFraming
            element.put(subFrames, 6)
            element.put(programs, 4)
            element.put(layers, 3)
            if audioMuxVersion == 1 { element.latmValue(asc.count + ascTail.count) }
            element.append(asc)
            if audioMuxVersion == 1 { element.append(ascTail) }
            element.put(frameLengthType, 3)
            element.put(0xFF, 8)  // latmBufferFullness
            element.bit(otherDataBits > 0 ? 1 : 0)
            if otherDataBits > 0 {
                if audioMuxVersion == 1 {
                    element.latmValue(otherDataBits)
                } else {
                    var bytes: [Int] = []
                    var rest = otherDataBits
                    repeat {
                        bytes.insert(rest & 0xFF, at: 0)
                        rest >>= 8
                    } while rest > 0
                    for (index, byte) in bytes.enumerated() {
                        element.bit(index + 1 < bytes.count ? 1 : 0)
                        element.put(byte, 8)
                    }
                }
            }
            element.bit(crc ? 1 : 0)
            if crc { element.put(0x5A, 8) }
        } else {
            element.bit(1)
        }
        var length = payload.count
        while length >= 255 {
            element.put(255, 8)
            length -= 255
        }
        element.put(length, 8)
        for byte in payload { element.put(Int(byte), 8) }
        for _ in 0..<otherDataBits { element.bit(1) }
        var frame = BitString()
        frame.put(0x2B7, 11)
        frame.put(element.bytes.count, 13)
        return frame.bytes + element.bytes
    }
}
