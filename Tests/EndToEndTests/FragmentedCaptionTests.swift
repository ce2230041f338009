// Captions end to end: an H.264 + AAC fixture whose pictures carry CEA-608 captions in SEI (ATSC A/53
// user_data_registered_itu_t_t35, written here into an ffmpeg-made elementary stream), served as fragmented MP4:
// the multivariant declares CLOSED-CAPTIONS with INSTREAM-ID="CC1", and the caption text ffmpeg's CEA-608 decoder
// reads from the served segments is the text it reads from the source. Fixtures whose cc_data carries CEA-708
// (DTVCC) packets, alone or beside CEA-608, declare INSTREAM-ID="SERVICE1" (and "CC1").
import Foundation
import Testing

enum CaptionFixture {
    /// A byte with odd parity (CEA-608 sends 7 bits and a parity bit).
    static func parity(_ value: UInt8) -> UInt8 {
        value.nonzeroBitCount % 2 == 0 ? value | 0x80 : value & 0x7F
    }

    /// The CEA-608 byte pairs of field 1, one pair per picture: pop-on captions, each shown for about a second.
    static func pairs(pictures: Int, captions: [String]) -> [(UInt8, UInt8)] {
        var pairs: [(UInt8, UInt8)] = []
        func control(_ a: UInt8, _ b: UInt8) {
            // Control codes go twice; the decoder acts on the first.
            pairs.append((a, b))
            pairs.append((a, b))
        }
        for caption in captions {
            control(0x14, 0x20)  // resume caption loading (pop-on)
            control(0x14, 0x70)  // row 15, indent 0
            var bytes = Array(caption.utf8)
            if bytes.count % 2 == 1 { bytes.append(0) }
            for index in stride(from: 0, to: bytes.count, by: 2) { pairs.append((bytes[index], bytes[index + 1])) }
            control(0x14, 0x2F)  // end of caption: show it
            pairs += Array(repeating: (0, 0), count: 25)
            control(0x14, 0x2C)  // erase displayed memory
            pairs += Array(repeating: (0, 0), count: 5)
        }
        if pairs.count < pictures { pairs += Array(repeating: (0, 0), count: pictures - pairs.count) }
        return pairs.map { (parity($0.0), parity($0.1)) }
    }

    /// A cc_data triplet of a CEA-608 pair for field 1 (cc_valid, cc_type 0).
    static func field1(_ pair: (UInt8, UInt8)) -> [UInt8] { [0xFC, pair.0, pair.1] }

    /// A cc_data triplet that starts a CEA-708 DTVCC packet (cc_valid, cc_type 3): sequence 0, two bytes long,
    /// holding one null service block header.
    static let dtvccStart: [UInt8] = [0xFF, 0x01, 0x00]

    /// An SEI NAL unit (without start code) carrying one cc_data pair for field 1.
    static func sei(_ pair: (UInt8, UInt8)) -> [UInt8] { sei(triplets: field1(pair)) }

