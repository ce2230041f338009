/// Silent AC-3 sync frames (ATSC A/52 5.3 and 5.4), made without an encoder: the frame the content's own AC-3
/// stream would have at its sample rate, bit rate and channel layout, decoding to 1536 samples of zeros per channel.
///
/// The coding is the smallest legal one: no coupling, no rematrixing (stereo), block 0 sends each channel's
/// exponents once (D45 strategy, the lowest bandwidth code, every exponent 15 and no gain range) and blocks 1 to 5
/// reuse them; the SNR offsets are all zero, which the bit allocation (A/52 7.2) turns into zero bits for every
/// mantissa, and dither is off, so every transform coefficient is exactly zero. The rest of the frame up to the
/// error check is zero padding (auxdata absent); CRC1 makes the first 5/8 of the frame check to zero and CRC2 the
/// rest. The one source of silent AC-3 (and, ``SilentEAC3``, of E-AC-3): TS slates
/// (``SlateBuilder``) and FragmentedMP4's slates both take their frames here.
public struct SilentAC3: Hashable, Sendable {
    /// `fscod`: 0 for 48 kHz, 1 for 44.1 kHz, 2 for 32 kHz.
    public var sampleRateCode: Int
    /// `frmsizecod` (0 to 37): the bit rate, and at 44.1 kHz which of the two frame sizes.
    public var frameSizeCode: Int
    /// `bsmod`: the bit stream mode (main audio, commentary, …), copied from the content.
    public var bitStreamMode: Int
    /// `acmod`: the coding mode, 1 (mono) to 7 (3/2, the full-range channels of 5.1). Dual mono (0) is not made.
    public var codingMode: Int
    /// `lfeon`: whether the frame has the LFE channel.
    public var lfe: Bool

    public init(sampleRateCode: Int, frameSizeCode: Int, bitStreamMode: Int = 0, codingMode: Int, lfe: Bool) {
        self.sampleRateCode = sampleRateCode
        self.frameSizeCode = frameSizeCode
        self.bitStreamMode = bitStreamMode
        self.codingMode = codingMode
        self.lfe = lfe
    }

    /// The fields of the AC-3 sync frame header at `index` (syncinfo and the start of the BSI), or nil when no AC-3
    /// frame (bsid 8 or lower, so not E-AC-3) starts there or its coding mode is dual mono.
    public init?(header bytes: [UInt8], at index: Int = 0) {
        guard index >= 0, index + 7 <= bytes.count, bytes[index] == 0x0B, bytes[index + 1] == 0x77,
            bytes[index + 5] >> 3 <= 8
        else { return nil }
        let acmod = Int(bytes[index + 6] >> 5)
        // After acmod: cmixlev, surmixlev and dsurmod (2 bits each) as the mode has them, then lfeon.
        var skip = 0
        if acmod & 1 != 0 && acmod != 1 { skip += 2 }
        if acmod & 4 != 0 { skip += 2 }
        if acmod == 2 { skip += 2 }
        let bits = UInt16(bytes[index + 6]) << 8 | UInt16(index + 8 <= bytes.count ? bytes[index + 7] : 0)
        let lfe = bits >> (12 - skip) & 1 == 1
        self.init(
            sampleRateCode: Int(bytes[index + 4] >> 6), frameSizeCode: Int(bytes[index + 4] & 0x3F),
            bitStreamMode: Int(bytes[index + 5] & 0x07), codingMode: acmod, lfe: lfe)
        guard frameBytes != nil, acmod != 0, index + 8 <= bytes.count || skip == 0 else { return nil }
    }

    /// The sample rate of `fscod`, nil for the reserved code.
    public var sampleRate: Int? {
        (0..<3).contains(sampleRateCode) ? [48000, 44100, 32000][sampleRateCode] : nil
    }

    /// Full-range channels (`nfchans`) of the coding mode.
    public var fullRangeChannels: Int { [2, 1, 2, 3, 3, 4, 4, 5][codingMode & 7] }

    /// The frame's length in bytes (A/52 table 5.18), nil for a reserved sample rate or frame size code.
    public var frameBytes: Int? {
        guard sampleRate != nil, (0..<38).contains(frameSizeCode),
            let frame = AudioFrames.ac3([0x0B, 0x77, 0, 0, UInt8(sampleRateCode << 6 | frameSizeCode), 8 << 3], at: 0)
        else { return nil }
        return frame.length
    }

