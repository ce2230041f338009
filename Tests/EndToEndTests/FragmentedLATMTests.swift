// AAC in LATM/LOAS (DVB's stream_type 0x11) end to end: `tsplayer serve` chooses fMP4 for it and says why, and
// ffmpeg decodes the served HLS (from the multivariant URL) to the same audio samples and video frames as the
// source; `tsplayer remux` likewise; HE-AAC (hand-built: ffmpeg encodes AAC-LC only) keeps its explicit signalling;
// a LATM stream whose StreamMuxConfig is not read is left out by PID while the video plays.
import Foundation
import MPEGTS
import TSPlayerKit
import Testing

/// The LATM files: one from ffmpeg, two built here.
enum LATMFixtures {
    static let folder = PlaybackFixtures.folder

    /// 4 s of H.264 + AAC-LC in LATM/LOAS (ffmpeg's `-mpegts_flags latm`: stream_type 0x11, a StreamMuxConfig
    /// now and then, useSameStreamMux between).
    static var h264LATM: URL? { get async { await h264LATMFixture.value } }
    private static let h264LATMFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("latm-h264.ts") { path in
            FragmentedFixtures.video + FragmentedFixtures.tone(440) + ["-t", "4"] + FragmentedFixtures.x264
                + ["-c:a", "aac", "-mpegts_flags", "latm", "-f", "mpegts", path]
        }
    }

    /// 2 s of H.264 alone, for `badLATM`.
    static var h264Only: URL? { get async { await h264OnlyFixture.value } }
    private static let h264OnlyFixture = SharedFixture<URL?> {
        await PlaybackFixtures.make("latm-h264-only.ts") { path in
            FragmentedFixtures.video + ["-t", "2"] + FragmentedFixtures.x264 + ["-f", "mpegts", path]
        }
    }

    /// HE-AAC in LATM, audio only, built here: a StreamMuxConfig with explicit hierarchical signalling of
    /// `objectType` (5: SBR on a stereo 24 kHz core; 29: SBR and PS on a mono one; 48 kHz out), or with
    /// `backwardCompatible` an audioMuxVersion 1 StreamMuxConfig whose AAC-LC ASC is followed by the SBR (and PS) sync
    /// extensions, in the first frame of each PES and useSameStreamMux between, 117 frames (5 s) of the core's silent
    /// blocks (MPEGTS's table): every frame decodes, to silence, with no encoder involved.
    static func heAAC(objectType: Int, backwardCompatible: Bool = false) throws -> URL {
        let url = folder.appendingPathComponent(
            "latm-heaac-\(objectType)\(backwardCompatible ? "-compatible" : "").ts")
        if FileManager.default.fileExists(atPath: url.path) { return url }
        let pid: UInt16 = 0x101
        let channels = objectType == 29 ? 1 : 2
        let silent = try #require(SlateBuilder.silentAAC[channels])
        let config = audioSpecificConfig(objectType: objectType, backwardCompatible: backwardCompatible)
        var packetizer = Packetizer()
        let pat = ProgramAssociationTable(transportStreamID: 1, programs: [.init(programNumber: 1, pmtPID: 0x1000)])
        let pmt = ProgramMapTable(
            programNumber: 1, pcrPID: pid, streams: [ElementaryStream(streamType: .aacLATM, pid: pid)])
        var bytes: [UInt8] = []
        for frame in stride(from: 0, to: 117, by: 4) {
            bytes += packetizer.packets(section: pat.sectionBytes, pid: 0)
            bytes += packetizer.packets(section: pmt.sectionBytes, pid: 0x1000)
            var payload: [UInt8] = []
            for index in frame..<min(frame + 4, 117) {
                var spec = LATMFrameSpec(audioSpecificConfig: index == frame ? config : nil, payload: silent)
                if backwardCompatible {
                    // The ASC's length (LatmGetValue) covers the sync extensions after it.
                    spec.audioMuxVersion = 1
                }
                payload += spec.bytes
            }
            // 1024 samples at 24 kHz: 3840 ticks a frame.
            let pts = Timestamp(wrapping: UInt64(126_000 + frame * 3840))
            bytes += packetizer.packets(pes: PESHeader(streamID: 0xC0, pts: pts), payload: payload, pid: pid)
        }
        try Data(bytes).write(to: url)
        return url
    }

    /// The AudioSpecificConfig of `heAAC(objectType:backwardCompatible:)`: a 24 kHz core (stereo for SBR, mono for
    /// SBR and PS), 48 kHz out; explicit signalling, or AAC-LC followed by the sync extensions (0x2B7, type 5,
    /// sbrPresentFlag, the output frequency index; for PS 0x548 and psPresentFlag, ISO/IEC 14496-3 1.6.2.1).
    static func audioSpecificConfig(objectType: Int, backwardCompatible: Bool = false) -> BitString {
        guard backwardCompatible else {
            return LATMFrameSpec.audioSpecificConfig(
                frequencyIndex: 6, channels: objectType == 29 ? 1 : 2, extensionType: objectType,
                extensionFrequencyIndex: 3)
        }
        var bits = LATMFrameSpec.audioSpecificConfig(frequencyIndex: 6, channels: objectType == 29 ? 1 : 2)
        bits.append(LATMFrameSpec.backwardCompatibleExtension(ps: objectType == 29))
        return bits
    }

    /// The PID `badLATM` adds.
    static let badPID: UInt16 = 0x102

    /// `h264Only` with a LATM stream added (PID 0x102, stream_type 0x11 in every PMT) whose every frame carries a
    /// StreamMuxConfig of two subframes, which the bridge does not read: one single-packet PES after each
    /// picture's first packet, at the picture's PTS.
    static var badLATM: URL? { get async { await badLATMFixture.value } }
    private static let badLATMFixture = SharedFixture<URL?> {
        let url = folder.appendingPathComponent("latm-bad.ts")
        if FileManager.default.fileExists(atPath: url.path) { return url }
        guard let plain = await h264Only, let source = try? [UInt8](Data(contentsOf: plain)) else { return nil }
        var spec = LATMFrameSpec(audioSpecificConfig: LATMFrameSpec.audioSpecificConfig(), payload: [0x21, 0x10])
        spec.subFrames = 1
        let frame = spec.bytes
        var output: [UInt8] = []
        var counter: UInt8 = 0
        var packetStart = 0
        while packetStart + 188 <= source.count {
            var packet = Array(source[packetStart..<(packetStart + 188)])
            packetStart += 188
            let pid = UInt16(packet[1] & 0x1F) << 8 | UInt16(packet[2])
            let starts = packet[1] & 0x40 != 0
            let payload = packet[3] & 0x20 != 0 ? 5 + Int(packet[4]) : 4
            if pid == 0x1000, starts {
                let section = payload + 1 + Int(packet[payload])
                let length = Int(packet[section + 1] & 0x0F) << 8 | Int(packet[section + 2])
                var body = Array(packet[section..<(section + 3 + length - 4)])
                let entry: [UInt8] = [0x11, 0xE0 | UInt8(badPID >> 8), UInt8(badPID & 0xFF), 0xF0, 0x00]
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
            var pts = Array(packet[(payload + 9)..<(payload + 14)])
            pts[0] = pts[0] & 0x0F | 0x20
            let pes: [UInt8] = [0, 0, 1, 0xC0, 0, UInt8(3 + pts.count + frame.count), 0x80, 0x80, 0x05] + pts + frame
            let stuffing = 184 - pes.count - 1
            output += [0x47, 0x40 | UInt8(badPID >> 8), UInt8(badPID & 0xFF), 0x30 | counter]
            output += [UInt8(stuffing), 0x00] + [UInt8](repeating: 0xFF, count: stuffing - 1) + pes
            counter = (counter + 1) & 0x0F
        }
        guard (try? Data(output).write(to: url)) != nil else { return nil }
        return url
    }
}

