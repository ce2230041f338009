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

    struct Frame {
        var length: Int
        var samples: Int
        var sampleRate: Int
    }

    static func frame(codec: Codec, _ bytes: [UInt8], at index: Int) -> Frame? {
        if codec == .aac { return adts(bytes, at: index) }
        if codec == .ac3 || codec == .eac3 { return ac3(bytes, at: index) }
        return nil
    }

    /// An ADTS header (ISO/IEC 13818-7 6.2): frame_length and number_of_raw_data_blocks_in_frame.
    static func adts(_ bytes: [UInt8], at index: Int) -> Frame? {
        guard index >= 0, index + 7 <= bytes.count, bytes[index] == 0xFF, bytes[index + 1] & 0xF6 == 0xF0 else {
            return nil
        }
        let rateIndex = Int((bytes[index + 2] >> 2) & 0x0F)
        guard rateIndex < ADTSHeader.sampleRates.count else { return nil }
        let length = Int(bytes[index + 3] & 0x03) << 11 | Int(bytes[index + 4]) << 3 | Int(bytes[index + 5] >> 5)
        guard length >= 7, index + length <= bytes.count else { return nil }
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