    /// An SEI NAL unit (without start code) carrying the cc_data `triplets` (3 bytes each).
    static func sei(triplets: [UInt8]) -> [UInt8] {
        let payload: [UInt8] =
            [
                0xB5, 0x00, 0x31, 0x47, 0x41, 0x39, 0x34, 0x03,  // T.35 USA, ATSC, 'GA94', cc_data
                0x40 | UInt8(triplets.count / 3), 0xFF,  // process_cc_data_flag, cc_count; em_data
            ] + triplets + [0xFF]  // marker bits
        var rbsp: [UInt8] = [0x04, UInt8(payload.count)] + payload + [0x80]
        // Emulation prevention: no 00 00 0x (x <= 3) inside the NAL unit.
        var escaped: [UInt8] = []
        var zeros = 0
        for byte in rbsp {
            if zeros >= 2, byte <= 3 {
                escaped.append(3)
                zeros = 0
            }
            escaped.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        rbsp = escaped
        return [0x06] + rbsp
    }

    static let captions = ["HELLO WORLD", "CAPTIONS IN SEI", "THIRD LINE 3"]

    /// 6 s of H.264 (no B-frames) with the CEA-608 captions + AAC, as MPEG-TS.
    static var movie: URL? { get async { await movieFixture.value } }
    private static let movieFixture = SharedFixture<URL?> {
        await make("fmp4-captions") { sei($0) }
    }
    /// The same pictures with a CEA-708 packet start in each picture's cc_data and no CEA-608.
    static var cea708: URL? { get async { await cea708Fixture.value } }
    private static let cea708Fixture = SharedFixture<URL?> {
        await make("fmp4-captions-708") { _ in sei(triplets: dtvccStart) }
    }
    /// The CEA-608 captions and a CEA-708 packet start in each picture's cc_data.
    static var both: URL? { get async { await bothFixture.value } }
    private static let bothFixture = SharedFixture<URL?> {
        await make("fmp4-captions-608-708") { sei(triplets: field1($0) + dtvccStart) }
    }

    /// 6 s of H.264 (no B-frames) + AAC as MPEG-TS, each picture with the SEI `sei` makes of its CEA-608 pair.
    static func make(_ name: String, sei: ((UInt8, UInt8)) -> [UInt8]) async -> URL? {
        let folder = PlaybackFixtures.folder
        let url = folder.appendingPathComponent(name + ".ts")
        if FileManager.default.fileExists(atPath: url.path) { return url }
        guard let ffmpeg = EndToEnd.tool("ffmpeg") else { return nil }
        let raw = folder.appendingPathComponent(name + "-raw.h264")
        let made = try? await EndToEnd.run(
            ffmpeg,
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25", "-t", "6", "-c:v",
                "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-g", "25", "-bf", "0", "-x264-params",
                "aud=1", "-f", "h264", raw.path,
            ])
        guard made?.status == 0, let stream = try? [UInt8](Data(contentsOf: raw)) else { return nil }
        // After each access unit delimiter (NAL type 9), one caption SEI.
        let pairs = CaptionFixture.pairs(pictures: 150, captions: captions)
        var output: [UInt8] = []
        output.reserveCapacity(stream.count + 150 * 24)
        var picture = 0
        var index = 0
        while index < stream.count {
            if index + 4 < stream.count, stream[index] == 0, stream[index + 1] == 0, stream[index + 2] == 1,
                stream[index + 3] & 0x1F == 9
            {
                // The delimiter is 00 00 01 09 xx; copy it, then the SEI.
                output += stream[index..<index + 5]
                index += 5
                output += [0, 0, 0, 1] + sei(picture < pairs.count ? pairs[picture] : (0x80, 0x80))
                picture += 1
                continue
            }
            output.append(stream[index])
            index += 1
        }
        let captioned = folder.appendingPathComponent(name + ".h264")
        guard (try? Data(output).write(to: captioned)) != nil else { return nil }
        let muxed = try? await EndToEnd.run(
            ffmpeg,
            [
                "-v", "error", "-y", "-framerate", "25", "-f", "h264", "-i", captioned.path, "-f", "lavfi", "-i",
                "sine=frequency=330:sample_rate=48000", "-t", "6", "-map", "0:v", "-map", "1:a", "-c:v", "copy",
                "-c:a", "aac", "-f", "mpegts", url.path,
            ])
        return muxed?.status == 0 ? url : nil
    }

    /// The caption lines ffmpeg's CEA-608 decoder reads from the video of `path` (a local file), in order.
    static func text(_ path: String) async throws -> [String] {
        let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
        let escaped = path.replacingOccurrences(of: ":", with: "\\:")
        let result = try await EndToEnd.run(
            ffmpeg,
            ["-v", "error", "-f", "lavfi", "-i", "movie=\(escaped)[out+subcc]", "-map", "0:s", "-f", "srt", "-"])
        #expect(result.status == 0, "ffmpeg subcc \(path): \(result.err)")
        // SRT: index, timing, text lines, blank.
        return result.out.split(separator: "\n", omittingEmptySubsequences: true).map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines)
        }.filter { !$0.isEmpty && Int($0) == nil && !$0.contains("-->") }.map(plain)
    }

    /// The text of an SRT line without its markup (`<font ...>`, `{\\an7}`).
    static func plain(_ line: String) -> String {
        var text = ""
        var closing: Character?
        for character in line {
            if let end = closing {
                if character == end { closing = nil }
            } else if character == "<" {
                closing = ">"
            } else if character == "{" {
                closing = "}"
            } else {
                text.append(character)
            }
        }
        return text
    }
}

