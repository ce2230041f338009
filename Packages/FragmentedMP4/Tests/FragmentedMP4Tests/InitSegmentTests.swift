import Testing

@testable import FragmentedMP4

@Suite struct InitSegmentTests {
    func sampleEntry(_ codec: TrackCodec) throws -> Box {
        let bytes = try InitSegment(tracks: [Track(trackID: 1, timescale: 1000, codec: codec)]).serialized()
        let moov = try #require(try BoxReader.parse(bytes).first("moov"))
        let stsd = try #require(moov.descendant(["trak", "mdia", "minf", "stbl", "stsd"]))
        // version/flags, entry count 1, then the one entry
        #expect(Array(stsd.data[0..<8]) == [0, 0, 0, 0, 0, 0, 0, 1])
        return try #require(try BoxReader.parse(Array(stsd.data.dropFirst(8))).first)
    }

    /// The configuration box at the end of a sample entry whose fixed fields take `fixed` bytes.
    func configuration(_ entry: Box, fixed: Int) throws -> Box {
        try #require(try BoxReader.parse(Array(entry.data.dropFirst(fixed))).first)
    }

    @Test func languageIsPackedISO639() {
        #expect(MediaHeaderBox.packedLanguage("und") == 0x55C4)
        #expect(MediaHeaderBox.packedLanguage("eng") == 0x15C7)
        #expect(MediaHeaderBox.packedLanguage("EN") == 0x55C4)
    }

    @Test func trackBoxes() throws {
        let moov = try #require(try BoxReader.parse(try Fixtures.initSegment()).first("moov"))
        let traks = moov.children.filter { $0.type == "trak" }
        let video = traks[0]
        let audio = traks[1]
        #expect(video.descendant(["mdia", "hdlr"]).map { Array($0.data[8..<12]) } == tag("vide"))
        #expect(audio.descendant(["mdia", "hdlr"]).map { Array($0.data[8..<12]) } == tag("soun"))
        #expect(video.descendant(["mdia", "minf"])?.children.map(\.type) == ["vmhd", "dinf", "stbl"])
        #expect(audio.descendant(["mdia", "minf"])?.children.map(\.type) == ["smhd", "dinf", "stbl"])
        let mdhd = try #require(audio.descendant(["mdia", "mdhd"]))
        #expect(uint32(mdhd.data, 12) == 48000 && Array(mdhd.data[20..<22]) == [0x15, 0xC7])
        let tkhd = try #require(video.child("tkhd"))
        #expect(uint32(tkhd.data, 12) == 1 && uint32(tkhd.data, 76) == 320 << 16 && uint32(tkhd.data, 80) == 240 << 16)
        let dref = try #require(video.descendant(["mdia", "minf", "dinf", "dref"]))
        #expect(dref.data == [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 12] + tag("url ") + [0, 0, 0, 1])
        let mvhd = try #require(moov.child("mvhd"))
        #expect(uint32(mvhd.data, 96) == 5)  // next_track_ID
        let trex = moov.descendant(["mvex"])?.children ?? []
        #expect(trex.map { uint32($0.data, 4) } == [1, 2, 3, 4])
    }

    @Test func avcC() throws {
        let entry = try sampleEntry(.avc(sps: [Fixtures.h264SPS], pps: [Fixtures.h264PPS], width: 320, height: 240))
        #expect(entry.type == "avc1")
        #expect(entry.data[24..<28] == [0x01, 0x40, 0x00, 0xF0])  // width, height
        let avcC = try configuration(entry, fixed: 78)
        #expect(avcC.type == "avcC")
        let sps = Fixtures.h264SPS
        let pps = Fixtures.h264PPS
        let expected: [UInt8] =
            [1, 0x64, 0x00, 0x0D, 0xFF, 0xE1, 0, UInt8(sps.count)] + sps + [1, 0, UInt8(pps.count)] + pps
            + [0xFD, 0xF8, 0xF8, 0]  // High profile: 4:2:0, 8-bit
        #expect(avcC.data == expected)
        #expect(throws: FragmentedMP4Error.self) { try AVCConfigurationBox(sps: [[0x67, 0x42]], pps: []) }
    }

