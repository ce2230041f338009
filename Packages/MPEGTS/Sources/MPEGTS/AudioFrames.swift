/// What one audio frame's header says of its frame: its length, how many samples (per channel) it decodes to, and
/// at what rate. The one reading of ADTS, AC-3/E-AC-3 and MPEG audio frame headers in the toolkit: MPEGTS counts
/// and splits frames with it, FragmentedMP4's bridge builds its samples and sample entries on it.
public struct AudioFrameLayout: Hashable, Sendable {
    /// The frame's length in bytes, header included (padding included for MPEG audio).
    public var length: Int
    /// Decoded samples per channel.
    public var samples: Int
    /// Samples per second.
    public var sampleRate: Int

    public init(length: Int, samples: Int, sampleRate: Int) {
        self.length = length
        self.samples = samples
        self.sampleRate = sampleRate
    }

    /// The ADTS header at `index` (ISO/IEC 13818-7 6.2), whether or not the whole frame is in `bytes`; nil when no
    /// valid header starts there or fewer than 7 bytes are left.
    public static func adts(_ bytes: [UInt8], at index: Int) -> AudioFrameLayout? {
        AudioFrames.adtsHeader(bytes, at: index)
    }

    /// The AC-3 or E-AC-3 sync frame header at `index` (ATSC A/52 5.3, E.1.2), or nil.
    public static func ac3(_ bytes: [UInt8], at index: Int) -> AudioFrameLayout? { AudioFrames.ac3(bytes, at: index) }

    /// The MPEG-1/2/2.5 audio frame header (layers I–III) at `index`, or nil for a reserved version, layer or rate
    /// or the free-format bit rate (whose length the header does not give).
    public static func mpegAudio(_ bytes: [UInt8], at index: Int) -> AudioFrameLayout? {
        AudioFrames.mpegAudio(bytes, at: index)
    }
}

/// Counts the audio frames in a PES payload, for the duration of a stream's last PES.
enum AudioFrames {
    /// The duration of the whole frames at the start of `payload` in 90 kHz ticks (ADTS AAC, AC-3, E-AC-3), or
    /// nil when the codec is not one of these or no frame is found at the start.
    static func ticks(codec: Codec, payload: [UInt8]) -> Int64? {
        var position = 0
        var samples = 0  // in units of 1 / sampleRate
        var sampleRate = 0
        var frames = 0
        while position < payload.count && frames < 4096 {
            guard let frame = frame(codec: codec, payload, at: position) else { break }
            if sampleRate == 0 { sampleRate = frame.sampleRate }
            guard frame.sampleRate == sampleRate, frame.length > 0 else { break }
            samples += frame.samples
            frames += 1
            position += frame.length
        }
        guard frames > 0, sampleRate > 0 else { return nil }
        return Int64(samples) * Timestamp.ticksPerSecond / Int64(sampleRate)
    }

    typealias Frame = AudioFrameLayout

    static func frame(codec: Codec, _ bytes: [UInt8], at index: Int) -> Frame? {
        if codec == .aac { return adts(bytes, at: index) }
        if codec == .ac3 || codec == .eac3 { return ac3(bytes, at: index) }
        return nil
    }

    /// An ADTS header (ISO/IEC 13818-7 6.2): frame_length and number_of_raw_data_blocks_in_frame.
    static func adts(_ bytes: [UInt8], at index: Int) -> Frame? {
        guard let frame = adtsHeader(bytes, at: index), index + frame.length <= bytes.count else { return nil }
        return frame
    }