@Suite(.serialized) struct FragmentedLATMTests {
    let playback = FragmentedPlaybackTests()

    /// The stream types the file's first program map table lists.
    func streamTypes(_ path: String) throws -> [UInt8] {
        let session = try TSPlaybackSession(
            tsFile: path, options: .init(segmentDuration: 1, writesSidecar: false, container: .ts))
        defer { session.close() }
        return session.probe.programs.first?.streams.map(\.streamType.rawValue) ?? []
    }

    /// Everything ffmpeg decodes from `input`'s first audio stream, as 16-bit PCM.
    func pcm(_ input: String) async throws -> Data {
        let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
        let result = try await EndToEnd.run(ffmpeg, ["-v", "error", "-i", input, "-map", "0:a:0", "-f", "s16le", "-"])
        #expect(result.status == 0 && !result.stdout.isEmpty, "ffmpeg PCM of \(input): \(result.err)")
        return result.stdout
    }

    /// ffmpeg's LATM file (ffprobe: aac_latm; its PMT: stream_type 0x11): `--container auto` serves fragmented MP4
    /// and says why; every served playlist lints with no finding; ffmpeg decodes the multivariant URL to the same
    /// audio as the source (every decoded frame's MD5, and all the PCM byte for byte: no priming is trimmed on
    /// either side, as ffmpeg trims none from TS and the fMP4 has no edit list) and the same pictures. `tsplayer remux`
    /// writes an MP4 of h264 and aac that decodes to the same.
    @Test func latmIsServedAndRemuxedAsAACDecodingToTheSourceSamples() async throws {
        let movie = try #require(await LATMFixtures.h264LATM)
        await #expect(try playback.probeStreams(movie.path).map(\.codec) == ["h264", "aac_latm"])
        #expect(try streamTypes(movie.path) == [0x1B, 0x11])
        let session = try TSPlaybackSession(
            tsFile: movie.path, options: .init(segmentDuration: 1, writesSidecar: false, container: .auto))
        defer { session.close() }
        #expect(session.container == .fmp4)
        #expect(
            session.diagnostics == [
                "served as fragmented MP4: LATM AAC becomes AAC in fMP4 (TS byte ranges cannot carry it to AVPlayer)"
            ], "\(session.diagnostics)")
        let sourceAudio = try await playback.frameHashes(movie.path, "a:0")
        let sourceVideo = try await playback.frameHashes(movie.path, "v:0")
        let sourcePCM = try await pcm(movie.path)
        #expect(sourceAudio.count > 180 && sourceVideo.count == 100, "\(sourceAudio.count) \(sourceVideo.count)")