    /// The silent sync frame, or nil when the fields are out of range (a reserved code, dual mono).
    public var frame: [UInt8]? {
        guard let length = frameBytes, (1...7).contains(codingMode), (0..<8).contains(bitStreamMode) else {
            return nil
        }
        var bits = BitWriter()
        let channels = fullRangeChannels
        // syncinfo: syncword, crc1 (filled in below), fscod, frmsizecod.
        bits.put(0x0B77, 16)
        bits.put(0, 16)
        bits.put(sampleRateCode, 2)
        bits.put(frameSizeCode, 6)
        // bsi: bsid 8, bsmod, acmod, the mix levels its mode has (centre and surround -3 dB, surround mode not
        // indicated), lfeon, dialnorm -31 dB, no compression, language, production, time codes or extra info.
        bits.put(8, 5)
        bits.put(bitStreamMode, 3)
        bits.put(codingMode, 3)
        if codingMode & 1 != 0 && codingMode != 1 { bits.put(0, 2) }
        if codingMode & 4 != 0 { bits.put(0, 2) }
        if codingMode == 2 { bits.put(0, 2) }
        bits.put(lfe ? 1 : 0, 1)
        bits.put(31, 5)  // dialnorm
        bits.put(0, 3)  // compre, langcode, audprodie
        bits.put(0, 1)  // copyrightb
        bits.put(1, 1)  // origbs
        bits.put(0, 3)  // timecod1e, timecod2e, addbsie
        for block in 0..<6 {
            let first = block == 0
            bits.put(0, channels)  // blksw: long transforms
            bits.put(0, channels)  // dithflag: no dither, so unallocated mantissas are zero
            bits.put(0, 1)  // dynrnge
            bits.put(first ? 1 : 0, 1)  // cplstre (required in block 0)
            if first { bits.put(0, 1) }  // cplinu: no coupling
            if codingMode == 2 {
                bits.put(first ? 1 : 0, 1)  // rematstr
                if first { bits.put(0, 4) }  // rematflg for the four bands: none rematrixed
            }
            // chexpstr: D45 in block 0, reuse after; lfeexpstr: D15 in block 0, reuse after.
            for _ in 0..<channels { bits.put(first ? 3 : 0, 2) }
            if lfe { bits.put(first ? 1 : 0, 1) }
            if first {
                for _ in 0..<channels { bits.put(0, 6) }  // chbwcod 0: mantissas 0 to 72
                for _ in 0..<channels {
                    // The absolute exponent, then (73 - 1 + 9) / 12 = 6 groups of three unchanged D45 steps
                    // (25 * 2 + 5 * 2 + 2: each step's code 2 is a difference of 0), then gainrng.
                    bits.put(15, 4)
                    for _ in 0..<6 { bits.put(62, 7) }
                    bits.put(0, 2)
                }
                if lfe {
                    // The LFE's 7 mantissas: the absolute exponent and two groups of unchanged D15 steps.
                    bits.put(15, 4)
                    bits.put(62, 7)
                    bits.put(62, 7)
                }
                // baie: slow decay 2, fast decay 1, slow gain 1, dB per bit 2, floor 7 (ffmpeg's and the A/52
                // examples' usual parameters).
                bits.put(1, 1)
                bits.put(2, 2)
                bits.put(1, 2)
                bits.put(1, 2)
                bits.put(2, 2)
                bits.put(7, 3)
                // snroffste: csnroffst 0 and every fsnroffst 0 (fast gain code 4): no bits for any mantissa.
                bits.put(1, 1)
                bits.put(0, 6)
                for _ in 0..<(channels + (lfe ? 1 : 0)) {
                    bits.put(0, 4)
                    bits.put(4, 3)
                }
            } else {
                bits.put(0, 1)  // baie
                bits.put(0, 1)  // snroffste
            }
            bits.put(0, 1)  // deltbaie
            bits.put(0, 1)  // skiple
            // No mantissas: every one has zero bits.
        }
        var bytes = bits.bytes
        // The blocks must fit before the error check (the smallest frame, 32 kbit/s at 48 kHz, is 128 bytes; 5.1
        // takes about 80 of them); the tail is auxdatae 0, crcrsv 0 and crc2.
        guard bytes.count + 3 <= length else { return nil }
        bytes += [UInt8](repeating: 0, count: length - bytes.count)
        // CRC1 over the first 5/8 of the frame (in 16-bit words, after the sync word) must come out zero: it is the
        // remainder of the bytes after it, divided back by x^(bits after it + 16).
        let words = length / 2
        let fiveEighths = (words / 2 + words / 8) * 2
        var crc1 = Self.crc16(bytes[4..<fiveEighths])
        for _ in 0..<((fiveEighths - 4) * 8 + 16) {
            crc1 = crc1 & 1 == 1 ? (crc1 ^ 0x8005) >> 1 | 0x8000 : crc1 >> 1
        }
        bytes[2] = UInt8(crc1 >> 8)
        bytes[3] = UInt8(crc1 & 0xFF)
        let crc2 = Self.crc16(bytes[fiveEighths..<(length - 2)])
        bytes[length - 2] = UInt8(crc2 >> 8)
        bytes[length - 1] = UInt8(crc2 & 0xFF)
        return bytes
    }

