import Foundation
import FragmentedMP4
import Testing

/// Proof against a real peer: ffmpeg makes the elementary streams, this package muxes them, ffprobe and ffmpeg read
/// the result. A missing ffmpeg or ffprobe fails the test (Scripts/deps.sh installs them).
@Suite("FragmentedMP4 against ffprobe and ffmpeg", .temporaryFolders)
final class FragmentedMP4PeerTests {
    let folder = TemporaryFolders.make(prefix: "FragmentedMP4-")

    /// Runs a tool; returns its stdout and stderr, and records an issue when it exits with a failure.
    @discardableResult
    func run(_ name: String, _ arguments: [String]) async throws -> (out: Data, err: String) {
        guard let tool = EndToEnd.tool(name) else { throw CocoaError(.fileNoSuchFile) }
        let result = try await ExternalProgram.run(tool, arguments)
        #expect(result.status == 0, "\(name) \(arguments.joined(separator: " ")): \(result.err)")
        return (result.stdout, result.err)
    }

    func probe(_ path: String) async throws -> (streams: [[String: Any]], packets: [[String: Any]]) {
        let output = try await run("ffprobe", ["-v", "error", "-show_streams", "-show_packets", "-of", "json", path])
            .out
        let json = try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any])
        return (json["streams"] as? [[String: Any]] ?? [], json["packets"] as? [[String: Any]] ?? [])
    }

    @Test func aacTrackReadByFFprobeAndDecodedByFFmpeg() async throws {
        let aac = folder.appendingPathComponent("in.aac").path
        try await run(
            "ffmpeg",
            ["-v", "error", "-f", "lavfi", "-i", "sine=frequency=1000:duration=1", "-c:a", "aac", "-f", "adts", aac])
        let adts = [UInt8](try Data(contentsOf: URL(fileURLWithPath: aac)))
        // Split the ADTS frames: 13-bit frame length, header of 7 bytes (9 with CRC).
        var frames: [[UInt8]] = []
        var position = 0
        while position + 7 <= adts.count {
            #expect(adts[position] == 0xFF && adts[position + 1] & 0xF0 == 0xF0, "sync at \(position)")
            let length =
                Int(adts[position + 3] & 3) << 11 | Int(adts[position + 4]) << 3 | Int(adts[position + 5] >> 5)
            let header = adts[position + 1] & 1 == 1 ? 7 : 9
            guard length > header, position + length <= adts.count else { break }
            frames.append(Array(adts[position + header..<position + length]))
            position += length
        }
        #expect(position == adts.count && frames.count > 10)
        let config = try AudioSpecificConfig(adtsHeader: Array(adts.prefix(7)))
        let rate = try #require(config.sampleRate)

        let initSegment = try InitSegment(tracks: [Track(trackID: 1, timescale: rate, codec: .aac(config))])
            .serialized()
        let samples = frames.map { Sample(data: $0, duration: 1024) }
        let fragment = try MediaSegment(
            sequenceNumber: 1, tracks: [TrackFragment(trackID: 1, baseMediaDecodeTime: 0, samples: samples)]
        ).serialized()
        let file = folder.appendingPathComponent("out.mp4").path
        try Data(initSegment + fragment).write(to: URL(fileURLWithPath: file))

        let (streams, packets) = try await probe(file)
        #expect(streams.count == 1)
        let stream = try #require(streams.first)
        #expect(stream["codec_name"] as? String == "aac")
        #expect(stream["sample_rate"] as? String == String(rate))
        #expect(stream["channels"] as? Int == Int(config.channelConfiguration))
        #expect(packets.count == frames.count)
        for (index, (packet, frame)) in zip(packets, frames).enumerated() {
            #expect(packet["size"] as? String == String(frame.count), "packet \(index)")
            #expect(packet["pts"] as? Int == index * 1024, "packet \(index)")
        }
        let decode = try await run("ffmpeg", ["-v", "error", "-i", file, "-f", "null", "-"])
        #expect(decode.err.isEmpty, "ffmpeg decode: \(decode.err)")
        // Keep the file for comparing box trees with ffmpeg's own fragmented output.
        if let keep = ProcessInfo.processInfo.environment["FMP4_KEEP"] {
            try? FileManager.default.removeItem(atPath: keep + "/aac.mp4")
            try FileManager.default.copyItem(atPath: file, toPath: keep + "/aac.mp4")
            try? FileManager.default.removeItem(atPath: keep + "/in.aac")
            try FileManager.default.copyItem(atPath: aac, toPath: keep + "/in.aac")
        }
    }

    /// Annex-B NAL units (without start codes).
    static func nalUnits(_ stream: [UInt8]) -> [[UInt8]] {
        var starts: [(code: Int, payload: Int)] = []
        var index = 0
        while index + 3 <= stream.count {
            if stream[index] == 0, stream[index + 1] == 0, stream[index + 2] == 1 {
                let code = index > 0 && stream[index - 1] == 0 ? index - 1 : index
                starts.append((code, index + 3))
                index += 3
            } else {
                index += 1
            }
        }
        var units: [[UInt8]] = []
        for (number, start) in starts.enumerated() {
            let end = number + 1 < starts.count ? starts[number + 1].code : stream.count
            if start.payload < end { units.append(Array(stream[start.payload..<end])) }
        }
        return units
    }

    @Test func h264TrackMatchesTheRawStreamFrameByFrame() async throws {
        let h264 = folder.appendingPathComponent("in.h264").path
        try await run(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=2", "-c:v", "libx264",
                "-bf", "0", "-g", "25", "-x264-params", "aud=1", "-bsf:v", "h264_mp4toannexb", "-f", "h264", h264,
            ])
        let units = Self.nalUnits([UInt8](try Data(contentsOf: URL(fileURLWithPath: h264))))
        // Access units start at each AUD (type 9); SPS, PPS and AUD go out of band.
        var sps: [[UInt8]] = []
        var pps: [[UInt8]] = []
        var accessUnits: [(data: [UInt8], sync: Bool)] = []
        for unit in units {
            switch unit[0] & 0x1F {
            case 9: accessUnits.append(([], false))
            case 7: if !sps.contains(unit) { sps.append(unit) }
            case 8: if !pps.contains(unit) { pps.append(unit) }
            default:
                guard !accessUnits.isEmpty else { continue }
                let length = UInt32(unit.count)
                accessUnits[accessUnits.count - 1].data +=
                    [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
                    + unit
                if unit[0] & 0x1F == 5 { accessUnits[accessUnits.count - 1].sync = true }
            }
        }
        #expect(accessUnits.count == 50 && accessUnits[0].sync && sps.count == 1 && pps.count == 1)

        let initSegment = try InitSegment(tracks: [
            Track(trackID: 1, timescale: 90000, codec: .avc(sps: sps, pps: pps, width: 320, height: 240))
        ]).serialized()
        // Two fragments, each starting at a keyframe.
        var fragments: [UInt8] = []
        var start = 0
        var sequence: UInt32 = 1
        while start < accessUnits.count {
            var end = start + 1
            while end < accessUnits.count, !accessUnits[end].sync { end += 1 }
            let samples = accessUnits[start..<end].map { Sample(data: $0.data, duration: 3600, isSync: $0.sync) }
            fragments += try MediaSegment(
                sequenceNumber: sequence,
                tracks: [TrackFragment(trackID: 1, baseMediaDecodeTime: UInt64(start) * 3600, samples: samples)]
            ).serialized()
            sequence += 1
            start = end
        }
        #expect(sequence == 3)
        let file = folder.appendingPathComponent("out.mp4").path
        try Data(initSegment + fragments).write(to: URL(fileURLWithPath: file))

        let (streams, packets) = try await probe(file)
        let stream = try #require(streams.first)
        #expect(stream["codec_name"] as? String == "h264" && stream["codec_tag_string"] as? String == "avc1")
        #expect(stream["width"] as? Int == 320 && stream["height"] as? Int == 240)
        #expect(packets.count == accessUnits.count)
        #expect(packets.compactMap { $0["flags"] as? String }.filter { $0.hasPrefix("K") }.count == 2)

        func hashes(_ path: String, _ format: [String]) async throws -> [String] {
            let text = String(
                decoding: try await run("ffmpeg", ["-v", "error"] + format + ["-i", path, "-f", "framemd5", "-"]).out,
                as: UTF8.self)
            return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
                $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
            }
        }
        let ours = try await hashes(file, [])
        let raw = try await hashes(h264, ["-f", "h264"])
        #expect(ours.count == 50 && ours == raw)
        if let keep = ProcessInfo.processInfo.environment["FMP4_KEEP"] {
            try? FileManager.default.removeItem(atPath: keep + "/h264.mp4")
            try FileManager.default.copyItem(atPath: file, toPath: keep + "/h264.mp4")
            try? FileManager.default.removeItem(atPath: keep + "/in.h264")
            try FileManager.default.copyItem(atPath: h264, toPath: keep + "/in.h264")
        }
    }
}