        let server = try await ServerProcess(arguments: [movie.path, "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let master = try await fetch(url)
        #expect(master.contains("CODECS=\"avc1.") && master.contains(",mp4a.40.2\""), "\(master)")
        try await playback.lintServed(url)
        await #expect(try playback.frameHashes(url, "a:0") == sourceAudio)
        await #expect(try pcm(url) == sourcePCM)
        await #expect(try playback.frameHashes(url, "v:0") == sourceVideo)

        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = LATMFixtures.folder.appendingPathComponent("latm-h264.mp4").path
        let remux = try await EndToEnd.run(tsplayer, ["remux", movie.path, output], timeout: 60)
        #expect(remux.status == 0 && remux.err.isEmpty, "\(remux.status): \(remux.err)")
        await #expect(try playback.probeStreams(output).map(\.codec) == ["h264", "aac"])
        await #expect(try playback.frameHashes(output, "a:0") == sourceAudio)
        await #expect(try pcm(output) == sourcePCM)
        await #expect(try playback.frameHashes(output, "v:0") == sourceVideo)
    }

    /// HE-AAC (SBR) and HE-AAC v2 (SBR and PS) in LATM, signalled explicitly or backward-compatibly: served and
    /// remuxed with their signalling (CODECS `mp4a.40.5` / `mp4a.40.29`; the MP4's esds holds the stream's
    /// AudioSpecificConfig), decoding at the 48 kHz output rate in stereo to the same samples as the source.
    @Test(arguments: [(5, false), (29, false), (5, true), (29, true)])
    func heAACKeepsItsSignalling(objectType: Int, backwardCompatible: Bool) async throws {
        let source = try LATMFixtures.heAAC(objectType: objectType, backwardCompatible: backwardCompatible)
        let ffmpeg = try #require(EndToEnd.tool("ffmpeg"))
        let sourceAudio = try await playback.frameHashes(source.path, "a:0")
        let sourcePCM = try await pcm(source.path)
        #expect(sourceAudio.count >= 116, "\(sourceAudio.count)")
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = LATMFixtures.folder.appendingPathComponent(
            "latm-heaac-\(objectType)\(backwardCompatible ? "-compatible" : "").mp4"
        ).path
        let remux = try await EndToEnd.run(tsplayer, ["remux", source.path, output], timeout: 60)
        #expect(remux.status == 0 && remux.err.isEmpty, "\(remux.status): \(remux.err)")
        await #expect(try playback.probeStreams(output).map(\.codec) == ["aac"])
        // The esds's DecoderSpecificInfo (tag 5, its length, the bytes) is the ASC the StreamMuxConfig carried.
        // (ffprobe's profile would say LC: ffmpeg names HE-AAC once it decodes SBR data, which silent frames lack.)
        let asc = LATMFixtures.audioSpecificConfig(objectType: objectType, backwardCompatible: backwardCompatible)
            .bytes
        let written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        let descriptor = [0x05, UInt8(asc.count)] + asc
        #expect(
            written.count > descriptor.count
                && (0...(written.count - descriptor.count)).contains {
                    written[$0..<($0 + descriptor.count)].elementsEqual(descriptor)
                }, "\(asc)")
        let decoded = try #require(try await ExternalProgram.decodedAudio(ffmpeg, output))
        #expect(decoded.sampleRate == 48000 && decoded.channels == 2 && decoded.peak == 0, "\(decoded)")
        await #expect(try playback.frameHashes(output, "a:0") == sourceAudio)
        await #expect(try pcm(output) == sourcePCM)

        let server = try await ServerProcess(arguments: [source.path, "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        let master = try await fetch(url)
        #expect(master.contains("CODECS=\"mp4a.40.\(objectType)\""), "\(master)")
        try await playback.lintServed(url)
        await #expect(try playback.frameHashes(url, "a:0") == sourceAudio)
        await #expect(try pcm(url) == sourcePCM)
    }

    /// H.264 with a LATM stream whose StreamMuxConfig (two subframes) the bridge does not read: the session serves
    /// the video as fMP4 and names the LATM PID as left out, with the reason; the served video decodes to the
    /// source's pictures and the playlists lint clean; `remux` writes the video and names the PID on stderr.
    @Test func unreadableLATMIsLeftOutByPIDAndTheVideoPlays() async throws {
        let movie = try #require(await LATMFixtures.badLATM)
        #expect(try streamTypes(movie.path) == [0x1B, 0x11])
        let session = try TSPlaybackSession(
            tsFile: movie.path, options: .init(segmentDuration: 1, writesSidecar: false, container: .auto))
        defer { session.close() }
        #expect(session.container == .fmp4)
        #expect(
            session.diagnostics.first
                == "served as fragmented MP4: LATM AAC becomes AAC in fMP4 (TS byte ranges cannot carry it to AVPlayer)"
                && session.diagnostics.contains {
                    $0.hasPrefix("PID 258 left out: aac_latm that cannot be read: LATM with 2 subframes")
                }, "\(session.diagnostics)")
        let sourceVideo = try await playback.frameHashes(movie.path, "v:0")
        let server = try await ServerProcess(arguments: [movie.path, "--segment-duration", "1"])
        defer { server.stop() }
        let url = try #require(server.lines.first)
        try await playback.lintServed(url)
        let servedVideo = try await playback.frameHashes(url, "v:0")
        #expect(!sourceVideo.isEmpty && servedVideo == sourceVideo)
        let tsplayer = try #require(EndToEnd.product("tsplayer"))
        let output = LATMFixtures.folder.appendingPathComponent("latm-bad.mp4").path
        let remux = try await EndToEnd.run(tsplayer, ["remux", movie.path, output], timeout: 60)
        #expect(remux.status == 0, "\(remux.status): \(remux.err)")
        #expect(remux.err.hasPrefix("remux: \(movie.path): PID 258 left out: aac_latm that cannot be read: "))
        await #expect(try playback.probeStreams(output).map(\.codec) == ["h264"])
        await #expect(try playback.frameHashes(output, "v:0") == sourceVideo)
    }
}
