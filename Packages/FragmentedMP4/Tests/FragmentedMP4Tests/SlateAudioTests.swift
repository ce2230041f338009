import Testing

@testable import FragmentedMP4

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