    /// A/52's CRC: generator x^16 + x^15 + x^2 + 1, register starting at zero, most significant bit
    /// first.
    static func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? crc << 1 ^ 0x8005 : crc << 1 }
        }
        return crc
    }
}

/// Silent E-AC-3 sync frames (ATSC A/52 annex E): one independent substream (strmtyp 0, substream 0) of six
/// blocks (numblkscod 3, 1536 samples), made without an encoder, of the content's sample rate, frame size and
/// channel layout. (Its bit stream mode lives in the informational metadata, which the frame leaves out.)
///
/// The coding mirrors ``SilentAC3``'s: the frame-level strategy flags all off (AC-3 exponent strategies, no AHT, one
/// SNR offset for the frame, no transient processing, no block switching syntax, default bit allocation, fast gain,
/// delta allocation, skip and spectral extension attenuation absent), no coupling and no spectral extension, block
/// 0 sends each channel's exponents once (D45, the lowest bandwidth code, every exponent 15) and blocks 1 to 5
/// reuse them, the frame's SNR offsets are zero (no bits for any mantissa) and dither is signalled off in every
/// block, so every transform coefficient is exactly zero. The rest is zero padding (auxdata absent) and CRC2 makes
/// the frame after its sync word check to zero.
public struct SilentEAC3: Hashable, Sendable {
    /// `fscod`: 0 for 48 kHz, 1 for 44.1 kHz, 2 for 32 kHz (the reduced rates of `fscod` 3 are not made).
    public var sampleRateCode: Int
    /// The frame's length in bytes (`frmsiz` + 1 words, two bytes each): 2 to 4096, even.
    public var frameBytes: Int
    /// `acmod`: the coding mode, 1 (mono) to 7 (3/2). Dual mono (0) is not made.
    public var codingMode: Int
    /// `lfeon`: whether the frame has the LFE channel.
    public var lfe: Bool

    public init(sampleRateCode: Int, frameBytes: Int, codingMode: Int, lfe: Bool) {
        self.sampleRateCode = sampleRateCode
        self.frameBytes = frameBytes
        self.codingMode = codingMode
        self.lfe = lfe
    }

    /// The fields of the E-AC-3 sync frame header at `index`, its frame size scaled to six blocks (a content frame
    /// of fewer blocks stands for a part of 1536 samples), or nil when no independent E-AC-3 frame of substream 0
    /// (bsid 11 to 16) at 48, 44.1 or 32 kHz starts there or its coding mode is dual mono.
    public init?(header bytes: [UInt8], at index: Int = 0) {
        guard index >= 0, index + 6 <= bytes.count, bytes[index] == 0x0B, bytes[index + 1] == 0x77,
            (11...16).contains(bytes[index + 5] >> 3), bytes[index + 2] >> 6 == 0, bytes[index + 2] >> 3 & 7 == 0
        else { return nil }
        let words = (Int(bytes[index + 2] & 0x07) << 8 | Int(bytes[index + 3])) + 1
        let fscod = Int(bytes[index + 4] >> 6)
        let blocks = [1, 2, 3, 6][Int(bytes[index + 4] >> 4 & 3)]
        let acmod = Int(bytes[index + 4] >> 1 & 7)
        guard fscod < 3, acmod != 0 else { return nil }
        self.init(
            sampleRateCode: fscod, frameBytes: min(2048, words * 6 / blocks) * 2, codingMode: acmod,
            lfe: bytes[index + 4] & 1 == 1)
    }

