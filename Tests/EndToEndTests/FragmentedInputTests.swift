// Inputs fragmented MP4 cannot or should not carry, end to end: streams AVPlayer cannot decode (MPEG-2 video, DVB
// bitmap subtitles) are served as TS and named in the session's diagnostics and on serve's stderr; `tsplayer remux`
// of a file with nothing it can carry fails naming the PID; truncated, garbage and random files through `tsplayer
// remux` and `tsplayer serve --container fmp4` give a clear error (or, for a damaged stream, the frames it has and a
// line naming what was lost and where), with the exit status of Documentation/CLI.md, never a crash or a hang.
import Foundation
import MPEGTS
import TSPlayerKit
import Testing

/// Files made once per test process from ffmpeg output.
enum InputFixtures {
    static let folder = PlaybackFixtures.folder

    /// 3 s of MPEG-2 video + AAC, with a DVB subtitle stream added: PID 0x102, stream_type 0x06 with a
    /// subtitling descriptor (0x59: "eng", type 0x10, composition and ancillary page 1) in the PMT, and one PES a
    /// second (an empty display set: the end-of-display-set segment), at the picture's PTS. ffmpeg cannot encode
    /// DVB subtitles from text (its dvbsub encoder takes bitmaps only, and lavfi makes none), so the stream is
    /// written here.
    static var mpeg2WithDVBSubtitles: URL? { get async { await mpeg2WithDVBSubtitlesFixture.value } }
    private static let mpeg2WithDVBSubtitlesFixture = SharedFixture<URL?> {
        let url = folder.appendingPathComponent("input-mpeg2-dvbsub.ts")
        if FileManager.default.fileExists(atPath: url.path) { return url }
        guard
            let plain = await PlaybackFixtures.make(
                "input-mpeg2-aac.ts",
                arguments: { path in
                    FragmentedFixtures.video + FragmentedFixtures.tone(330)
                        + [
                            "-t", "3", "-c:v", "mpeg2video", "-g", "12", "-q:v", "4", "-c:a", "aac", "-f", "mpegts",
                            path,
                        ]
                }),
            let bytes = try? [UInt8](Data(contentsOf: plain)), let made = withDVBSubtitles(bytes),
            (try? Data(made).write(to: url)) != nil
        else { return nil }
        return url
    }

