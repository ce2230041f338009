import HLSAdFilter
import Testing

@Suite struct SCTE35Tests {
    // ANSI/SCTE 35 2019 §14.1: time_signal, placement opportunity start, 307 s.
    @Test func specTimeSignalSample() throws {
        let cue = try #require(
            SCTE35Cue(text: "/DA0AAAAAAAA///wBQb+cr0AUAAeAhxDVUVJSAAAjn/PAAGlmbAICAAAAAAsoKGKNAIAmsnRfg=="))
        #expect(cue.commandType == 0x06)
        #expect(cue.segmentations.first?.typeID == 0x34)
        #expect(cue.signal == .adStart(duration: 307.0))
    }

    // ANSI/SCTE 35 2019 §14.2: splice_insert, out of network, with a break duration.
    @Test func specSpliceInsertSample() throws {
        let cue = try #require(SCTE35Cue(text: "/DAvAAAAAAAA///wFAVIAACPf+/+c2nALv4AUsz1AAAAAAAKAAhDVUVJAAABNWLbowo="))
        #expect(cue.commandType == 0x05)
        #expect(cue.outOfNetwork == true)
        let duration = try #require(cue.breakDuration)
        #expect(abs(duration - 60.293566) < 0.001)
    }

    @Test func hexAndBase64Agree() throws {
        let hex = try #require(
            SCTE35Cue(text: "0xFC302000000000000000FFF00F05000000027FFFFE00107AC000010000000075B29620"))
        #expect(hex.signal == .adStart(duration: 12))
        let input = try #require(SCTE35Cue(text: "/DAbAAAAAAAAAP/wCgUAAAABf18AAQAAAACRp46e"))
        #expect(input.signal == .adEnd)
    }

    @Test func nonAdSegmentationIsNotAnAd() throws {
        let chapter = try #require(
            SCTE35Cue(
                text: "0xFC302C00000000000000FFF00506FE0001E2400016021443554549000000077FFF00005265C00000200000CDF05067"
            ))
        #expect(chapter.segmentations.first?.typeID == 0x20)
        #expect(chapter.signal == .none)
    }

    @Test func everyPrefixIsRejectedOrDecodedWithoutTrapping() throws {
        let bytes = try #require(
            SCTE35Cue.payloadBytes("/DA0AAAAAAAA///wBQb+cr0AUAAeAhxDVUVJSAAAjn/PAAGlmbAICAAAAAAsoKGKNAIAmsnRfg=="))
        for n in 0..<bytes.count {
            let cue = SCTE35Cue(bytes: Array(bytes.prefix(n)))
            // A cut-short section never claims an ad with a duration it did not finish reading.
            if let cue, case .adStart(let d) = cue.signal { #expect(d == nil || d == 307.0) }
        }
        var corrupted = bytes
        corrupted[corrupted.count - 1] ^= 0xFF
        #expect(SCTE35Cue(bytes: corrupted) == nil, "a CRC mismatch is rejected")
        #expect(SCTE35Cue(text: "not base64!") == nil)
        #expect(SCTE35Cue(text: "") == nil)
    }
}
