import Testing

@testable import FragmentedMP4
@testable import MPEGTS

/// The silent audio of fMP4 slates: which content track carries it, the fragments, and where a segment's audio ends.
@Suite struct SlateAudioTests {
    @Test func theContentsAACTrackIsFoundAndOthersAreNot() throws {
        let audio = try #require(FragmentedSlateTemplate.audioTrack(initSection: try Fixtures.initSegment()))
        #expect(audio.id == 2 && audio.timescale == 48000 && audio.channels == 2)
        let ac3Only = try InitSegment(tracks: [
            Track(
                trackID: 4, timescale: 48000,
                codec: .ac3(
                    AC3SpecificBox(fscod: 0, acmod: 7, lfeon: true, bitRateCode: 15), channelCount: 6,
                    sampleRate: 48000))
        ]).serialized()
        #expect(FragmentedSlateTemplate.audioTrack(initSection: ac3Only) == nil)
        #expect(FragmentedSlateTemplate.audioTrack(initSection: [0, 0, 0, 8]) == nil)
        #expect(FragmentedSlateTemplate.presentationShift(initSection: try Fixtures.initSegment(), trackID: 2) == 0)
    }

    /// AAC-LC in every channel configuration with a silent frame (1 to 7: mono to 7.1) is carried, its frames
    /// chosen by the AudioSpecificConfig's configuration, not the sample entry's channel count (2 for 5.1 in some
    /// muxers); the frames are MPEGTS's TS slate frames. HE-AAC, a PCE layout, AC-3, E-AC-3 are not carried, and
    /// the diagnostic names the codec.
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
            (try initSection(5, 2), "HE-AAC (mp4a.40.5)"),
            (try initSection(29, 2), "HE-AAC v2 (mp4a.40.29)"),
            (try initSection(2, 0), "AAC-LC with a program config element layout"),
            (
                try InitSegment(tracks: [
                    Track(
                        trackID: 4, timescale: 48000,
                        codec: .ac3(
                            AC3SpecificBox(fscod: 0, acmod: 7, lfeon: true, bitRateCode: 15), channelCount: 6,
                            sampleRate: 48000))
                ]).serialized(), "AC-3"
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
