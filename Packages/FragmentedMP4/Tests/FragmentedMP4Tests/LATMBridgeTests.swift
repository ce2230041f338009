import Testing

@testable import FragmentedMP4
@testable import MPEGTS

/// AAC in LATM/LOAS (stream_type 0x11) through the TS-to-fMP4 bridge, on hand-built frames (TestSupport's
/// `LATMFrameSpec`): the `esds` carries the StreamMuxConfig's AudioSpecificConfig as the stream carried it, the
/// CODECS string names SBR or PS where the stream signals them, each raw access unit is one sample; a LATM stream
/// whose frames do not read is left out naming its PID and why.
@Suite struct LATMBridgeTests {
    static let pid: UInt16 = 0x101

    /// The DecoderSpecificInfo of the first `esds` in an init segment (its body from the version and flags on).
    static func decoderSpecificInfo(_ initSegment: [UInt8]) -> [UInt8]? {
        let tag = Array("esds".utf8)
        guard let at = (4..<(initSegment.count - 4)).first(where: { Array(initSegment[$0..<($0 + 4)]) == tag })
        else { return nil }
        let size = initSegment[(at - 4)..<at].reduce(0) { $0 << 8 | Int($1) }
        guard at - 4 + size <= initSegment.count else { return nil }
        return FragmentedSlateTemplate.decoderSpecificInfo(Array(initSegment[(at + 4)..<(at - 4 + size)]))
    }

    /// A TS of one LATM stream: three PES of two frames each, 1024 samples at `rate` per frame; the first frame
    /// carries `config` (unless not `configured`), the rest reuse it. With `split`, the PES boundaries fall inside
    /// frames.
    static func stream(_ config: LATMFrameSpec, rate: Int, split: Bool = false, configured: Bool = true)
        -> (bytes: [UInt8], units: [[UInt8]])
    {
        var ts = TSBuilder(streams: [ElementaryStream(streamType: .aacLATM, pid: pid)])
        var units: [[UInt8]] = []
        var frames: [UInt8] = []
        for number in 0..<6 {
            let unit = (0..<(20 + number)).map { UInt8(truncatingIfNeeded: $0 &+ number &* 31) }
            units.append(unit)
            var spec = config
            if number > 0 || !configured { spec.audioSpecificConfig = nil }
            spec.payload = unit
            frames += spec.bytes
        }
        let ticks = 1024 * 90000 / rate
        let third = frames.count / 3
        for part in 0..<3 {
            let range = split ? (part * third)..<(part == 2 ? frames.count : (part + 1) * third) : nil
            let payload = range.map { Array(frames[$0]) } ?? frameRange(frames, part)
            ts.pes(pid: pid, streamID: 0xC0, pts: UInt64(90000 + part * 2 * ticks), payload: payload)
        }
        return (ts.bytes, units)
    }

    /// The bytes of frames 2·part and 2·part+1.
    static func frameRange(_ frames: [UInt8], _ part: Int) -> [UInt8] {
        var starts: [Int] = []
        var at = 0
        while let length = LOASReader.frameLength(frames, at: at) {
            starts.append(at)
            at += length
        }
        starts.append(frames.count)
        return Array(frames[starts[2 * part]..<starts[2 * part + 2]])
    }