    @Test func hvcC() throws {
        let entry = try sampleEntry(
            .hevc(vps: [Fixtures.hevcVPS], sps: [Fixtures.hevcSPS], pps: [Fixtures.hevcPPS], width: 320, height: 240))
        #expect(entry.type == "hvc1")
        let hvcC = try configuration(entry, fixed: 78)
        #expect(hvcC.type == "hvcC")
        let data = hvcC.data
        #expect(
            hex(Array(data[0..<23])) == "01" + "01" + "60000000" + "900000000000" + "3c" + "f000fcfdf8f8" + "0000"
                + "0f" + "03")
        // array_completeness 1, NAL types 32, 33, 34, one unit each
        var position = 23
        for (nalType, unit) in [(32, Fixtures.hevcVPS), (33, Fixtures.hevcSPS), (34, Fixtures.hevcPPS)] {
            #expect(data[position] == 0x80 | UInt8(nalType))
            #expect(Array(data[position + 1..<position + 5]) == [0, 1, 0, UInt8(unit.count)])
            #expect(Array(data[position + 5..<position + 5 + unit.count]) == unit)
            position += 5 + unit.count
        }
        #expect(position == data.count)
        #expect(throws: FragmentedMP4Error.self) {
            try HEVCConfigurationBox(vps: [], sps: [Array(Fixtures.hevcSPS.prefix(10))], pps: [])
        }
    }

    @Test func mp4aAndAudioSpecificConfig() throws {
        // An ADTS header of AAC-LC (profile 1), 44.1 kHz (index 4), stereo.
        let adts: [UInt8] = [0xFF, 0xF1, 0x50, 0x80, 0x2E, 0x7F, 0xFC]
        let config = try AudioSpecificConfig(adtsHeader: adts)
        #expect(config == AudioSpecificConfig(objectType: 2, samplingFrequencyIndex: 4, channelConfiguration: 2))
        #expect(config.bytes == [0x12, 0x10])
        #expect(throws: FragmentedMP4Error.self) { try AudioSpecificConfig(adtsHeader: [0xFF, 0xF1]) }
        #expect(throws: FragmentedMP4Error.self) { try AudioSpecificConfig(adtsHeader: [0x00, 0xF1, 0x50, 0x80]) }
        let entry = try sampleEntry(.aac(config))
        #expect(entry.type == "mp4a")
        #expect(entry.data[16..<18] == [0, 2] && uint32(entry.data, 24) == 44100 << 16)
        let esds = try configuration(entry, fixed: 28)
        #expect(esds.type == "esds")
        #expect(
            hex(esds.data) == "00000000" + "0319" + "000000" + "0411" + "40" + "15" + "000000" + "00000000" + "00000000"
                + "05021210" + "060102")
    }

    @Test func mp3HasNoDecoderSpecificInfo() throws {
        let entry = try sampleEntry(.mp3(channelCount: 2, sampleRate: 48000))
        #expect(entry.type == ".mp3")
        let esds = try configuration(entry, fixed: 28)
        #expect(
            hex(esds.data) == "00000000" + "0315" + "000000" + "040d" + "6b" + "15" + String(repeating: "00", count: 11)
                + "060102")
    }

    @Test func dac3AndDec3() throws {
        let ac3 = try sampleEntry(
            .ac3(AC3SpecificBox(fscod: 0, acmod: 7, lfeon: true, bitRateCode: 15), channelCount: 6, sampleRate: 48000))
        #expect(ac3.type == "ac-3")
        let dac3 = try configuration(ac3, fixed: 28)
        #expect(dac3.type == "dac3" && dac3.data == [0x10, 0x3D, 0xE0])
        let ec3 = try sampleEntry(
            .eac3(
                try EC3SpecificBox(dataRate: 640, substreams: [.init(fscod: 0, acmod: 7, lfeon: true)]),
                channelCount: 6,
                sampleRate: 48000))
        #expect(ec3.type == "ec-3")
        let dec3 = try configuration(ec3, fixed: 28)
        #expect(dec3.type == "dec3" && dec3.data == [0x14, 0x00, 0x20, 0x0F, 0x00])
        let dependent = try EC3SpecificBox(
            dataRate: 1,
            substreams: [.init(fscod: 1, acmod: 2, lfeon: false, dependentSubstreamCount: 1, channelLocations: 0x100)])
        #expect(Array(dependent.serialized().dropFirst(8)) == [0x00, 0x08, 0x60, 0x04, 0x03, 0x00])
        #expect(throws: FragmentedMP4Error.self) { try EC3SpecificBox(dataRate: 1, substreams: []) }
    }

    @Test func badTracksAreRefused() {
        let codec = TrackCodec.mp3(channelCount: 1, sampleRate: 44100)
        #expect(throws: FragmentedMP4Error.self) {
            try InitSegment(tracks: [
                Track(trackID: 1, timescale: 1, codec: codec), Track(trackID: 1, timescale: 1, codec: codec),
            ]).serialized()
        }
        #expect(throws: FragmentedMP4Error.self) {
            try InitSegment(tracks: [Track(trackID: 0, timescale: 1, codec: codec)]).serialized()
        }
    }
}
