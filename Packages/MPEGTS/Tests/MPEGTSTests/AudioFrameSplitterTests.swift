import Testing

@testable import MPEGTS

@Suite struct AudioFrameSplitterTests {
    /// An ADTS frame (AAC LC, 48 kHz or 44.1 kHz, stereo) of `length` bytes, its payload filled with `fill`.
    static func adts(length: Int, rateIndex: UInt8 = 3, fill: UInt8 = 0x11) -> [UInt8] {
        [
            0xFF, 0xF1, 0x40 | rateIndex << 2, 0x80 | UInt8((length >> 11) & 0x03), UInt8((length >> 3) & 0xFF),
            UInt8((length & 0x07) << 5) | 0x1F, 0xFC,
        ] + [UInt8](repeating: fill, count: length - 7)
    }

    static func packet(_ payload: [UInt8], pts: UInt64?, offset: Int64) -> PESPacket {
        let timestamp = pts.map { Timestamp(wrapping: $0) }
        return PESPacket(
            info: PESInfo(
                pid: 0x101, streamID: 0xC0, pts: timestamp, dts: nil, isKeyframe: true, randomAccessIndicator: false,
                offset: offset, packetLength: 0),
            header: PESHeader(streamID: 0xC0, pts: timestamp), payload: payload)
    }

    static func split(_ packets: [PESPacket], codec: Codec = .aac) -> [AudioFrameSplitter.Frame] {
        var splitter = AudioFrameSplitter(codec: codec)
        var frames: [AudioFrameSplitter.Frame] = []
        for packet in packets { splitter.split(packet) { frames.append($0) } }
        return frames
    }

    @Test func framesOfOnePESGetTheirOwnTimes() {
        let payload = Self.adts(length: 100) + Self.adts(length: 200) + Self.adts(length: 50)
        let frames = Self.split([Self.packet(payload, pts: 90_000, offset: 376)])
        #expect(frames.map(\.size) == [100, 200, 50])
        #expect(frames.map { $0.pts?.value } == [90_000, 91_920, 93_840])
        #expect(frames.map(\.index) == [0, 1, 2])
        #expect(frames.allSatisfy { $0.offset == 376 && $0.dts == nil })
    }

    /// A frame cut by the end of a PES, at every possible point (inside the header too), is completed from the
    /// next PES and keeps the time of the PES it started in; the next PES's own frames start from its PTS.
    @Test func aFrameCutAtAnyPointIsCompletedFromTheNextPES() {
        let first = Self.adts(length: 120, fill: 1) + Self.adts(length: 130, fill: 2)
        let second = Self.adts(length: 140, fill: 3)
        let stream = first + second
        for cut in 121..<250 {
            let frames = Self.split([
                Self.packet(Array(stream[..<cut]), pts: 1000, offset: 0),
                Self.packet(Array(stream[cut...]), pts: 5000, offset: 188),
            ])
            #expect(frames.map(\.size) == [120, 130, 140], "cut at \(cut)")
            #expect(frames.map { $0.pts?.value } == [1000, 2920, 5000], "cut at \(cut)")
            #expect(frames.map(\.offset) == [0, 0, 188], "cut at \(cut)")
            #expect(frames.map(\.index) == [0, 1, 0], "cut at \(cut)")
        }
    }

    /// The same elementary stream cut into PES packets at random points gives the same frames and sizes as one
    /// PES (drip-feed), for every codec; random bytes never trap and give frames no larger than the input.
    @Test func randomCutsGiveTheSameFramesAndRandomBytesNeverTrap() async {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        await blocking {
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            func random(_ bound: Int) -> Int {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int((state >> 33) % UInt64(bound))
            }
            // AAC frames of random lengths, MPEG-1 layer II (384 bytes), AC-3 at 48 kHz, 96 kbit/s (frmsizecod 12:
            // 384 bytes).
            var aac: [UInt8] = []
            for _ in 0..<40 { aac += Self.adts(length: 7 + random(600)) }
            let mp2 = (0..<20).flatMap { _ in [0xFF, 0xFD, 0x84, 0x00] + [UInt8](repeating: 0x22, count: 380) }
            let ac3 = (0..<20).flatMap { _ in [0x0B, 0x77, 0, 0, 0x0C, 0x40] + [UInt8](repeating: 0x33, count: 378) }
            for (codec, stream) in [(Codec.aac, aac), (.mpegAudio, mp2), (.ac3, ac3)] {
                let whole = Self.split([Self.packet(stream, pts: 0, offset: 0)], codec: codec)
                #expect(whole.map(\.size).reduce(0, +) == stream.count, "\(codec)")
                for round in 0..<50 {
                    var packets: [PESPacket] = []
                    var start = 0
                    while start < stream.count {
                        let end = min(stream.count, start + 1 + random(round < 25 ? 64 : 2000))
                        packets.append(Self.packet(Array(stream[start..<end]), pts: nil, offset: Int64(start)))
                        start = end
                    }
                    let cut = Self.split(packets, codec: codec)
                    #expect(cut.map(\.size) == whole.map(\.size), "\(codec) round \(round)")
                }
                for _ in 0..<200 {
                    let noise = (0..<random(3000)).map { _ in UInt8(truncatingIfNeeded: random(256)) }
                    let frames = Self.split([Self.packet(noise, pts: 5, offset: 0)], codec: codec)
                    #expect(frames.map(\.size).reduce(0, +) <= noise.count)
                }
            }
        }
    }