    /// An ADTS header, whether or not the whole frame is in `bytes`.
    static func adtsHeader(_ bytes: [UInt8], at index: Int) -> Frame? {
        guard index >= 0, index + 7 <= bytes.count, bytes[index] == 0xFF, bytes[index + 1] & 0xF6 == 0xF0 else {
            return nil
        }
        let rateIndex = Int((bytes[index + 2] >> 2) & 0x0F)
        guard rateIndex < ADTSHeader.sampleRates.count else { return nil }
        let length = Int(bytes[index + 3] & 0x03) << 11 | Int(bytes[index + 4]) << 3 | Int(bytes[index + 5] >> 5)
        guard length >= 7 else { return nil }
        let blocks = Int(bytes[index + 6] & 0x03) + 1
        return Frame(length: length, samples: 1024 * blocks, sampleRate: ADTSHeader.sampleRates[rateIndex])
    }

    /// AC-3 bit rates in kbit/s by frmsizecod / 2 (ATSC A/52 table 5.18).
    static let ac3BitRates = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 576, 640]

    /// An AC-3 or E-AC-3 sync frame header (ATSC A/52 5.3, E.1.2): its length and samples.
    static func ac3(_ bytes: [UInt8], at index: Int) -> Frame? {
        guard index >= 0, index + 6 <= bytes.count, bytes[index] == 0x0B, bytes[index + 1] == 0x77 else { return nil }
        let bsid = bytes[index + 5] >> 3
        if bsid <= 10 {
            let fscod = Int(bytes[index + 4] >> 6)
            let code = Int(bytes[index + 4] & 0x3F)
            guard fscod < 3, code / 2 < ac3BitRates.count else { return nil }
            let rate = ac3BitRates[code / 2]
            let words: Int
            switch fscod {
            case 0: words = rate * 2  // 48 kHz
            case 1: words = rate * 320 / 147 + (code & 1)  // 44.1 kHz
            default: words = rate * 3  // 32 kHz
            }
            return Frame(length: words * 2, samples: 1536, sampleRate: [48000, 44100, 32000][fscod])
        }
        guard bsid <= 16 else { return nil }
        let words = (Int(bytes[index + 2] & 0x07) << 8 | Int(bytes[index + 3])) + 1
        let fscod = Int(bytes[index + 4] >> 6)
        let blocks: Int
        let sampleRate: Int
        if fscod == 3 {
            let fscod2 = Int((bytes[index + 4] >> 4) & 0x03)
            guard fscod2 < 3 else { return nil }
            sampleRate = [24000, 22050, 16000][fscod2]
            blocks = 6
        } else {
            sampleRate = [48000, 44100, 32000][fscod]
            blocks = [1, 2, 3, 6][Int((bytes[index + 4] >> 4) & 0x03)]
        }
        return Frame(length: words * 2, samples: 256 * blocks, sampleRate: sampleRate)
    }
}

