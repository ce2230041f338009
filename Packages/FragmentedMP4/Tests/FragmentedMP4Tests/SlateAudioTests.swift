import Testing

@testable import FragmentedMP4
@testable import MPEGTS

/// The silent audio of fMP4 slates: which content track carries it, the fragments, and where a segment's audio ends.
@Suite struct SlateAudioTests {
    @Test func theContentsAACTrackIsFoundAndOthersAreNot() throws {
        let audio = try #require(FragmentedSlateTemplate.audioTrack(initSection: try Fixtures.initSegment()))
        #expect(audio.id == 2 && audio.timescale == 48000 && audio.channels == 2 && audio.frameDuration == 1024)
        #expect(FragmentedSlateTemplate.audioTrack(initSection: [0, 0, 0, 8]) == nil)
        #expect(FragmentedSlateTemplate.presentationShift(initSection: try Fixtures.initSegment(), trackID: 2) == 0)
    }

    /// AAC-LC in every channel configuration with a silent frame (1 to 7: mono to 7.1) is carried, its frames
    /// chosen by the AudioSpecificConfig's configuration, not the sample entry's channel count (2 for 5.1 in some
    /// muxers); the frames are MPEGTS's TS slate frames. HE-AAC without its explicit signalling (the 2-byte
    /// AudioSpecificConfig says neither its output rate nor its core), a PCE layout, E-AC-3 with dependent
    /// substreams, dual-mono AC-3 and MPEG audio are not carried, and the diagnostic names the codec.
    @Test func multichannelAACIsCarriedAndWhatCannotBeSaysWhy() throws {
        func initSection(_ objectType: UInt8, _ configuration: UInt8) throws -> [UInt8] {
            try InitSegment(tracks: [
                Track(
                    trackID: 3, timescale: 48000,
                    codec: .aac(
                        AudioSpecificConfig(
                            objectType: objectType, samplingFrequencyIndex: 3, channelConfiguration: configuration)))
            ]).serialized()
        }
        for configuration in UInt8(1)...7 {
            let audio = try #require(FragmentedSlateTemplate.audioTrack(initSection: try initSection(2, configuration)))
            #expect(audio.channelConfiguration == Int(configuration) && audio.id == 3)
            let fragment = FragmentedSlateTemplate.silentAudioFragment(
                audio: audio, firstDecodeTime: 0, frames: 3, sequence: 1)
            let mdat = try #require(try BoxReader.parse(fragment).first { $0.type == .mdat })
            let frame = try #require(SlateBuilder.silentAAC[Int(configuration)])
            #expect(mdat.data == frame + frame + frame, "configuration \(configuration)")
            #expect(
                FragmentedSlateTemplate.silentAudioUnavailable(initSection: try initSection(2, configuration)) == nil)
        }
        let cases: [([UInt8], String)] = [
            (
                try initSection(5, 2),
                "HE-AAC (mp4a.40.5) whose timescale is not its output rate, or whose core is not AAC-LC in a channel "
                    + "layout 1 to 7"
            ),
            (
                try initSection(29, 2),
                "HE-AAC v2 (mp4a.40.29) whose timescale is not its output rate, or whose core is not AAC-LC in a "
                    + "channel layout 1 (mono)"
            ),
            (
                try Self.heAACInit(objectType: 29, configuration: 2),
                "HE-AAC v2 (mp4a.40.29) whose timescale is not its output rate, or whose core is not AAC-LC in a "
                    + "channel layout 1 (mono)"
            ),
            (
                try Self.heAACInit(objectType: 5, configuration: 2, timescale: 24000),
                "HE-AAC (mp4a.40.5) whose timescale is not its output rate, or whose core is not AAC-LC in a channel "
                    + "layout 1 to 7"
            ),
            (try initSection(2, 0), "AAC-LC with a program config element layout"),
            (
                try InitSegment(tracks: [
                    Track(
                        trackID: 4, timescale: 48000,
                        codec: .eac3(
                            try EC3SpecificBox(
                                dataRate: 768,
                                substreams: [
                                    .init(
                                        fscod: 0, acmod: 7, lfeon: true, dependentSubstreamCount: 1,
                                        channelLocations: 0x002)
                                ]),
                            channelCount: 8, sampleRate: 48000))
                ]).serialized(),
                "E-AC-3 with dependent substreams, in dual mono or whose sample rate is not its timescale"
            ),
            (
                try InitSegment(tracks: [
                    Track(trackID: 4, timescale: 48000, codec: .mp3(channelCount: 2, sampleRate: 48000))
                ]).serialized(), "MPEG audio"
            ),
            (
                try ac3Section(acmod: 0, lfeon: false, channels: 2),
                "AC-3 in dual mono or without a dac3, or whose sample rate is not its timescale"
            ),
        ]
        for (section, codec) in cases {
            #expect(FragmentedSlateTemplate.audioTrack(initSection: section) == nil, "\(codec)")
            #expect(
                FragmentedSlateTemplate.silentAudioUnavailable(initSection: section)
                    == "the content's audio is \(codec): slates carry no audio (silence for it needs an encoder)")
        }
        // No sound track at all: nothing to say.
        #expect(FragmentedSlateTemplate.silentAudioUnavailable(initSection: [0, 0, 0, 8]) == nil)
    }

    func ac3Section(fscod: UInt8 = 0, acmod: UInt8, lfeon: Bool, bitRateCode: UInt8 = 15, channels: UInt16)
        throws -> [UInt8]
    {
        let rate: UInt32 = [48000, 44100, 32000][Int(fscod)]
        return try InitSegment(tracks: [
            Track(
                trackID: 4, timescale: rate,
                codec: .ac3(
                    AC3SpecificBox(fscod: fscod, bsmod: 1, acmod: acmod, lfeon: lfeon, bitRateCode: bitRateCode),
                    channelCount: channels, sampleRate: rate))
        ]).serialized()
    }

    /// AC-3 is carried: the silent sync frames are MPEGTS's, for the `dac3`'s rate, bit rate (frmsizecod twice its
    /// bit_rate_code), bit stream mode and layout, each lasting 1536 ticks.
    @Test func ac3IsCarriedWithFramesForItsDac3() throws {
        for (fscod, acmod, lfeon, channels) in [(0, 7, true, 6), (1, 2, false, 2), (2, 1, false, 1)]
            as [(UInt8, UInt8, Bool, UInt16)]
        {
            let section = try ac3Section(fscod: fscod, acmod: acmod, lfeon: lfeon, channels: channels)
            let audio = try #require(FragmentedSlateTemplate.audioTrack(initSection: section))
            #expect(audio.id == 4 && audio.channels == Int(channels) && audio.frameDuration == 1536)
            #expect(FragmentedSlateTemplate.silentAudioUnavailable(initSection: section) == nil)
            let expected = try #require(
                SilentAC3(
                    sampleRateCode: Int(fscod), frameSizeCode: 30, bitStreamMode: 1, codingMode: Int(acmod), lfe: lfeon
                ).frame)
            let fragment = FragmentedSlateTemplate.silentAudioFragment(
                audio: audio, firstDecodeTime: 1536, frames: 2, sequence: 1)
            let mdat = try #require(try BoxReader.parse(fragment).first { $0.type == .mdat })
            #expect(mdat.data == expected + expected)
            #expect(FragmentedSlateTemplate.audioEnd(segment: fragment, track: audio) == 1536 * 3)
        }
    }

    /// E-AC-3 of one independent substream is carried: six-block frames for the `dec3`'s rate and layout, as long
    /// as its data rate makes 1536 samples (384 kbit/s at 48 kHz: 1536 bytes).
    @Test func eac3IsCarriedWithFramesForItsDec3() throws {
        for (fscod, acmod, lfeon, channels, bytes) in [
            (0, 7, true, 6, 1536), (1, 2, false, 2, 1670), (2, 1, false, 1, 2304),
        ]
            as [(UInt8, UInt8, Bool, UInt16, Int)]
        {
            let rate: UInt32 = [48000, 44100, 32000][Int(fscod)]
            let section = try InitSegment(tracks: [
                Track(
                    trackID: 5, timescale: rate,
                    codec: .eac3(
                        try EC3SpecificBox(
                            dataRate: 384, substreams: [.init(fscod: fscod, acmod: acmod, lfeon: lfeon)]),
                        channelCount: channels, sampleRate: rate))
            ]).serialized()
            let audio = try #require(FragmentedSlateTemplate.audioTrack(initSection: section))
            #expect(audio.id == 5 && audio.channels == Int(channels) && audio.frameDuration == 1536)
            #expect(FragmentedSlateTemplate.silentAudioUnavailable(initSection: section) == nil)
            let expected = try #require(
                SilentEAC3(sampleRateCode: Int(fscod), frameBytes: bytes, codingMode: Int(acmod), lfe: lfeon).frame)
            let fragment = FragmentedSlateTemplate.silentAudioFragment(
                audio: audio, firstDecodeTime: 0, frames: 3, sequence: 1)
            let mdat = try #require(try BoxReader.parse(fragment).first { $0.type == .mdat })
            #expect(mdat.data == expected + expected + expected, "fscod \(fscod)")
        }
    }

    /// An init section of one HE-AAC track (ID 6) with explicit signalling (ISO/IEC 14496-3 1.6.2.1): object type
    /// 5 or 29, the core's 24 kHz, its channel configuration, the 48 kHz output rate, the core's object type 2
    /// (AAC-LC); the sample entry at 48 kHz and the track's timescale `timescale`.
    static func heAACInit(objectType: Int, configuration: Int, timescale: UInt32 = 48000) throws -> [UInt8] {
        var bits = 0
        for (value, count) in [(objectType, 5), (6, 4), (configuration, 4), (3, 4), (2, 5), (0, 2)] {
            bits = bits << count | value
        }
        let asc = [UInt8(bits >> 16), UInt8(bits >> 8 & 0xFF), UInt8(bits & 0xFF)]
        let plain = try InitSegment(tracks: [
            Track(
                trackID: 6, timescale: timescale,
                codec: .aac(
                    AudioSpecificConfig(
                        objectType: 2, samplingFrequencyIndex: 3, channelConfiguration: UInt8(configuration))))
        ]).serialized()
        // The sample description rewritten with the HE-AAC AudioSpecificConfig.
        var entry = BoxWriter()
        entry.write(
            AudioSampleEntry(
                format: "mp4a", channelCount: 2, sampleRate: 48000,
                configuration: ElementaryStreamDescriptorBox(objectTypeIndication: 0x40, decoderSpecificInfo: asc)))
        let stsd: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1] + entry.bytes
        func replacing(_ boxes: [Box], _ path: ArraySlice<FourCC>) -> [Box] {
            boxes.map { box in
                guard box.type == path.first else { return box }
                var box = box
                box.content = path.count == 1 ? .data(stsd) : .children(replacing(box.children, path.dropFirst()))
                return box
            }
        }
        var writer = BoxWriter()
        for box in replacing(try BoxReader.parse(plain), [.moov, .trak, .mdia, .minf, .stbl, .stsd]) {
            writer.write(box)
        }
        return writer.bytes
    }

    /// HE-AAC with explicit signalling (SBR on a stereo core, and SBR and PS on a mono core) is carried: the core's
    /// silent AAC-LC block with no extension payload, 2048 ticks of the 48 kHz output rate per frame.
    @Test func heAACIsCarriedWithTheCoresSilentFrames() throws {
        for (objectType, configuration) in [(5, 2), (5, 1), (29, 1)] {
            let section = try Self.heAACInit(objectType: objectType, configuration: configuration)
            let audio = try #require(
                FragmentedSlateTemplate.audioTrack(initSection: section), "object type \(objectType)")
            #expect(audio.id == 6 && audio.timescale == 48000 && audio.frameDuration == 2048)
            #expect(audio.channelConfiguration == configuration)
            #expect(FragmentedSlateTemplate.silentAudioUnavailable(initSection: section) == nil)
            let fragment = FragmentedSlateTemplate.silentAudioFragment(
                audio: audio, firstDecodeTime: 2048, frames: 2, sequence: 1)
            let mdat = try #require(try BoxReader.parse(fragment).first { $0.type == .mdat })
            let frame = try #require(SlateBuilder.silentAAC[configuration])
            #expect(mdat.data == frame + frame)
            #expect(FragmentedSlateTemplate.audioEnd(segment: fragment, track: audio) == 2048 * 3)
        }
    }

    @Test func aSilentFragmentHoldsItsFramesFromItsDecodeTime() throws {
        let audio = try #require(FragmentedSlateTemplate.audioTrack(initSection: try Fixtures.initSegment()))
        let fragment = FragmentedSlateTemplate.silentAudioFragment(
            audio: audio, firstDecodeTime: 96_000, frames: 94, sequence: 60)
        let boxes = try BoxReader.parse(fragment)
        #expect(boxes.map(\.type) == [.moof, .mdat])
        let moof = boxes[0]
        let mfhd = try #require(moof.child(.mfhd)?.data)
        #expect(FragmentedSlateTemplate.uint32(mfhd, 4) == 60)
        let tfhd = try #require(moof.descendant([.traf, .tfhd])?.data)
        #expect(FragmentedSlateTemplate.uint32(tfhd, 4) == 2)
        let trun = try #require(moof.descendant([.traf, .trun])?.data)
        #expect(FragmentedSlateTemplate.uint32(trun, 4) == 94)
        // The data offset (from the moof, as tfhd's default-base-is-moof says) is the mdat's first byte.
        let moofSize = fragment.count - 8 - 94 * 9
        #expect(Int(FragmentedSlateTemplate.uint32(trun, 8)) == moofSize + 8)
        #expect(boxes[1].data.count == 94 * 9)
        #expect(FragmentedSlateTemplate.audioEnd(segment: fragment, track: audio) == 96_000 + 94 * 1024)
        #expect(
            FragmentedSlateTemplate.silentAudioFragment(audio: audio, firstDecodeTime: 0, frames: 0, sequence: 1)
                .isEmpty)
    }
}