    /// 2 s of MPEG-2 video alone: nothing fragmented MP4 can carry.
    static var mpeg2Only: URL? { get async { await mpeg2OnlyFixture.value } }
    private static let mpeg2OnlyFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("input-mpeg2-only.ts") { path in
            FragmentedFixtures.video + ["-t", "2", "-c:v", "mpeg2video", "-f", "mpegts", path]
        }
    }

    /// The PID of the DVB subtitles added.
    static let subtitlePID: UInt16 = 0x102

    /// `source` (ffmpeg's mpegts output: PMT on PID 0x1000, one section per packet, video on 0x100) with the DVB
    /// subtitle stream added to every PMT and a subtitle PES after every 25th picture's first packet.
    static func withDVBSubtitles(_ source: [UInt8]) -> [UInt8]? {
        var output: [UInt8] = []
        var counter: UInt8 = 0
        var pictures = 0
        var packetStart = 0
        while packetStart + 188 <= source.count {
            var packet = Array(source[packetStart..<(packetStart + 188)])
            packetStart += 188
            let pid = UInt16(packet[1] & 0x1F) << 8 | UInt16(packet[2])
            let starts = packet[1] & 0x40 != 0
            let payload = packet[3] & 0x20 != 0 ? 5 + Int(packet[4]) : 4
            if pid == 0x1000, starts {
                // pointer_field, then the section: extend its stream loop by one entry.
                let section = payload + 1 + Int(packet[payload])
                let length = Int(packet[section + 1] & 0x0F) << 8 | Int(packet[section + 2])
                var body = Array(packet[section..<(section + 3 + length - 4)])
                let entry: [UInt8] =
                    [0x06, 0xE0 | UInt8(subtitlePID >> 8), UInt8(subtitlePID & 0xFF), 0xF0, 0x0A, 0x59, 0x08]
                    + Array("eng".utf8) + [0x10, 0x00, 0x01, 0x00, 0x01]
                let newLength = length + entry.count
                body[1] = body[1] & 0xF0 | UInt8(newLength >> 8)
                body[2] = UInt8(newLength & 0xFF)
                let table = SCTE35AgreesWithThreefive.withCRC(body + entry)
                guard section + table.count <= 188 else { return nil }
                packet.replaceSubrange(section..<(section + table.count), with: table)
                for index in (section + table.count)..<188 { packet[index] = 0xFF }
            }
            output += packet
            guard pid == 0x100, starts, payload + 14 <= 188, packet[payload + 7] & 0x80 != 0 else { continue }
            pictures += 1
            guard pictures % 25 == 1 else { continue }
            // The picture's PTS, as a PTS-only field ('0010' prefix).
            var pts = Array(packet[(payload + 9)..<(payload + 14)])
            pts[0] = pts[0] & 0x0F | 0x20
            // data_identifier 0x20, subtitle_stream_id 0, end_of_display_set_segment (page 1, length 0), end marker.
            let data: [UInt8] = [0x20, 0x00, 0x0F, 0x80, 0x00, 0x01, 0x00, 0x00, 0xFF]
            let pes: [UInt8] = [0, 0, 1, 0xBD, 0, UInt8(3 + pts.count + data.count), 0x80, 0x80, 0x05] + pts + data
            // One packet: header, an adaptation field of stuffing, the PES.
            let stuffing = 184 - pes.count - 1
            output += [0x47, 0x40 | UInt8(subtitlePID >> 8), UInt8(subtitlePID & 0xFF), 0x30 | counter]
            output += [UInt8(stuffing), 0x00] + [UInt8](repeating: 0xFF, count: stuffing - 1) + pes
            counter = (counter + 1) & 0x0F
        }
        return output
    }

    /// `h264AAC` cut inside a packet (100 bytes into it) and inside a video PES: the packets up to the middle of the
    /// file and 100 bytes of the next, which carries video but does not start its PES. Returns the file and the
    /// offset of the cut packet.
    static var truncated: (url: URL, packetOffset: Int)? { get async { await truncatedFixture.value } }
    private static let truncatedFixture = SharedFixture<(url: URL, packetOffset: Int)?> {
        guard let movie = await FragmentedFixtures.h264AAC, let bytes = try? [UInt8](Data(contentsOf: movie)) else {
            return nil
        }
        var packet = bytes.count / 188 / 2
        // The first video packet from the middle on that continues a PES (no payload_unit_start_indicator).
        while packet * 188 + 188 <= bytes.count {
            let offset = packet * 188
            let pid = UInt16(bytes[offset + 1] & 0x1F) << 8 | UInt16(bytes[offset + 2])
            if pid == 0x100, bytes[offset + 1] & 0x40 == 0 { break }
            packet += 1
        }
        let url = folder.appendingPathComponent("input-truncated.ts")
        guard (try? Data(bytes.prefix(packet * 188 + 100)).write(to: url)) != nil else { return nil }
        return (url, packet * 188)
    }

    /// Random bytes (SplitMix64, seed 15), `count` of them; with `sync`, each 188-byte packet starts with 0x47.
    static func random(_ count: Int, sync: Bool, seed: UInt64 = 15) -> Data {
        var generator = SplitMix64(seed: seed)
        var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        if sync { for offset in stride(from: 0, to: count, by: 188) { bytes[offset] = 0x47 } }
        if !sync, bytes.first == 0x47 { bytes[0] = 0 }
        return Data(bytes)
    }

    /// Writes `data` to `name` in the fixture folder.
    static func file(_ name: String, _ data: Data) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try data.write(to: url)
        return url
    }
}

