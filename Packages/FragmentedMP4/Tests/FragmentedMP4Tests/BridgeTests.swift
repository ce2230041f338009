import MPEGTS
import Testing

@testable import FragmentedMP4

extension TSProgramLayout {
    /// Every track's fragment of `bytes`, fed whole, as one range, to a fragmenter of this layout's sample entries.
    func wholeFragments(of bytes: [UInt8], timeline: TSTimeline) throws(FragmentedMP4Error) -> [UInt16: TrackFragment] {
        var fragmenter = try fragmenter()
        fragmenter.beginRange(start: 0, end: .max)
        fragmenter.feed(bytes)
        fragmenter.finish()
        return fragmenter.takeFragments(timeline: timeline)
    }
}

/// A small transport stream built packet by packet: PAT, PMT, then PES packets.
struct TSBuilder {
    var packetizer = Packetizer()
    var bytes: [UInt8] = []
    let pmtPID: UInt16 = 0x1000

    init(streams: [ElementaryStream]) {
        let pat = ProgramAssociationTable(
            transportStreamID: 1, programs: [.init(programNumber: 1, pmtPID: pmtPID)])
        let pmt = ProgramMapTable(programNumber: 1, pcrPID: streams.first?.pid ?? 0x100, streams: streams)
        bytes += packetizer.packets(section: pat.sectionBytes, pid: 0)
        bytes += packetizer.packets(section: pmt.sectionBytes, pid: pmtPID)
    }

    mutating func pes(pid: UInt16, streamID: UInt8, pts: UInt64, dts: UInt64? = nil, payload: [UInt8]) {
        let header = PESHeader(
            streamID: streamID, pts: Timestamp(wrapping: pts), dts: dts.map { Timestamp(wrapping: $0) })
        bytes += packetizer.packets(pes: header, payload: payload, pid: pid)
    }
}

func annexB(_ units: [[UInt8]]) -> [UInt8] { units.flatMap { [0, 0, 0, 1] + $0 } }

/// An ADTS frame: AAC LC, 48 kHz, stereo, no CRC, `body` bytes of payload.
func adtsFrame(_ body: [UInt8]) -> [UInt8] {
    let length = body.count + 7
    return [
        0xFF, 0xF1, 0x4C, 0x80 | UInt8(length >> 11), UInt8((length >> 3) & 0xFF), UInt8((length & 7) << 5) | 0x1F,
        0xFC,
    ] + body
}

@Suite struct BridgeTests {
    @Test func annexBUnitsAndLengthPrefixes() {
        let stream: [UInt8] = [9, 9] + [0, 0, 0, 1, 0x09, 0xF0] + [0, 0, 1, 0x65, 1, 2, 0, 0] + [0, 0, 1, 0x41, 3]
        let units = AnnexB.units(stream)
        #expect(units.map(Array.init) == [[0x09, 0xF0], [0x65, 1, 2], [0x41, 3]])
        #expect(AnnexB.lengthPrefixed(Array(units.dropFirst())) == [0, 0, 0, 3, 0x65, 1, 2, 0, 0, 0, 2, 0x41, 3])
        #expect(AnnexB.units([1, 2, 3]).isEmpty)
    }