    @Test func bytesThatAreNoFrameAreSkipped() {
        let payload = [0x00, 0x12, 0xFF] + Self.adts(length: 64) + [0xFF, 0x00] + Self.adts(length: 80)
        let frames = Self.split([Self.packet(payload, pts: 0, offset: 0)])
        #expect(frames.map(\.size) == [64, 80])
        #expect(frames.map { $0.pts?.value } == [0, 1920])
        // Another codec's bytes give no frames and never trap.
        #expect(Self.split([Self.packet(payload, pts: 0, offset: 0)], codec: .ac3).isEmpty)
        #expect(Self.split([Self.packet(payload, pts: 0, offset: 0)], codec: .mpegAudio).map(\.size) != [64, 80])
    }

    /// MPEG-1 layer II at 48 kHz, 128 kbit/s: 384 bytes, 1152 samples; MPEG-2 layer III at 22.05 kHz, 64 kbit/s:
    /// 72 * 64000 / 22050 = 208 bytes (plus padding), 576 samples.
    @Test func mpegAudioHeaders() {
        let layer2 = AudioFrames.mpegAudio([0xFF, 0xFD, 0x84, 0x00], at: 0)
        #expect(layer2?.length == 384 && layer2?.samples == 1152 && layer2?.sampleRate == 48000)
        let layer3 = AudioFrames.mpegAudio([0xFF, 0xF3, 0x82, 0x00], at: 0)
        #expect(layer3?.length == 209 && layer3?.samples == 576 && layer3?.sampleRate == 22050)
        #expect(AudioFrames.mpegAudio([0xFF, 0xFD, 0x04, 0x00], at: 0) == nil, "free format")
        #expect(AudioFrames.mpegAudio([0xFF, 0xEF, 0x84, 0x00], at: 0) == nil, "reserved version")
        #expect(AudioFrames.mpegAudio([0xFF, 0xFD, 0x84], at: 0) == nil, "short")
    }

    /// Time steps as ffmpeg's: whole ticks added for AC-3 and MPEG audio (rounded down), av_add_stable for AAC.
    @Test func timeStepsRoundAsFFmpegDoes() {
        func next(_ ts: UInt64, _ samples: Int, _ rate: Int, stable: Bool, negativeFrom: UInt64? = nil) -> UInt64 {
            AudioFrameSplitter.next(
                Timestamp(wrapping: ts), samples: samples, sampleRate: rate, stable: stable, negativeFrom: negativeFrom
            ).value
        }
        #expect(next(126_000, 1024, 48000, stable: true) == 127_920)
        // 1024 samples at 44.1 kHz: 2089.8 ticks; ffprobe lists 126000, 128090, 130179 (from an ffmpeg file).
        #expect(next(126_000, 1024, 44100, stable: true) == 128_090)
        #expect(next(128_090, 1024, 44100, stable: true) == 130_179)
        // MPEG audio, 1152 samples at 22.05 kHz: 4702.04 ticks, 4702 added (168318 -> 173020 in ffprobe).
        #expect(next(168_318, 1152, 22050, stable: false) == 173_020)
        // Near the wrap ffmpeg counts from 2^33 (ffprobe: -57682, -55592, -53503).
        let m = Timestamp.modulus
        let from = m - 57_682 - 5_400_000
        #expect(next(m - 57_682, 1024, 44100, stable: true, negativeFrom: from) == m - 55_592)
        #expect(next(m - 55_592, 1024, 44100, stable: true, negativeFrom: from) == m - 53_503)
        #expect(next(m - 1, 1536, 48000, stable: false) == 2879)
    }
}