@Suite(.serialized) struct FragmentedCaptionTests {
    @Test func captionsAreDeclaredAndSurviveTheRemux() async throws {
        let movie = try #require(await CaptionFixture.movie)
        let source = try await CaptionFixture.text(movie.path)
        #expect(source == CaptionFixture.captions, "ffmpeg read \(source) from the source")

        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let media = try await waitForEndList(base + "video.m3u8")
        let master = try await fetch(url)
        #expect(
            master.contains("TYPE=CLOSED-CAPTIONS,GROUP-ID=\"cc\"") && master.contains("INSTREAM-ID=\"CC1\"")
                && master.contains("CLOSED-CAPTIONS=\"cc\""), "\(master)")
        var bytes = try await fetchBytes(base + "video-init.mp4")
        for number in 0..<(media.components(separatedBy: "#EXTINF:").count - 1) {
            await bytes += try fetchBytes(base + "video/\(number).m4s")
        }
        let served = PlaybackFixtures.folder.appendingPathComponent("captions-served.mp4")
        try bytes.write(to: served)
        await #expect(try CaptionFixture.text(served.path) == source)

        // The remux output carries them too.
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = PlaybackFixtures.folder.appendingPathComponent("captions-remux.mp4").path
        let result = try await EndToEnd.run(tsplayer, ["remux", movie.path, output])
        #expect(result.status == 0, "\(result.err)")
        await #expect(try CaptionFixture.text(output) == source)
    }

    /// CEA-708 is declared as SERVICE1, beside CC1 when CEA-608 is there too (only the first, the default, is
    /// AUTOSELECT=YES: the two have no language to tell them apart), in a multivariant of EXT-X-VERSION 7; m3u8lint
    /// finds nothing in it or in any playlist it names.
    @Test func cea708IsDeclaredAsService1() async throws {
        for (fixture, expected) in [
            (await CaptionFixture.cea708, ["SERVICE1"]), (await CaptionFixture.both, ["CC1", "SERVICE1"]),
            (await CaptionFixture.movie, ["CC1"]),
        ] {
            let movie = try #require(fixture)
            let server = try await ServerProcess(arguments: [
                movie.path, "--container", "fmp4", "--segment-duration", "1",
            ])
            defer { server.stop() }
            let url = try #require(server.lines.first)
            _ = try await waitForEndList(String(url.dropLast("master.m3u8".count)) + "video.m3u8")
            let master = try await fetch(url)
            let renditions = master.split(separator: "\n").filter { $0.contains("TYPE=CLOSED-CAPTIONS") }.map(
                String.init)
            let expectedLines = expected.enumerated().map { number, id in
                "#EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS,GROUP-ID=\"cc\",NAME=\"\(id)\",DEFAULT=\(number == 0 ? "YES" : "NO"),"
                    + "AUTOSELECT=\(number == 0 ? "YES" : "NO"),INSTREAM-ID=\"\(id)\""
            }
            #expect(renditions == expectedLines, "\(movie.lastPathComponent): \(master)")
            #expect(master.contains("CLOSED-CAPTIONS=\"cc\""), "\(master)")
            // No finding at all in the multivariant or any playlist it names; SERVICE values of INSTREAM-ID need
            // EXT-X-VERSION 7 (RFC 8216bis 8), CC1 alone none.
            try await FragmentedPlaybackTests().lintServed(
                url, multivariantVersion: expected.contains("SERVICE1") ? 7 : nil)
        }
    }
}