@Suite(.serialized) struct FragmentedInputTests {
    let playback = FragmentedPlaybackTests()

    /// MPEG-2 video with AAC and DVB bitmap subtitles: `--container auto` serves TS byte ranges (for players other
    /// than AVPlayer), and the session's diagnostics and serve's stderr name the video and the subtitles by PID.
    @Test func mpeg2VideoAndDVBSubtitlesAreServedAsTSAndNamed() async throws {
        let movie = try #require(await InputFixtures.mpeg2WithDVBSubtitles)
        // ffprobe reads the added stream as DVB subtitles.
        let probed = try await playback.probeStreams(movie.path)
        #expect(
            probed.map(\.codec) == ["mpeg2video", "aac", "dvb_subtitle"] && probed.last?.language == "eng", "\(probed)")
        let expected = [
            "served as TS for players other than AVPlayer: the video cannot be decoded by it",
            "PID 256: mpeg2video video, which AVPlayer cannot decode in any container",
            "PID 258: DVB bitmap subtitles, which AVPlayer cannot show",
        ]
        let session = try TSPlaybackSession(
            tsFile: movie.path, options: .init(segmentDuration: 1, writesSidecar: false, container: .auto))
        defer { session.close() }
        #expect(session.container == .ts)
        #expect(session.diagnostics == expected, "\(session.diagnostics)")
        let server = try await ServerProcess(arguments: [movie.path, "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let master = try await fetch(url)
        #expect(master.contains("index.m3u8") && !master.contains("video.m3u8"), "\(master)")
        let index = try await waitForEndList(base + "index.m3u8")
        #expect(index.contains("#EXT-X-BYTERANGE:") && !index.contains("#EXT-X-MAP"), "\(index)")
        #expect(
            server.logText.contains("\(movie.path): " + expected.joined(separator: "; ")), "\(server.logText)")
        // Other players get the whole stream: ffmpeg decodes the served TS to the source's pictures.
        let source = try await playback.frameHashes(movie.path, "v:0")
        let served = try await playback.frameHashes(url, "v:0")
        #expect(!source.isEmpty && served == source, "\(served.count) pictures served, \(source.count)")
    }

