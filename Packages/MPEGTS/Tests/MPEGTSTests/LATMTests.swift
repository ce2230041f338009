import Foundation
import Testing

@testable import MPEGTS

/// The LOAS/LATM reader on hand-built frames (TestSupport's `LATMFrameSpec`, every field written bit by bit): the
/// access units and configurations it reads, and a typed error with the frame's offset for each input it refuses.
@Suite struct LATMTests {
    static let lc = LATMFrameSpec.audioSpecificConfig()
    static let unit: [UInt8] = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }

    /// An AAC-LC 48 kHz stereo StreamMuxConfig (audioMuxVersion 0), then a frame reusing it: the access units come
    /// out whole (a 300-byte one needs a length byte of 255 and one of 45), the configuration is the ASC's two bytes.
    @Test func configThenSameStreamMux() throws {
        var reader = LOASReader()
        let first = LATMFrameSpec(audioSpecificConfig: Self.lc, payload: Self.unit).bytes
        let second = LATMFrameSpec(audioSpecificConfig: nil, payload: [1, 2, 3]).bytes
        let stream = first + second
        #expect(LOASReader.frameLength(stream, at: 0) == first.count)
        #expect(try reader.accessUnit(stream, at: 0) == Self.unit)
        let configuration = try #require(reader.configuration)
        #expect(configuration.audioSpecificConfig == [0x11, 0x90])
        #expect(configuration.objectType == 2 && configuration.sampleRate == 48000 && configuration.channels == 2)
        #expect(configuration.extensionObjectType == nil && configuration.codecString == "mp4a.40.2")
        #expect(configuration.samplesPerFrame == 1024)
        #expect(try reader.accessUnit(stream, at: first.count) == [1, 2, 3])
        #expect(LOASReader.firstConfiguration(in: second + stream) == configuration)
        let details = try #require(CodecDetails.parse(codec: .aacLATM, payload: stream))
        #expect(details.codecString == "mp4a.40.2" && details.sampleRate == 48000 && details.channels == 2)
    }

    /// HE-AAC with explicit hierarchical signalling (object type 5, core 24 kHz, output 48 kHz) and HE-AAC v2 (29):
    /// the ASC bytes are the ones carried, the core is AAC-LC at 24 kHz, the CODECS string names 5 or 29.
    @Test(arguments: [5, 29]) func explicitHierarchicalSignalling(type: Int) throws {
        let asc = LATMFrameSpec.audioSpecificConfig(
            frequencyIndex: 6, channels: type == 29 ? 1 : 2, extensionType: type, extensionFrequencyIndex: 3)
        var reader = LOASReader()
        #expect(try reader.accessUnit(LATMFrameSpec(audioSpecificConfig: asc, payload: [9]).bytes, at: 0) == [9])
        let configuration = try #require(reader.configuration)
        #expect(configuration.audioSpecificConfig == asc.bytes)
        #expect(configuration.objectType == 2 && configuration.sampleRate == 24000)
        #expect(configuration.extensionObjectType == type && configuration.extensionSampleRate == 48000)
        #expect(configuration.codecString == "mp4a.40.\(type)")
    }

    /// audioMuxVersion 1: taraBufferFullness and ascLen through LatmGetValue; an AAC-LC ASC followed by the
    /// backward-compatible SBR extension (sync 0x2B7, type 5, sbrPresentFlag, output frequency) and the PS one
    /// (sync 0x548, psPresentFlag): SBR, and SBR with PS, are read from it; the carried bytes are the whole ascLen.
    @Test(arguments: [false, true]) func backwardCompatibleSignalling(ps: Bool) throws {
        var spec = LATMFrameSpec(
            audioSpecificConfig: LATMFrameSpec.audioSpecificConfig(frequencyIndex: 6, channels: 1), payload: [7, 7])
        spec.audioMuxVersion = 1
        spec.ascTail = LATMFrameSpec.backwardCompatibleExtension(ps: ps)
        var reader = LOASReader()
        #expect(try reader.accessUnit(spec.bytes, at: 0) == [7, 7])
        let configuration = try #require(reader.configuration)
        #expect(configuration.extensionObjectType == (ps ? 29 : 5) && configuration.extensionSampleRate == 48000)
        var whole = LATMFrameSpec.audioSpecificConfig(frequencyIndex: 6, channels: 1)
        whole.append(spec.ascTail)
        #expect(configuration.audioSpecificConfig == whole.bytes)
        #expect(configuration.objectType == 2 && configuration.sampleRate == 24000)
    }

    /// otherData after the payload (its length in audioMuxVersion 0's escaped bytes, or LatmGetValue in 1) and a
    /// CRC byte: the access unit is read all the same.
    @Test(arguments: [0, 1]) func otherDataAndCRC(version: Int) throws {
        var spec = LATMFrameSpec(audioSpecificConfig: Self.lc, payload: Self.unit)
        spec.audioMuxVersion = version
        spec.otherDataBits = 300
        spec.crc = true
        var reader = LOASReader()
        #expect(try reader.accessUnit(spec.bytes, at: 0) == Self.unit)
    }

    /// What the reader refuses, each with its code and the frame's offset (here 5, after 5 bytes of something else).
    @Test func refusedInputsGiveTypedErrors() throws {
        func error(_ spec: LATMFrameSpec) -> MPEGTSError? {
            var reader = LOASReader()
            let bytes = [0, 0, 0, 0, 0] + spec.bytes
            do {
                _ = try reader.accessUnit(bytes, at: 5)
                return nil
            } catch {
                return error
            }
        }
        var cases: [(String, LATMFrameSpec, MPEGTSError.Code)] = []
        cases.append(("useSameStreamMux first", LATMFrameSpec(audioSpecificConfig: nil, payload: [1]), .invalidValue))
        for (name, path) in [
            ("versionA", \LATMFrameSpec.audioMuxVersionA), ("subframes", \.subFrames), ("programs", \.programs),
            ("layers", \.layers), ("frameLengthType", \.frameLengthType),
        ] {
            var spec = LATMFrameSpec(audioSpecificConfig: Self.lc, payload: [1])
            spec[keyPath: path] = 1
            if name == "versionA" { spec.audioMuxVersion = 1 }
            cases.append((name, spec, .unsupported))
        }
        cases.append(
            (
                "program config element",
                LATMFrameSpec(audioSpecificConfig: LATMFrameSpec.audioSpecificConfig(channels: 0), payload: [1]),
                .unsupported
            ))
        cases.append(
            (
                "object type 23",
                LATMFrameSpec(audioSpecificConfig: LATMFrameSpec.audioSpecificConfig(objectType: 23), payload: [1]),
                .unsupported
            ))
        cases.append(
            (
                "reserved frequency",
                LATMFrameSpec(audioSpecificConfig: LATMFrameSpec.audioSpecificConfig(frequencyIndex: 13), payload: [1]),
                .invalidValue
            ))
        cases.append(("empty unit", LATMFrameSpec(audioSpecificConfig: Self.lc, payload: []), .invalidValue))
        for (name, spec, code) in cases {
            let found = error(spec)
            #expect(found?.code == code && found?.offset ?? 0 >= 5, "\(name): \(String(describing: found))")
        }
        // No sync word; a frame whose length runs past the bytes given.
        var reader = LOASReader()
        #expect(throws: MPEGTSError(.noSync, offset: 0, "no LOAS sync word (0x2B7)")) {
            try reader.accessUnit([0x47, 0xE0, 0x10, 0], at: 0)
        }
        let frame = LATMFrameSpec(audioSpecificConfig: Self.lc, payload: Self.unit).bytes
        #expect(throws: MPEGTSError.self) { try reader.accessUnit(Array(frame.dropLast()), at: 0) }
        #expect(reader.configuration == nil)
    }

    /// Every prefix of a frame, every frame with its length field cut short (so that fields run past its end), and
    /// 3,000 random bodies behind a sync word: a value or a typed error, never a trap; a frame that fails leaves
    /// the configuration read before.
    @Test func truncatedAndRandomFramesNeverTrap() throws {
        var spec = LATMFrameSpec(audioSpecificConfig: Self.lc, payload: Self.unit)
        spec.audioMuxVersion = 1
        spec.otherDataBits = 20
        let frame = spec.bytes
        for length in 0..<frame.count {
            var reader = LOASReader()
            #expect(throws: MPEGTSError.self) { try reader.accessUnit(Array(frame.prefix(length)), at: 0) }
        }
        for body in 1..<(frame.count - 3) {
            var cut = Array(frame.prefix(3 + body))
            cut[1] = 0xE0 | UInt8(body >> 8)
            cut[2] = UInt8(body & 0xFF)
            var reader = LOASReader()
            _ = try? reader.accessUnit(cut, at: 0)
        }
        var generator = SplitMix64(seed: 29)
        var configured = LOASReader()
        _ = try configured.accessUnit(LATMFrameSpec(audioSpecificConfig: Self.lc, payload: [1]).bytes, at: 0)
        for round in 0..<3000 {
            let count = 1 + Int(generator.next() % 64)
            let body = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let bytes = [0x56, 0xE0 | UInt8(count >> 8), UInt8(count)] + body
            var fresh = LOASReader()
            _ = try? fresh.accessUnit(bytes, at: 0)
            var reader = configured
            if (try? reader.accessUnit(bytes, at: 0)) == nil {
                #expect(reader.configuration == configured.configuration, "round \(round)")
            }
            _ = LOASReader.firstConfiguration(in: body + bytes)
        }
    }

    /// The inputs kept for the LATM fuzzer (Tests/Fuzz/Crashers/FuzzLATM: seeds, and any crasher found) read frame
    /// by frame without a trap; the seeds read whole: ffmpeg's LOAS (AAC-LC, audioMuxVersion 0) and a hand-built
    /// HE-AAC v2 one (audioMuxVersion 1, the SBR and PS sync extensions, otherData, CRC).
    @Test func fuzzerInputs() throws {
        let inputs = FuzzRegressionTests.inputs("FuzzLATM")
        #expect(inputs.count >= 2)
        for url in inputs {
            let bytes = [UInt8](try Data(contentsOf: url))
            var reader = LOASReader()
            var index = 0
            var units = 0
            var failures = 0
            while index < bytes.count {
                guard let length = LOASReader.frameLength(bytes, at: index) else {
                    index += 1
                    continue
                }
                if (try? reader.accessUnit(bytes, at: index)) != nil { units += 1 } else { failures += 1 }
                index += length
            }
            let name = url.lastPathComponent
            if name == "seed-ffmpeg.loas" {
                #expect(units > 5 && failures <= 1 && reader.configuration?.codecString == "mp4a.40.2", "\(name)")
            } else if name == "seed-heaacv2-version1.loas" {
                #expect(units == 9 && failures == 0 && reader.configuration?.codecString == "mp4a.40.29", "\(name)")
            }
        }
    }
}