    /// The start-code scan (which skips eight bytes at a time) against a byte-by-byte model, on random streams
    /// rich in zeros and ones and of every length up to 64.
    @Test func annexBUnitsMatchANaiveScan() {
        func naive(_ bytes: [UInt8]) -> [[UInt8]] {
            var starts: [Int] = []
            var index = 0
            while index + 2 < bytes.count {
                if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                    starts.append(index)
                    index += 3
                } else {
                    index += 1
                }
            }
            var units: [[UInt8]] = []
            for (number, start) in starts.enumerated() {
                var unit = Array(bytes[(start + 3)..<(number + 1 < starts.count ? starts[number + 1] : bytes.count)])
                while unit.last == 0 { unit.removeLast() }
                if !unit.isEmpty { units.append(unit) }
            }
            return units
        }
        var generator = SystemRandomNumberGenerator()
        for length in 0...64 {
            for _ in 0..<200 {
                let bytes = (0..<length).map { _ -> UInt8 in
                    let pick = UInt8.random(in: 0...5, using: &generator)
                    return pick < 3 ? 0 : pick == 3 ? 1 : UInt8.random(in: 2...255, using: &generator)
                }
                let found = AnnexB.units(bytes).map(Array.init)
                #expect(found == naive(bytes), "\(bytes)")
                if found != naive(bytes) { return }
            }
        }
    }

    @Test func captionServicesAreFoundInSEI() {
        // user_data_registered_itu_t_t35: B5 0031 'GA94' 03, then cc_data with the given triplets.
        func t35(_ triplets: [UInt8]) -> [UInt8] {
            [0xB5, 0x00, 0x31, 0x47, 0x41, 0x39, 0x34, 0x03, 0x40 | UInt8(triplets.count / 3), 0xFF] + triplets
        }
        func h264SEI(_ payload: [UInt8]) -> [UInt8] { [0x06, 0x04, UInt8(payload.count)] + payload + [0x80] }
        let field1: [UInt8] = [0xFC, 0x94, 0x20]  // cc_valid, cc_type 0: CEA-608
        let dtvccStart: [UInt8] = [0xFF, 0x01, 0x20]  // cc_valid, cc_type 3: a CEA-708 packet starts
        let invalid708: [UInt8] = [0xFA, 0x00, 0x00]  // cc_type 2 but cc_valid 0: padding
        #expect(AnnexB.captionServices(sei: h264SEI(t35(field1))[...], syntax: .h264) == .cea608)
        #expect(AnnexB.captionServices(sei: h264SEI(t35(dtvccStart + invalid708))[...], syntax: .h264) == .cea708)
        #expect(AnnexB.captionServices(sei: h264SEI(t35(field1 + invalid708))[...], syntax: .h264) == .cea608)
        #expect(
            AnnexB.captionServices(sei: h264SEI(t35(field1 + dtvccStart))[...], syntax: .h264) == [.cea608, .cea708])
        let other: [UInt8] = [0x06, 0x05, 0x02, 0xAA, 0xBB, 0x80]  // user_data_unregistered
        #expect(AnnexB.captionServices(sei: other[...], syntax: .h264).isEmpty)
        let hevcSEI: [UInt8] = [0x4E, 0x01, 0x04, UInt8(t35(field1).count)] + t35(field1) + [0x80]
        #expect(AnnexB.captionServices(sei: hevcSEI[...], syntax: .hevc) == .cea608)
        let truncated: [UInt8] = [0x06, 0x04, 0x40, 0xB5]
        #expect(AnnexB.captionServices(sei: truncated[...], syntax: .h264).isEmpty)
        // A cc_count larger than the triplets present reads only those present.
        var short = t35(dtvccStart)
        short[8] = 0x40 | 5
        #expect(AnnexB.captionServices(sei: h264SEI(short)[...], syntax: .h264) == .cea708)
        // Without process_cc_data_flag the entries are not to be read.
        var unflagged = t35(field1 + dtvccStart)
        unflagged[8] &= ~0x40
        #expect(AnnexB.captionServices(sei: h264SEI(unflagged)[...], syntax: .h264).isEmpty)
    }

    @Test func audioFrameHeaders() throws {
        let adts = try #require(AudioFrameHeader.parse(.adts, adtsFrame([1, 2, 3]), at: 0))
        #expect(adts.length == 10 && adts.strippedLength == 7 && adts.samples == 1024 && adts.sampleRate == 48000)
        #expect(adts.channelCount == 2)
        // AC-3: 48 kHz, 192 kbit/s (frmsizecod 20), bsid 8, bsmod 0, acmod 7 (3/2), lfeon 1.
        let ac3: [UInt8] = [0x0B, 0x77, 0, 0, 0x14, 0x40, 0xE1, 0x40]
        let header = try #require(AudioFrameHeader.parse(.ac3, ac3, at: 0))
        #expect(header.length == 768 && header.samples == 1536 && header.channelCount == 6, "\(header)")
        // MPEG-1 layer II, 192 kbit/s, 48 kHz, mono.
        let mp2: [UInt8] = [0xFF, 0xFD, 0xA4, 0xC0]
        let layerII = try #require(AudioFrameHeader.parse(.mpegAudio, mp2, at: 0))
        #expect(layerII.length == 576 && layerII.samples == 1152 && layerII.channelCount == 1)
        #expect(AudioFrameHeader.parse(.adts, [0xFF, 0xF1, 0x4C], at: 0) == nil)
        #expect(AudioFrameHeader.parse(.ac3, [0x0B, 0x77, 0, 0, 0xFF, 0x40, 0, 0], at: 0) == nil)
    }

    @Test func timelineRunsOnThroughTheWrap() {
        let first = Timestamp(wrapping: Timestamp.modulus - 90_000)
        let timeline = TSTimeline(firstTimestamp: first)
        #expect(timeline.anchorTime == Int64(Timestamp.modulus - 90_000))
        let after = Timestamp(wrapping: UInt64(90_000))
        #expect(timeline.time(after) == Int64(Timestamp.modulus) + 90_000)
        #expect(timeline.time(after, timescale: 48000) == UInt64((Int64(Timestamp.modulus) + 90_000) * 48000 / 90_000))
        // A first time stamp near 0 moves the timeline up 2^33, so that earlier decode times stay positive.
        let low = TSTimeline(firstTimestamp: Timestamp(wrapping: UInt64(3000)))
        #expect(low.time(Timestamp(wrapping: UInt64(0))) == Int64(Timestamp.modulus))
    }

    /// H.264 with B-frames across a PTS wrap, and ADTS audio two frames per PES, through TSFragmenter.
    @Test func fragmentsOfAnH264AndAACProgram() throws {
        let video = ElementaryStream(streamType: .h264, pid: 0x100)
        let audio = ElementaryStream(
            streamType: .aacADTS, pid: 0x101, descriptors: [Descriptor(tag: 0x0A, data: Array("eng".utf8) + [0])])
        var ts = TSBuilder(streams: [video, audio])
        let start = Timestamp.modulus - 3600 * 2
        let aud: [UInt8] = [0x09, 0xF0]
        let idr: [UInt8] = [0x65, 0x88, 0x84, 0x21]
        // Decode order I P B B P with PTS 2, 5, 3, 4, 6 frames after `start` (a 3-frame composition delay).
        let order: [(pts: UInt64, dts: UInt64, unit: [UInt8])] = [
            (2, 0, idr), (5, 1, [0x41, 1]), (3, 2, [0x01, 2]), (4, 3, [0x01, 3]), (6, 4, [0x41, 4]),
        ]
        for (number, frame) in order.enumerated() {
            var units = [aud]
            if number == 0 { units += [Fixtures.h264SPS, Fixtures.h264PPS] }
            units.append(frame.unit)
            ts.pes(
                pid: 0x100, streamID: 0xE0, pts: (start + frame.pts * 3600) % Timestamp.modulus,
                dts: (start + frame.dts * 3600) % Timestamp.modulus, payload: annexB(units))
            ts.pes(
                pid: 0x101, streamID: 0xC0, pts: (start + UInt64(number) * 3840) % Timestamp.modulus,
                payload: adtsFrame([UInt8(number), 1]) + adtsFrame([UInt8(number), 2]))
        }
        let layout = try TSProgramLayout(head: ts.bytes)
        #expect(layout.tracks.map(\.pid) == [0x100, 0x101])
        #expect(layout.tracks.map(\.trackID) == [1, 2])
        #expect(layout.tracks.last?.language == "eng")
        #expect(layout.codecs[0x100]?.codecString == "avc1.64000d")
        #expect(layout.codecs[0x101]?.codecString == "mp4a.40.2")
        #expect(!layout.hasCaptions)

        let timeline = TSTimeline(firstTimestamp: Timestamp(wrapping: start))
        let fragments = try layout.wholeFragments(of: ts.bytes, timeline: timeline)
        let videoFragment = try #require(fragments[0x100])
        #expect(videoFragment.trackID == 1)
        #expect(videoFragment.baseMediaDecodeTime == UInt64(start))
        #expect(videoFragment.samples.map(\.isSync) == [true, false, false, false, false])
        #expect(videoFragment.samples.map(\.compositionTimeOffset) == [7200, 14400, 3600, 3600, 7200])
        #expect(videoFragment.samples.map(\.duration) == [3600, 3600, 3600, 3600, 3600])
        // The AUD is gone; the SPS and PPS stay in band (avc1 allows it), each unit after its 4-byte length.
        let first = videoFragment.samples[0].data
        // (The fixture SPS ends with a zero byte, which Annex B counts as trailing_zero_8bits, not part of it.)
        #expect(Fixtures.h264SPS.last == 0)
        #expect(first.prefix(4 + Fixtures.h264SPS.count - 1) == [0, 0, 0, 25] + Fixtures.h264SPS.dropLast())
        #expect(videoFragment.samples[1].data == [0, 0, 0, 2, 0x41, 1])
        let audioFragment = try #require(fragments[0x101])
        #expect(audioFragment.trackID == 2)
        #expect(audioFragment.samples.count == 10)
        #expect(audioFragment.samples.map(\.data.count) == Array(repeating: 2, count: 10))
        #expect(audioFragment.samples.allSatisfy { $0.duration == 1024 && $0.isSync })
        #expect(audioFragment.baseMediaDecodeTime == UInt64((Double(start) * 48000 / 90000).rounded()))

        let initSegment = try layout.initSegment().serialized()
        let moov = try #require(try BoxReader.parse(initSegment).first { $0.type == "moov" })
        #expect(moov.children.filter { $0.type == "trak" }.count == 2)
    }

    @Test func hevcParameterSetsGoOutOfBand() throws {
        var ts = TSBuilder(streams: [ElementaryStream(streamType: .hevc, pid: 0x200)])
        let idr: [UInt8] = [0x26, 0x01, 0xAF, 0x10]  // IDR_W_RADL
        let trail: [UInt8] = [0x02, 0x01, 0xD0]
        let aud: [UInt8] = [0x46, 0x01, 0x50]
        ts.pes(
            pid: 0x200, streamID: 0xE0, pts: 900_000,
            payload: annexB([aud, Fixtures.hevcVPS, Fixtures.hevcSPS, Fixtures.hevcPPS, idr]))
        ts.pes(pid: 0x200, streamID: 0xE0, pts: 903_600, payload: annexB([aud, trail]))
        let layout = try TSProgramLayout(head: ts.bytes)
        let codec = try #require(layout.codecs[0x200])
        #expect(codec.codecString == "hvc1.1.6.L60.90")
        let fragment = try #require(
            try layout.wholeFragments(
                of: ts.bytes, timeline: TSTimeline(firstTimestamp: Timestamp(wrapping: UInt64(900_000))))[0x200])
        #expect(fragment.samples.map(\.data) == [[0, 0, 0, 4] + idr, [0, 0, 0, 3] + trail])
        #expect(fragment.samples.map(\.isSync) == [true, false])
        #expect(fragment.samples.map(\.duration) == [3600, 3600])
    }

    @Test func codecsItCannotCarryAreNamedByPID() throws {
        var ts = TSBuilder(streams: [ElementaryStream(streamType: .mpeg2Video, pid: 0x300)])
        ts.pes(pid: 0x300, streamID: 0xE0, pts: 0, payload: [0, 0, 1, 0xB3])
        #expect {
            try TSProgramLayout(head: ts.bytes)
        } throws: { error in
            guard let error = error as? FragmentedMP4Error else { return false }
            return error.code == .unsupportedCodec && error.detail.contains("PID 768 (mpeg2video)")
        }
        #expect(throws: FragmentedMP4Error.self) { try TSTrackBuilder(pid: 7, codec: .mpeg2Video) }
        // An audio stream whose PES carry no frame header: its PID is named.
        var silent = TSBuilder(streams: [ElementaryStream(streamType: .aacADTS, pid: 0x101)])
        silent.pes(pid: 0x101, streamID: 0xC0, pts: 0, payload: [1, 2, 3, 4])
        #expect {
            try TSProgramLayout(head: silent.bytes)
        } throws: { error in
            guard let error = error as? FragmentedMP4Error else { return false }
            return error.code == .missingConfiguration && error.detail.contains("PID 257")
        }
        #expect(throws: FragmentedMP4Error.self) { try TSProgramLayout(head: Array(repeating: 0x47, count: 10)) }
    }

    /// Truncated, damaged and random transport streams give fragments or typed errors, never a trap.
    @Test func damagedStreamsNeverTrap() throws {
        var ts = TSBuilder(
            streams: [
                ElementaryStream(streamType: .h264, pid: 0x100), ElementaryStream(streamType: .aacADTS, pid: 0x101),
            ])
        for number in 0..<6 {
            let idr: [UInt8] = number % 3 == 0 ? [0x65, 0x88, 0x84, 0x21] : [0x41, UInt8(number)]
            ts.pes(
                pid: 0x100, streamID: 0xE0, pts: UInt64(number) * 3600,
                payload: annexB([Fixtures.h264SPS, Fixtures.h264PPS, idr]))
            ts.pes(pid: 0x101, streamID: 0xC0, pts: UInt64(number) * 1920, payload: adtsFrame([UInt8(number)]))
        }
        let layout = try TSProgramLayout(head: ts.bytes)
        var generator = SplitMix64(seed: 15)
        var inputs: [[UInt8]] = stride(from: 0, to: ts.bytes.count, by: 97).map { Array(ts.bytes.prefix($0)) }
        for _ in 0..<40 {
            var damaged = ts.bytes
            for _ in 0..<8 {
                damaged[Int.random(in: 0..<damaged.count, using: &generator)] = UInt8.random(
                    in: 0...255, using: &generator)
            }
            inputs.append(damaged)
            inputs.append(
                (0..<Int.random(in: 0..<4000, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                })
        }
        for input in inputs {
            _ = try? TSProgramLayout(head: input)
            var fragmenter = try layout.fragmenter()
            fragmenter.beginRange(start: 0, end: Int64(input.count / 2))
            fragmenter.feed(input)
            fragmenter.finish()
            for fragment in fragmenter.takeFragments(
                timeline: TSTimeline(firstTimestamp: Timestamp(wrapping: UInt64(0)))
            ).values {
                _ = try MediaSegment(sequenceNumber: 1, tracks: [fragment]).serialized()
            }
        }
    }
}
