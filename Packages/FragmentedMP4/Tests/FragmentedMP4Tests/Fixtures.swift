@testable import FragmentedMP4

func hexBytes(_ hex: String) -> [UInt8] {
    var output: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
        output.append(UInt8(hex[index..<next], radix: 16) ?? 0)
        index = next
    }
    return output
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}

func uint32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
    var value: UInt32 = 0
    for byte in bytes[at..<at + 4] { value = value << 8 | UInt32(byte) }
    return value
}

enum Fixtures {
    /// x264 SPS of a 320x240 High profile level 1.3 stream (with emulation prevention bytes), and a PPS.
    static let h264SPS = hexBytes("6764000dacd94141fb011000000300100000030320f142996000")
    static let h264PPS = hexBytes("68ebe3cb22c0")
    /// x265 VPS/SPS/PPS of a 320x240 Main profile level 2 stream.
    static let hevcVPS = hexBytes("40010c01ffff01600000030090000003000003003c95940900")
    static let hevcSPS = hexBytes(
        "42010101600000030090000003000003003ca00a080f16595952930bc05a02000003000200000300321000")
    static let hevcPPS = hexBytes("4401c172b46240")

    static func initSegment() throws -> [UInt8] {
        try InitSegment(tracks: [
            Track(
                trackID: 1, timescale: 90000,
                codec: .avc(sps: [h264SPS], pps: [h264PPS], width: 320, height: 240)),
            Track(
                trackID: 2, timescale: 48000, language: "eng",
                codec: .aac(AudioSpecificConfig(objectType: 2, samplingFrequencyIndex: 3, channelConfiguration: 2))),
            Track(
                trackID: 3, timescale: 90000,
                codec: .hevc(vps: [hevcVPS], sps: [hevcSPS], pps: [hevcPPS], width: 320, height: 240)),
            Track(
                trackID: 4, timescale: 48000,
                codec: .ac3(
                    AC3SpecificBox(fscod: 0, acmod: 7, lfeon: true, bitRateCode: 15), channelCount: 6,
                    sampleRate: 48000)),
        ]).serialized()
    }
}

func tag(_ type: FourCC) -> [UInt8] { type.bytes }