    /// The sample rate of `fscod`, nil for another code.
    public var sampleRate: Int? {
        (0..<3).contains(sampleRateCode) ? [48000, 44100, 32000][sampleRateCode] : nil
    }

    /// The silent sync frame, or nil when the fields are out of range or the frame is too small for its blocks.
    public var frame: [UInt8]? {
        guard sampleRate != nil, (1...7).contains(codingMode), frameBytes % 2 == 0, (2...4096).contains(frameBytes)
        else { return nil }
        let channels = [2, 1, 2, 3, 3, 4, 4, 5][codingMode]
        var bits = BitWriter()
        // syncinfo, then bsi: strmtyp 0, substreamid 0, frmsiz, fscod, numblkscod 3, acmod, lfeon, bsid 16,
        // dialnorm -31 dB, no compression, no mixing or informational metadata, no extra info.
        bits.put(0x0B77, 16)
        bits.put(0, 2)
        bits.put(0, 3)
        bits.put(frameBytes / 2 - 1, 11)
        bits.put(sampleRateCode, 2)
        bits.put(3, 2)
        bits.put(codingMode, 3)
        bits.put(lfe ? 1 : 0, 1)
        bits.put(16, 5)
        bits.put(31, 5)  // dialnorm
        bits.put(0, 1)  // compre
        bits.put(0, 1)  // mixmdate
        bits.put(0, 1)  // infomdate
        bits.put(0, 1)  // addbsie
        // audfrm: expstre 1 (AC-3 style strategies per block), ahte 0, snroffststr 0, transproce 0, blkswe 0,
        // dithflage 1 (dither flags sent, all off), bamode 0, frmfgaincode 0, dbaflde 0, skipflde 0, spxattene 0.
        bits.put(0b10_00_0_0_1_0_0_0_0_0, 12)
        if codingMode > 1 {
            // Coupling strategy in block 0 (not in use), none sent after.
            bits.put(0, 1)
            for _ in 1..<6 { bits.put(0, 1) }
        }
        // Exponent strategies: D45 in block 0, reuse after; the LFE's D15 then reuse.
        for block in 0..<6 {
            for _ in 0..<channels { bits.put(block == 0 ? 3 : 0, 2) }
        }
        if lfe { bits.put(0b100000, 6) }
        // The converter's exponent strategies (present for six blocks): D15 for each channel.
        for _ in 0..<channels { bits.put(0, 5) }
        // The frame's SNR offsets: coarse 0, fine 0, so no bits for any mantissa.
        bits.put(0, 6)
        bits.put(0, 4)
        bits.put(0, 1)  // blkstrtinfoe
        for block in 0..<6 {
            let first = block == 0
            bits.put(0, channels)  // dithflag: no dither
            bits.put(0, 1)  // dynrnge
            if !first { bits.put(0, 1) }  // spxstre (implied in block 0)
            if first { bits.put(0, 1) }  // spxinu: no spectral extension
            if codingMode == 2 {
                if !first { bits.put(0, 1) }  // rematstr (implied in block 0)
                if first { bits.put(0, 4) }  // rematflg: no band rematrixed
            }
            if first {
                for _ in 0..<channels { bits.put(0, 6) }  // chbwcod 0: mantissas 0 to 72
                for _ in 0..<channels {
                    bits.put(15, 4)
                    for _ in 0..<6 { bits.put(62, 7) }
                    bits.put(0, 2)  // gainrng
                }
                if lfe {
                    bits.put(15, 4)
                    bits.put(62, 7)
                    bits.put(62, 7)
                }
            }
            bits.put(0, 1)  // convsnroffste
        }
        var bytes = bits.bytes
        guard bytes.count + 3 <= frameBytes else { return nil }
        bytes += [UInt8](repeating: 0, count: frameBytes - bytes.count)
        let crc = SilentAC3.crc16(bytes[2..<(frameBytes - 2)])
        bytes[frameBytes - 2] = UInt8(crc >> 8)
        bytes[frameBytes - 1] = UInt8(crc & 0xFF)
        return bytes
    }
}

/// Writes bits most significant first.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var used = 8

    /// Appends the low `count` bits of `value`.
    mutating func put(_ value: Int, _ count: Int) {
        for shift in stride(from: count - 1, through: 0, by: -1) {
            if used == 8 {
                bytes.append(0)
                used = 0
            }
            if value >> shift & 1 == 1 { bytes[bytes.count - 1] |= 0x80 >> used }
            used += 1
        }
    }
}
