import Testing

@testable import MPEGTS

@Suite struct ParserTests {
    @Test func crcKnownVector() {
        #expect(CRC32MPEG2.checksum(Array("123456789".utf8)) == 0x0376_E6E7)
    }

    @Test func pesHeaderRoundTripAndPrefixes() throws {
        let header = PESHeader(
            streamID: 0xE0, pts: Timestamp(wrapping: UInt64(0x1_2345_6789)),
            dts: Timestamp(wrapping: UInt64(0x0_FEDC_BA98)))
        let bytes = header.encoded(payloadLength: 0)
        let parsed = try bytes.withUnsafeBytes { try PESHeader.parse($0) }
        #expect(parsed.pts == header.pts)
        #expect(parsed.dts == header.dts)
        #expect(parsed.headerLength == 19)
        for length in 0..<bytes.count {
            let prefix = Array(bytes[..<length])
            #expect(throws: MPEGTSError.self) { try prefix.withUnsafeBytes { try PESHeader.parse($0) } }
            do {
                _ = try prefix.withUnsafeBytes { try PESHeader.parse($0) }
            } catch let error as MPEGTSError {
                #expect(error.code == .truncated, "prefix \(length)")
            } catch {}
        }
    }

    @Test func pesMarkerBitsChecked() {
        let header = PESHeader(streamID: 0xC0, pts: Timestamp(wrapping: UInt64(12345)))
        let good = header.encoded(payloadLength: 10)
        for markerByte in [9, 11, 13] {
            var bad = good
            bad[markerByte] &= 0xFE
            #expect {
                try bad.withUnsafeBytes { _ = try PESHeader.parse($0, offset: 1000) }
            } throws: { error in
                // The offset is the start of the PTS field.
                (error as? MPEGTSError)?.code == .invalidMarker && (error as? MPEGTSError)?.offset == 1009
            }
        }
    }

    @Test func patAndPMTRoundTrip() throws {
        let pat = ProgramAssociationTable(
            transportStreamID: 7, version: 3,
            programs: [.init(programNumber: 1, pmtPID: 0x1000), .init(programNumber: 2, pmtPID: 0x1001)],
            networkPID: 0x10)
        let section = try PSISection(bytes: pat.sectionBytes)
        #expect(try ProgramAssociationTable(section: section) == pat)
        let pmt = ProgramMapTable(
            programNumber: 2, version: 5, pcrPID: 0x200, descriptors: [Descriptor(tag: 0x05, data: Array("CUEI".utf8))],
            streams: [
                ElementaryStream(streamType: .h264, pid: 0x200),
                ElementaryStream(streamType: .privatePES, pid: 0x201, descriptors: [Descriptor(tag: 0x6A, data: [0])]),
                ElementaryStream(streamType: .scte35, pid: 0x202),
            ])
        let parsed = try ProgramMapTable(section: try PSISection(bytes: pmt.sectionBytes))
        #expect(parsed == pmt)
        #expect(parsed.descriptors.first?.registrationFormat == "CUEI")
        #expect(parsed.streams.map(\.codec) == [.h264, .ac3, .scte35])
    }

    @Test func badCRCAndTruncatedSections() {
        var bytes = ProgramAssociationTable(transportStreamID: 1, programs: [.init(programNumber: 1, pmtPID: 0x100)])
            .sectionBytes
        for length in 0..<bytes.count {
            #expect(throws: MPEGTSError.self) { _ = try PSISection(bytes: Array(bytes[..<length])) }
        }
        bytes[9] ^= 0x01
        #expect { _ = try PSISection(bytes: bytes, offset: 50) } throws: { error in
            (error as? MPEGTSError)?.code == .crcMismatch && (error as? MPEGTSError)?.offset == 50
        }
    }

    @Test func sectionAssemblerAcrossPacketsAndSeveralPerPacket() {
        // Two short sections in one payload, then a long one spanning three payloads.
        let first = ProgramAssociationTable(transportStreamID: 1, programs: [.init(programNumber: 1, pmtPID: 0x100)])
            .sectionBytes
        let second = ProgramAssociationTable(transportStreamID: 2, programs: [.init(programNumber: 9, pmtPID: 0x101)])
            .sectionBytes
        let long = PSISection.make(tableID: 0x42, tableIDExtension: 3, body: Array(repeating: 0x33, count: 400))
        var assembler = SectionAssembler()
        var found: [[UInt8]] = []
        let payload1: [UInt8] = [0] + first + second + [0xFF, 0xFF]
        let idle = payload1.withUnsafeBytes { raw in
            assembler.push(
                raw, payloadUnitStart: true, offset: 0, section: { bytes, _ in found.append(bytes) }, error: { _ in })
        }
        #expect(idle, "stuffing ends the packet's sections")
        let longPayload: [UInt8] = [0] + long
        var index = 0
        while index < longPayload.count {
            let end = min(index + 184, longPayload.count)
            _ = Array(longPayload[index..<end]).withUnsafeBytes { raw in
                assembler.push(
                    raw, payloadUnitStart: index == 0, offset: 0, section: { bytes, _ in found.append(bytes) },
                    error: { _ in })
            }
            index = end
        }
        #expect(found == [first, second, long])
    }

    @Test func adaptationFieldParsing() throws {
        var packetizer = Packetizer()
        let packets = packetizer.packets(
            pes: PESHeader(streamID: 0xE0, pts: Timestamp(wrapping: UInt64(900))), payload: [1, 2, 3], pid: 0x44,
            pcr: PCR(base: 0x1_FFFF_FFFF, extension: 299), randomAccess: true)
        #expect(packets.count == 188)
        let packet = try packets.withUnsafeBytes { raw in try TSPacket.parse(raw, offset: 0) }
        #expect(packet.header.pid == 0x44)
        #expect(packet.header.payloadUnitStart)
        #expect(packet.adaptationField?.randomAccess == true)
        #expect(packet.adaptationField?.pcr == PCR(base: 0x1_FFFF_FFFF, extension: 299))
        #expect(packet.payload.count == 14 + 3)
        var bad = packets
        bad[4] = 183  // too long when a payload follows
        #expect { _ = try bad.withUnsafeBytes { raw in try TSPacket.parse(raw, offset: 376) } } throws: { error in
            (error as? MPEGTSError)?.code == .invalidLength && (error as? MPEGTSError)?.offset == 380
        }
    }

    @Test func keyframeScannerAcrossChunks() {
        let unit = StreamBuilder.h264AccessUnit(keyframe: true, padding: 50)
        for split in 0...unit.count {
            var scanner = KeyframeScanner(syntax: .h264)
            Array(unit[..<split]).withUnsafeBytes { scanner.scan($0) }
            Array(unit[split...]).withUnsafeBytes { scanner.scan($0) }
            #expect(scanner.result == .keyframe, "split at \(split)")
        }
        var scanner = KeyframeScanner(syntax: .hevc)
        StreamBuilder.hevcAccessUnit(keyframe: false).withUnsafeBytes { scanner.scan($0) }
        #expect(scanner.result == .notKeyframe)
    }

    @Test func packetSizeDetection() {
        let stream = StreamBuilder.typical()
        for size in PacketSize.all {
            var bytes = size == .standard ? stream : repacketize(stream, size: size)
            bytes.insert(contentsOf: [0x47, 0x00, 0x47, 0x12, 0x33], at: 0)
            let found = PacketSize.detect(in: bytes)
            #expect(found?.size == size)
            #expect(found?.offset == 5)
        }
        #expect(PacketSize.detect(in: Array(repeating: 0x47, count: 3)) == nil)
    }
}
