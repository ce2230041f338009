import Foundation
import Testing

@testable import MPEGTS

/// Replays the inputs kept in Tests/Fuzz/Crashers (seeds and any crasher found by Scripts/fuzz.sh): none may
/// trap, and chunked demuxing must give the same events as one shot.
@Suite struct FuzzRegressionTests {
    static let crashers = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fuzz/Crashers")

    static func inputs(_ fuzzer: String) -> [URL] {
        let directory = crashers.appendingPathComponent(fuzzer)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().map { directory.appendingPathComponent($0) }
    }

    @Test func demuxerInputs() throws {
        let inputs = Self.inputs("FuzzDemuxer")
        #expect(!inputs.isEmpty, "no inputs in \(Self.crashers.path)")
        for url in inputs {
            let bytes = [UInt8](try Data(contentsOf: url))
            let options = DemuxOptions(scanKeyframes: true, reassemblePES: true)
            let oneShot = demux(bytes, options: options)
            #expect(
                demux(bytes, chunkSizes: [1, 7, 188, 3, 500], options: options) == oneShot, "\(url.lastPathComponent)")
        }
    }

    @Test func scte35Inputs() throws {
        let inputs = Self.inputs("FuzzSCTE35")
        #expect(!inputs.isEmpty)
        var decoded = 0
        for url in inputs {
            let bytes = [UInt8](try Data(contentsOf: url))
            if (try? SpliceInfoSection(bytes: bytes)) != nil { decoded += 1 }
            if (try? SpliceInfoSection(base64: String(decoding: bytes, as: UTF8.self))) != nil { decoded += 1 }
        }
        #expect(decoded >= 4, "the spec samples decode as bytes and as base64")
    }
}