    /// A hand-built HE-AAC StreamMuxConfig in each form the stream may signal it, and AAC-LC: the init segment's
    /// `esds` holds the ASC bits the stream carried; the CODECS string is `mp4a.40.5` or `mp4a.40.29` when SBR or
    /// PS is signalled (explicitly or by the sync extension; implicit signalling cannot be seen and stays 40.2);
    /// the track runs at the core's rate (24 kHz for HE-AAC at 48 kHz out), 1024 ticks a sample, one raw access
    /// unit a sample, whether or not PES boundaries cut frames.
    @Test(arguments: [
        ("LC", 2), ("explicit SBR", 5), ("explicit SBR+PS", 29), ("sync extension SBR", 5),
        ("sync extension SBR+PS", 29),
    ])
    func configurationAndSamples(form: String, expectedType: Int) throws {
        let heAAC = form != "LC"
        let asc = LATMFrameSpec.audioSpecificConfig(
            frequencyIndex: heAAC ? 6 : 3, channels: expectedType == 29 ? 1 : 2,
            extensionType: form.hasPrefix("explicit") ? expectedType : nil)
        var spec = LATMFrameSpec(audioSpecificConfig: asc, payload: [])
        var carried = asc
        if form.hasPrefix("sync extension") {
            spec.audioMuxVersion = 1
            let tail = LATMFrameSpec.backwardCompatibleExtension(ps: expectedType == 29)
            spec.ascTail = tail
            carried.append(tail)
        }
        let rate = heAAC ? 24000 : 48000
        for split in [false, true] {
            let (bytes, units) = Self.stream(spec, rate: rate, split: split)
            let layout = try TSProgramLayout(head: bytes)
            let codec = try #require(layout.codecs[Self.pid])
            #expect(codec.codecString == "mp4a.40.\(expectedType)", "\(form)")
            #expect(codec.timescale == UInt32(rate) && codec.channelCount == (expectedType == 29 ? 1 : 2))
            let initSegment = try layout.initSegment().serialized()
            #expect(Self.decoderSpecificInfo(initSegment) == carried.bytes, "\(form)")
            let timeline = TSTimeline(firstTimestamp: Timestamp(wrapping: UInt64(90000)))
            let fragment = try #require(try layout.wholeFragments(of: bytes, timeline: timeline)[Self.pid])
            #expect(fragment.samples.map(\.data) == units, "\(form), split \(split)")
            #expect(fragment.samples.map(\.duration) == Array(repeating: 1024, count: 6))
            #expect(
                fragment.baseMediaDecodeTime
                    == timeline.time(Timestamp(wrapping: UInt64(90000)), timescale: UInt32(rate)))
            // A range cut where the stream does not repeat its StreamMuxConfig: a fragmenter with the layout's
            // sample entries reads its frames with that configuration.
            let (later, laterUnits) = Self.stream(spec, rate: rate, split: split, configured: false)
            let range = try #require(try layout.wholeFragments(of: later, timeline: timeline)[Self.pid])
            #expect(range.samples.map(\.data) == laterUnits, "\(form), split \(split), range")
        }
    }

    /// The position of the first box `type` in `bytes` (its type's first byte), or nil.
    static func box(_ type: String, in bytes: [UInt8]) -> Int? {
        let tag = Array(type.utf8)
        return (4..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == tag }
    }

    /// A big-endian integer of `count` bytes at `at`.
    static func integer(_ bytes: [UInt8], at: Int, count: Int) -> Int {
        bytes[at..<(at + count)].reduce(0) { $0 << 8 | Int($1) }
    }

    /// HE-AAC (SBR, object type 5) and HE-AAC v2 (SBR and PS, 29) at 48 kHz out of a 24 kHz AAC-LC core, in each way a
    /// StreamMuxConfig may signal them, checked against AudioSpecificConfig bytes worked out by hand from ISO/IEC
    /// 14496-3 1.6.2.1 (not from the builder): explicit hierarchical (the ASC begins with type 5 or 29, the core's
    /// frequency index 6, channels, the extension frequency index 3, then type 2), backward-compatible (an AAC-LC ASC,
    /// then sync 0x2B7, type 5, sbrPresentFlag, index 3, and for PS sync 0x548, psPresentFlag) and implicit (a plain
    /// AAC-LC ASC at 24 kHz: the decoder finds SBR in the access units, nothing in the configuration says it). The
    /// `esds` carries those bytes; CODECS names 5 or 29 where the configuration signals it (40.2 when implicit). The
    /// sample entry and the timescale state the AAC core, as the ASC's own fields do: `mp4a` at 24,000 Hz (its
    /// channelcount 14496-14's template 2; the channel configuration is the ASC's, 1 for HE-AAC v2, whose PS makes
    /// stereo in the decoder), the `mdhd` timescale 24,000, each access unit a sample of 1024 ticks: 42.67 ms, which is
    /// the 2048 output samples at 48 kHz that an HE-AAC decoder makes of it. A decoder takes the output rate and
    /// channels from the ASC (or, for implicit signalling, from the access units), so one rule serves every form, and a
    /// decoder without SBR plays the core at the same times.
    @Test(arguments: [
        ("explicit SBR", [0x2B, 0x11, 0x88, 0x00], "mp4a.40.5", 2),
        ("explicit SBR+PS", [0xEB, 0x09, 0x88, 0x00], "mp4a.40.29", 1),
        ("sync extension SBR", [0x13, 0x10, 0x56, 0xE5, 0x98], "mp4a.40.5", 2),
        ("sync extension SBR+PS", [0x13, 0x08, 0x56, 0xE5, 0x9D, 0x48, 0x80], "mp4a.40.29", 1),
        ("implicit", [0x13, 0x10], "mp4a.40.2", 2),
    ])
    func heAACSignalledAsTheStreamSignalsIt(form: String, asc: [UInt8], codecs: String, channels: Int) throws {
        let ps = codecs == "mp4a.40.29"
        var spec = LATMFrameSpec(
            audioSpecificConfig: LATMFrameSpec.audioSpecificConfig(
                frequencyIndex: 6, channels: channels, extensionType: form.hasPrefix("explicit") ? (ps ? 29 : 5) : nil,
                extensionFrequencyIndex: 3),
            payload: [])
        if form.hasPrefix("sync extension") {
            spec.audioMuxVersion = 1
            spec.ascTail = LATMFrameSpec.backwardCompatibleExtension(ps: ps)
        }
        let (bytes, units) = Self.stream(spec, rate: 24000)
        let layout = try TSProgramLayout(head: bytes)
        let codec = try #require(layout.codecs[Self.pid])
        #expect(codec.codecString == codecs, "\(form)")
        let initSegment = try layout.initSegment().serialized()
        #expect(Self.decoderSpecificInfo(initSegment) == asc, "\(form)")
        let mp4a = try #require(Self.box("mp4a", in: initSegment))
        // channelcount is 14496-14's template value, 2, whatever the ASC's channel configuration (1 for HE-AAC v2).
        #expect(Self.integer(initSegment, at: mp4a + 20, count: 2) == 2, "\(form): mp4a channelcount")
        #expect(codec.channelCount == channels, "\(form)")
        #expect(Self.integer(initSegment, at: mp4a + 28, count: 4) == 24000 << 16, "\(form): mp4a samplerate")
        let mdhd = try #require(Self.box("mdhd", in: initSegment))
        let version = initSegment[mdhd + 4]
        #expect(
            Self.integer(initSegment, at: mdhd + (version == 1 ? 24 : 16), count: 4) == 24000, "\(form): timescale")
        let timeline = TSTimeline(firstTimestamp: Timestamp(wrapping: UInt64(90000)))
        let fragment = try #require(try layout.wholeFragments(of: bytes, timeline: timeline)[Self.pid])
        #expect(fragment.samples.map(\.data) == units, "\(form)")
        #expect(fragment.samples.map(\.duration) == Array(repeating: 1024, count: 6), "\(form)")
    }

    /// A LATM stream beside an ADTS one, whose StreamMuxConfig has two subframes (not read): the layout keeps the
    /// ADTS track and names the LATM PID as left out, with the reason; alone, the LATM stream fails the layout with
    /// `missingConfiguration` naming its PID. Frames before any StreamMuxConfig are dropped and counted.
    @Test func unreadableLATMIsLeftOutByPID() throws {
        var spec = LATMFrameSpec(audioSpecificConfig: LATMFrameSpec.audioSpecificConfig(), payload: [1, 2, 3])
        spec.subFrames = 1
        var ts = TSBuilder(streams: [
            ElementaryStream(streamType: .aacADTS, pid: 0x102), ElementaryStream(streamType: .aacLATM, pid: Self.pid),
        ])
        for number in 0..<3 {
            ts.pes(pid: 0x102, streamID: 0xC0, pts: UInt64(number * 1920), payload: adtsFrame([UInt8(number)]))
            ts.pes(pid: Self.pid, streamID: 0xC1, pts: UInt64(number * 1920), payload: spec.bytes)
        }
        let layout = try TSProgramLayout(head: ts.bytes)
        #expect(layout.tracks.map(\.pid) == [0x102])
        #expect(layout.skipped.map(\.pid) == [Self.pid])
        #expect(layout.skipped.first?.reason.hasPrefix("aac_latm that cannot be read: ") == true)
        var alone = TSBuilder(streams: [ElementaryStream(streamType: .aacLATM, pid: Self.pid)])
        alone.pes(pid: Self.pid, streamID: 0xC0, pts: 0, payload: spec.bytes)
        #expect {
            try TSProgramLayout(head: alone.bytes)
        } throws: { error in
            guard let error = error as? FragmentedMP4Error else { return false }
            return error.code == .missingConfiguration && error.detail.contains("PID 257")
        }
        // useSameStreamMux before any configuration, then garbage, then a configured frame: one sample.
        var builder = try TSTrackBuilder(pid: Self.pid, codec: .aacLATM)
        let early = LATMFrameSpec(audioSpecificConfig: nil, payload: [5]).bytes
        let good = LATMFrameSpec(audioSpecificConfig: LATMFrameSpec.audioSpecificConfig(), payload: [6, 6]).bytes
        let info = PESInfo(
            pid: Self.pid, streamID: 0xC0, pts: Timestamp(wrapping: UInt64(0)), dts: nil, isKeyframe: true,
            randomAccessIndicator: false, offset: 376, packetLength: 0)
        builder.append(PESPacket(info: info, header: PESHeader(streamID: 0xC0), payload: early + [1, 2, 3] + good))
        #expect(builder.frameError?.code == .invalidValue && builder.frameError?.offset == 376)
        #expect(builder.droppedBytes == early.count + 3)
        let fragment = builder.takeFragment(
            trackID: 1, timeline: TSTimeline(firstTimestamp: Timestamp(wrapping: UInt64(0))))
        #expect(fragment?.samples.map(\.data) == [[6, 6]])
    }

    /// Random payloads on a LATM PID (some behind a LOAS sync word): the layout and the fragments give a value or
    /// a typed error, never a trap.
    @Test func randomPayloadsNeverTrap() async {
        // Seconds of computing in a debug build: off Swift's cooperative threads.
        await blocking {
            var generator = SplitMix64(seed: 11)
            for _ in 0..<300 {
                var ts = TSBuilder(streams: [ElementaryStream(streamType: .aacLATM, pid: Self.pid)])
                for number in 0..<4 {
                    let count = Int(generator.next() % 400)
                    var payload = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                    if count > 3, generator.next() % 2 == 0 {
                        payload[0] = 0x56
                        payload[1] = 0xE0 | UInt8((count - 3) >> 8)
                        payload[2] = UInt8((count - 3) & 0xFF)
                    }
                    ts.pes(pid: Self.pid, streamID: 0xC0, pts: UInt64(number * 1920), payload: payload)
                }
                guard let layout = try? TSProgramLayout(head: ts.bytes) else { continue }
                _ = try? layout.wholeFragments(
                    of: ts.bytes, timeline: TSTimeline(firstTimestamp: Timestamp(wrapping: UInt64(0))))
            }
        }
    }
}
