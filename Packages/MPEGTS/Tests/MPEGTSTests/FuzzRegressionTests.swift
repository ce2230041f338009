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

    /// The index's packet runs are the same drip-fed as in one shot, follow on, lie inside the input and name
    /// packets that start with a sync byte.
    @Test func demuxerInputsGiveConsistentPacketRuns() throws {
        for url in Self.inputs("FuzzDemuxer") {
            let bytes = [UInt8](try Data(contentsOf: url))
            let name = url.lastPathComponent
            var oneShot = TSIndexer()
            bytes.withUnsafeBytes { oneShot.consume($0) }
            oneShot.finish()
            var chunked = TSIndexer()
            var position = 0
            var step = 0
            let sizes = [1, 7, 188, 3, 500]
            while position < bytes.count {
                let end = min(bytes.count, position + sizes[step % sizes.count])
                bytes[position..<end].withUnsafeBytes { chunked.consume($0) }
                position = end
                step += 1
            }
            chunked.finish()
            let size = UInt64(bytes.count)
            let layout = oneShot.index(fileSize: size, modificationTime: (0, 0)).layout
            #expect(layout == chunked.index(fileSize: size, modificationTime: (0, 0)).layout, "\(name)")
            var served: UInt64 = 0
            for run in layout.runs {
                #expect(run.servedOffset == served && run.packets > 0, "\(name): \(layout.runs)")
                #expect(run.fileOffset + run.packets * UInt64(run.packetSize) <= size, "\(name): \(layout.runs)")
                served += run.packets * 188
                for packet in 0..<Int(run.packets) {
                    let offset = Int(run.fileOffset) + packet * run.packetSize + run.syncOffset
                    guard offset < bytes.count, bytes[offset] == 0x47 else {
                        Issue.record("\(name): packet \(packet) of \(run) has no sync byte")
                        break
                    }
                }
            }
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