extension AudioFrames {
    /// Bit rates in kbit/s by bitrate_index (1...14) for MPEG-1 layers I, II, III and MPEG-2/2.5 layer I and
    /// layers II/III (ISO/IEC 11172-3 2.4.2.3, ISO/IEC 13818-3 2.4.2.3).
    static let mpegAudioBitRates: [[Int]] = [
        [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448],
        [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384],
        [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
        [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256],
        [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
    ]

    /// An MPEG-1/2/2.5 audio frame header (layers I, II, III): its length (padding included) and samples. Nil for
    /// a reserved version, layer, rate or the free-format bit rate (whose length the header does not give).
    static func mpegAudio(_ bytes: [UInt8], at index: Int) -> Frame? {
        guard index >= 0, index + 4 <= bytes.count, bytes[index] == 0xFF, bytes[index + 1] & 0xE0 == 0xE0 else {
            return nil
        }
        let version = Int(bytes[index + 1] >> 3) & 0x03  // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
        let layer = 4 - (Int(bytes[index + 1] >> 1) & 0x03)  // 1, 2, 3 (4: reserved)
        let rateIndex = Int(bytes[index + 2] >> 4)
        let frequencyIndex = Int(bytes[index + 2] >> 2) & 0x03
        let padding = Int(bytes[index + 2] >> 1) & 0x01
        guard version != 1, layer <= 3, rateIndex > 0, rateIndex < 15, frequencyIndex < 3 else { return nil }
        let mpeg1 = version == 3
        let table = mpeg1 ? layer - 1 : (layer == 1 ? 3 : 4)
        let bitRate = mpegAudioBitRates[table][rateIndex - 1] * 1000
        let sampleRate = [44100, 48000, 32000][frequencyIndex] >> (mpeg1 ? 0 : version == 2 ? 1 : 2)
        let length: Int
        let samples: Int
        switch layer {
        case 1:
            length = (12 * bitRate / sampleRate + padding) * 4
            samples = 384
        case 2:
            length = 144 * bitRate / sampleRate + padding
            samples = 1152
        default:
            length = (mpeg1 ? 144 : 72) * bitRate / sampleRate + padding
            samples = mpeg1 ? 1152 : 576
        }
        return Frame(length: length, samples: samples, sampleRate: sampleRate)
    }
}

/// Splits the PES payloads of one audio stream into frames (ADTS AAC, MPEG-1/2 audio, AC-3, E-AC-3 sync frames),
/// as ffprobe lists them as packets: each with its size and its own time stamps, the PES's plus the durations of
/// the frames before it in that PES, rounded to 90 kHz ticks as ffmpeg rounds them
/// (``next(_:samples:sampleRate:stable:negativeFrom:)``). A frame cut by the end of a PES is completed from the
/// next one and keeps the time of the PES it started in; bytes where no frame header is found are skipped.
package struct AudioFrameSplitter: Sendable {
    /// One frame.
    package struct Frame: Hashable, Sendable {
        package var pts: Timestamp?
        package var dts: Timestamp?
        /// Bytes, header included.
        package var size: Int
        /// Its index among the frames that start in its PES.
        package var index: Int
        /// The offset of the TS packet that starts the PES it starts in.
        package var offset: Int64
    }

    package let codec: Codec
    /// Bytes of a frame cut by the end of the last PES, and where it started.
    private var carry: [UInt8] = []
    private var carryStart = Start(pts: nil, dts: nil, index: 0, offset: 0)
    private var sawTimeStamp = false
    /// Time stamps ffmpeg reads as negative (see ``next(_:samples:sampleRate:stable:negativeFrom:)``).
    private var negativeFrom: UInt64?

    private struct Start {
        var pts: Timestamp?
        var dts: Timestamp?
        var index: Int
        var offset: Int64
    }

    /// Whether frames of `codec` can be found.
    package static func splits(_ codec: Codec) -> Bool {
        codec == .aac || codec == .mpegAudio || codec == .ac3 || codec == .eac3
    }

    package init(codec: Codec) { self.codec = codec }

    /// The longest frame kept waiting for the next PES (ADTS allows 8191 bytes; the others are shorter).
    static let maximumCarry = 8192

    static func frame(codec: Codec, _ bytes: [UInt8], at index: Int) -> AudioFrames.Frame? {
        switch codec {
        case .aac: AudioFrames.adtsHeader(bytes, at: index)
        case .mpegAudio: AudioFrames.mpegAudio(bytes, at: index)
        default: AudioFrames.frame(codec: codec, bytes, at: index)
        }
    }

    /// Whether a frame header of any length could start at `index` (enough of it to read its length is missing).
    static func mayStartFrame(codec: Codec, _ bytes: [UInt8], at index: Int) -> Bool {
        let need = codec == .aac ? 7 : codec == .mpegAudio ? 4 : 6
        guard bytes.count - index < need else { return false }
        if codec == .ac3 || codec == .eac3 {
            return bytes[index] == 0x0B && (index + 1 >= bytes.count || bytes[index + 1] == 0x77)
        }
        return bytes[index] == 0xFF && (index + 1 >= bytes.count || bytes[index + 1] & 0xE0 == 0xE0)
    }

    /// The time stamp of the frame after one at `ts` lasting `samples / sampleRate` seconds, as ffmpeg steps it
    /// (libavformat `compute_pkt_fields`). Its parsers give AC-3, E-AC-3 and MPEG audio frames a duration in whole
    /// ticks, rounded down, which is added (`stable` false). AAC frames get none, and the exact duration is added
    /// with `av_add_stable` (`stable` true): on the grid of whole frames counted from time 0 (rounded to the nearest
    /// tick) plus the offset of `ts` from that grid, so that 1024 samples at 44.1 kHz (2089.8 ticks) do not drift.
    ///
    /// ffmpeg's time 0 moves near the 33-bit wrap: when a stream's first time stamp is less than 60 s before it,
    /// time stamps from 60 s before that first one on are read as negative (2^33 less). `negativeFrom` is that
    /// bound, or nil.
    package static func next(
        _ ts: Timestamp, samples: Int, sampleRate: Int, stable: Bool, negativeFrom: UInt64? = nil
    ) -> Timestamp {
        let m = Int64(samples) * Timestamp.ticksPerSecond
        let d = Int64(sampleRate)
        guard d > 0, m > 0 else { return ts }
        if !stable || m % d == 0 { return ts.advanced(by: m / d) }
        if m < d { return ts }
        // av_rescale_rnd's AV_ROUND_NEAR_INF: half away from zero.
        func rounded(_ numerator: Int64, _ denominator: Int64) -> Int64 {
            numerator < 0
                ? -((-numerator + denominator / 2) / denominator) : (numerator + denominator / 2) / denominator
        }
        var t = Int64(ts.value)
        if let negativeFrom, ts.value >= negativeFrom { t -= Int64(Timestamp.modulus) }
        let old = rounded(t * d, m)  // whole frames since 0
        let oldTicks = rounded(old * m, d)
        return Timestamp(wrapping: rounded((old + 1) * m, d) + (t - oldTicks))
    }

    /// The frames of one PES (and the frame the last one left unfinished), in order.
    package mutating func split(_ packet: PESPacket, _ body: (Frame) -> Void) {
        if !sawTimeStamp, let first = packet.info.dts ?? packet.info.pts {
            // ffmpeg's wrap reference (libavformat update_wrap_reference): 60 s before the first time stamp.
            sawTimeStamp = true
            let minute = UInt64(60 * Timestamp.ticksPerSecond)
            if first.value >= Timestamp.modulus - minute, first.value >= Timestamp.modulus - Timestamp.modulus >> 3 {
                negativeFrom = first.value - minute
            }
        }
        let carried = carry.count
        let bytes = carried == 0 ? packet.payload : carry + packet.payload
        carry = []
        var previous = carryStart
        var current = Start(pts: packet.info.pts, dts: packet.info.dts, index: 0, offset: packet.info.offset)
        var position = 0
        while position < bytes.count {
            guard let frame = Self.frame(codec: codec, bytes, at: position), frame.length > 0, frame.sampleRate > 0
            else {
                if Self.mayStartFrame(codec: codec, bytes, at: position) { break }
                position += 1
                continue
            }
            guard position + frame.length <= bytes.count else { break }
            // A frame that started in the previous PES runs on from that PES's time.
            let inPrevious = position < carried
            var start = inPrevious ? previous : current
            body(Frame(pts: start.pts, dts: start.dts, size: frame.length, index: start.index, offset: start.offset))
            let stable = codec == .aac
            start.pts = start.pts.map {
                Self.next(
                    $0, samples: frame.samples, sampleRate: frame.sampleRate, stable: stable, negativeFrom: negativeFrom
                )
            }
            start.dts = start.dts.map {
                Self.next(
                    $0, samples: frame.samples, sampleRate: frame.sampleRate, stable: stable, negativeFrom: negativeFrom
                )
            }
            start.index += 1
            if inPrevious { previous = start } else { current = start }
            position += frame.length
        }
        if position < bytes.count, bytes.count - position <= Self.maximumCarry {
            carry = Array(bytes[position...])
            carryStart = position < carried ? previous : current
        }
    }
}