    /// `--container fmp4` asked for a file with MPEG-2 video and AAC: the AAC becomes an audio-only presentation,
    /// and the video and subtitles are named as left out; remux likewise keeps the audio and names the video.
    @Test func mpeg2VideoIsLeftOutOfFragmentedMP4AndRemuxByPID() async throws {
        let movie = try #require(await InputFixtures.mpeg2WithDVBSubtitles)
        let session = try TSPlaybackSession(
            tsFile: movie.path, options: .init(segmentDuration: 1, writesSidecar: false, container: .fmp4))
        defer { session.close() }
        #expect(session.container == .fmp4)
        #expect(session.diagnostics.first == "served as fragmented MP4: asked for", "\(session.diagnostics)")
        #expect(
            session.diagnostics.contains { $0.hasPrefix("PID 256 left out: ") }
                && session.diagnostics.contains("PID 258: DVB bitmap subtitles, which AVPlayer cannot show"),
            "\(session.diagnostics)")
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = InputFixtures.folder.appendingPathComponent("input-mpeg2-audio.mp4").path
        let result = try await EndToEnd.run(tsplayer, ["remux", movie.path, output], timeout: 60)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.err.contains("remux: \(movie.path): PID 256 left out: "), "\(result.err)")
        let source = try await playback.frameHashes(movie.path, "a:0")
        let remuxed = try await playback.frameHashes(output, "a:0")
        let codecs = try await playback.probeStreams(output).map(\.codec)
        #expect(!source.isEmpty && remuxed == source && codecs == ["aac"], "\(codecs)")
    }

    /// `tsplayer remux` of MPEG-2 video alone: nothing it can carry, so exit 1 with an error naming the file and
    /// the PID, and no output (nor a partial one) left behind. `serve --container fmp4` serves it as TS and says
    /// why fragmented MP4 is not possible, in words.
    @Test func remuxOfNothingItCanCarryFailsNamingThePID() async throws {
        let movie = try #require(await InputFixtures.mpeg2Only)
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = InputFixtures.folder.appendingPathComponent("input-mpeg2-only.mp4").path
        let result = try await EndToEnd.run(tsplayer, ["remux", movie.path, output], timeout: 60)
        #expect(result.status == 1, "\(result.status): \(result.err)")
        #expect(
            result.err
                == "Error: \(movie.path): nothing to remux: program 1 has no H.264, HEVC, AAC, AC-3, E-AC-3 or MPEG "
                + "audio stream: PID 256 (mpeg2video)\n", "\(result.err)")
        #expect(
            !FileManager.default.fileExists(atPath: output)
                && !FileManager.default.fileExists(atPath: output + ".partial"))
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        await #expect(try fetch(url).contains("index.m3u8"))
        #expect(
            server.logText.contains(
                "\(movie.path): served as TS: fragmented MP4 is not possible (program 1 has no H.264, HEVC, AAC, "
                    + "AC-3, E-AC-3 or MPEG audio stream: PID 256 (mpeg2video)); PID 256: mpeg2video video"),
            "\(server.logText)")
    }

    /// A file cut inside a packet and inside a video PES: `remux` writes what it has (the output decodes to the
    /// frames ffmpeg decodes from the cut file, the last picture as far as it goes) and says on stderr where the
    /// file ends, exit 1 (stream errors found, the output written all the same); `serve --container fmp4` serves
    /// every segment of it (200), decoding to the same frames, its playlists linting clean.
    @Test func truncatedFileIsRemuxedAndServedAsFarAsItGoes() async throws {
        let (movie, offset) = try #require(await InputFixtures.truncated)
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = InputFixtures.folder.appendingPathComponent("input-truncated.mp4").path
        let result = try await EndToEnd.run(tsplayer, ["remux", movie.path, output], timeout: 60)
        #expect(result.status == 1, "\(result.err)")
        #expect(
            result.err
                == "remux: \(movie.path): the file ends inside a packet: its last 100 bytes, from byte offset "
                + "\(offset), are not a whole packet and were left out\n", "\(result.err)")
        for stream in ["v:0", "a:0"] {
            let source = try await playback.frameHashes(movie.path, stream)
            let remuxed = try await playback.frameHashes(output, stream)
            #expect(!source.isEmpty && remuxed == source, "remux \(stream): \(remuxed.count), \(source.count)")
        }
        let server = try await ServerProcess(arguments: [movie.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let names = try await playback.lintServed(url)
        let curl = try #require(EndToEnd.tool("curl"))
        for name in names {
            let playlist = try await waitForEndList(base + name)
            for line in playlist.split(separator: "\n") where !line.hasPrefix("#") || line.hasPrefix("#EXT-X-MAP") {
                let uri = line.hasPrefix("#") ? String(line.dropFirst(16).prefix { $0 != "\"" }) : String(line)
                let status = try await EndToEnd.run(
                    curl, ["-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", base + uri])
                #expect(status.out == "200", "\(uri): \(status.out) \(status.err)")
            }
        }
        for stream in ["v:0", "a:0"] {
            let source = try await playback.frameHashes(movie.path, stream)
            let served = try await playback.frameHashes(url, stream)
            #expect(served == source, "served \(stream): \(served.count), \(source.count)")
        }
        #expect(server.process.isRunning)
    }

    /// 1000 bytes of garbage between two packets of the H.264 + AAC fixture: `remux` skips them and says so (exit 1,
    /// stream errors found), its output decoding to the source's frames; `serve --container fmp4` decodes to them
    /// too.
    @Test func garbageBetweenPacketsIsSkippedAndNamed() async throws {
        let movie = try #require(await FragmentedFixtures.h264AAC)
        let bytes = try Data(contentsOf: movie)
        let cut = 300 * 188
        let input = try InputFixtures.file(
            "input-garbage-inside.ts", bytes.prefix(cut) + Data(repeating: 0x55, count: 1000) + bytes.dropFirst(cut))
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = input.path + ".mp4"
        let remux = try await EndToEnd.run(tsplayer, ["remux", input.path, output], timeout: 60)
        #expect(remux.status == 1, "\(remux.err)")
        #expect(
            remux.err == "remux: \(input.path): sync lost 1 time: 1000 bytes between packets were skipped\n",
            "\(remux.err)")
        let server = try await ServerProcess(arguments: [input.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        _ = try await waitForEndList(String(url.dropLast("master.m3u8".count)) + "video.m3u8")
        for stream in ["v:0", "a:0"] {
            let source = try await playback.frameHashes(movie.path, stream)
            let remuxed = try await playback.frameHashes(output, stream)
            let served = try await playback.frameHashes(url, stream)
            #expect(!source.isEmpty && remuxed == source, "remux \(stream): \(remuxed.count), \(source.count)")
            #expect(served == source, "served \(stream): \(served.count), \(source.count)")
        }
    }

    /// A garbage file (text), random bytes, an empty file: `remux` fails with exit 2 naming the file and what it
    /// found, writing nothing; `serve --container fmp4` fails with exit 2 naming the file and the problem in words
    /// (no error code identifier). Random bytes with a sync byte every 188 (packets of nothing: no PAT): `remux`
    /// fails with exit 2 naming the missing table; `serve` serves an empty TS playlist and says why on stderr, and
    /// the session (auto) says there is no audio or video stream instead of calling it H.264. Each within the
    /// time bound.
    @Test func garbageAndRandomInputsFailWithAClearError() async throws {
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let text = Data(String(repeating: "this is not a transport stream\n", count: 2000).utf8)
        let cases: [(name: String, data: Data, remux: String)] = [
            ("input-garbage.txt", text, "not an MPEG-TS file (no packets at its start)"),
            (
                "input-random.bin", InputFixtures.random(1 << 20, sync: false),
                "not an MPEG-TS file (no packets at its start)"
            ),
            ("input-empty.ts", Data(), "not an MPEG-TS file (no packets at its start)"),
        ]
        for item in cases {
            let input = try InputFixtures.file(item.name, item.data)
            let output = input.path + ".mp4"
            let remux = try await EndToEnd.run(tsplayer, ["remux", input.path, output], timeout: 30)
            #expect(remux.status == 2, "remux \(item.name): \(remux.status) \(remux.err)")
            #expect(remux.err == "Error: \(input.path): \(item.remux)\n", "remux \(item.name): \(remux.err)")
            #expect(
                !FileManager.default.fileExists(atPath: output)
                    && !FileManager.default.fileExists(atPath: output + ".partial"), "\(item.name)")
            let serve = try await EndToEnd.run(tsplayer, ["serve", input.path, "--container", "fmp4"], timeout: 30)
            #expect(serve.status == 2, "serve \(item.name): \(serve.status) \(serve.err)")
            #expect(
                serve.err.hasPrefix("Error: not an MPEG transport stream '\(input.path)': no MPEG-TS packets found")
                    && !serve.err.contains("notTransportStream"), "serve \(item.name): \(serve.err)")
        }
        let packets = try InputFixtures.file("input-random-packets.ts", InputFixtures.random(1 << 20, sync: true))
        let output = packets.path + ".mp4"
        let remux = try await EndToEnd.run(tsplayer, ["remux", packets.path, output], timeout: 30)
        #expect(remux.status == 2, "remux: \(remux.status) \(remux.err)")
        #expect(
            remux.err
                == "Error: \(packets.path): not an MPEG-TS file: no program association table in the first bytes "
                + "(1048576 bytes read)\n", "\(remux.err)")
        #expect(!FileManager.default.fileExists(atPath: output))
        let session = try TSPlaybackSession(
            tsFile: packets.path, options: .init(segmentDuration: 1, writesSidecar: false, container: .auto))
        defer { session.close() }
        #expect(
            session.diagnostics == [
                "served as TS: no audio or video stream: no program association and map table names one in the "
                    + "\(session.probe.bytesRead) bytes read at the file's start and end, so there is nothing to "
                    + "play yet"
            ], "\(session.diagnostics)")
        let server = try await ServerProcess(arguments: [
            packets.path, "--container", "fmp4", "--segment-duration", "1",
        ])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let index = try await waitForEndList(String(url.dropLast("master.m3u8".count)) + "index.m3u8")
        #expect(!index.contains("#EXTINF"), "\(index)")
        #expect(
            server.logText.contains(
                "\(packets.path): served as TS: fragmented MP4 is not possible (no program association table in the "
                    + "first bytes)"), "\(server.logText)")
        #expect(server.process.isRunning)
    }

    /// The H.264 + AAC fixture whose packets after its first second keep their headers but carry random payloads
    /// (PES headers, NAL units and ADTS frames all garbage): remux ends without a crash (exit 1, the frames it could
    /// read written) and says on stderr how many PES packets it left out; `serve --container fmp4` answers every playlist,
    /// init segment and segment 200 (the segments hold what could be read) and keeps running.
    @Test func randomPayloadsBehindValidHeadersNeitherCrashNorHang() async throws {
        let movie = try #require(await FragmentedFixtures.h264AAC)
        var bytes = [UInt8](try Data(contentsOf: movie))
        let noise = [UInt8](InputFixtures.random(bytes.count, sync: false, seed: 99))
        // Keep the first quarter (the tables, parameter sets and first frames the layout is read from).
        for packet in stride(from: bytes.count / 4 / 188 * 188, to: bytes.count - 187, by: 188) {
            let pid = UInt16(bytes[packet + 1] & 0x1F) << 8 | UInt16(bytes[packet + 2])
            guard pid == 0x100 || pid == 0x101 else { continue }
            let payload = bytes[packet + 3] & 0x20 != 0 ? packet + 5 + Int(bytes[packet + 4]) : packet + 4
            for index in payload..<(packet + 188) { bytes[index] = noise[index] }
        }
        let input = try InputFixtures.file("input-random-payloads.ts", Data(bytes))
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = input.path + ".mp4"
        let remux = try await EndToEnd.run(tsplayer, ["remux", input.path, output], timeout: 60)
        #expect(remux.status == 1, "remux: \(remux.status) \(remux.err)")
        #expect(
            remux.err.hasPrefix("remux: \(input.path): ")
                && remux.err.contains(" PES packets with a bad header were left out (the frames they held are "),
            "\(remux.err)")
        let server = try await ServerProcess(arguments: [input.path, "--container", "fmp4", "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let base = String(url.dropLast("master.m3u8".count))
        let master = try await fetch(url)
        let curl = try #require(EndToEnd.tool("curl"))
        var statuses: [String: Int] = [:]
        for name in playback.namedPlaylists(master) {
            let playlist = try await waitForEndList(base + name)
            for line in playlist.split(separator: "\n") where !line.hasPrefix("#") || line.hasPrefix("#EXT-X-MAP") {
                let uri = line.hasPrefix("#") ? String(line.dropFirst(16).prefix { $0 != "\"" }) : String(line)
                let result = try await EndToEnd.run(
                    curl, ["-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", base + uri])
                #expect(result.status == 0, "\(uri): \(result.err)")
                statuses[result.out, default: 0] += 1
            }
        }
        #expect(Set(statuses.keys) == ["200"] && statuses["200", default: 0] > 3, "\(statuses)")
        #expect(server.process.isRunning, "\(server.logText)")
    }
}
