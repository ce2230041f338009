import Testing

@testable import MPEGTS

/// A splice_info_section around `command` and `descriptors` (protocol 0, no encryption, tier 0xFFF).
func spliceSection(commandType: UInt8, command: [UInt8], descriptors: [UInt8] = [], ptsAdjustment: UInt64 = 0)
    -> [UInt8]
{
    var body: [UInt8] = [
        0x00, UInt8(truncatingIfNeeded: ptsAdjustment >> 32) & 1, UInt8(truncatingIfNeeded: ptsAdjustment >> 24),
        UInt8(truncatingIfNeeded: ptsAdjustment >> 16), UInt8(truncatingIfNeeded: ptsAdjustment >> 8),
        UInt8(truncatingIfNeeded: ptsAdjustment), 0xFF,
        0xFF, 0xF0 | UInt8(command.count >> 8), UInt8(truncatingIfNeeded: command.count), commandType,
    ]
    body += command
    body += [UInt8(descriptors.count >> 8), UInt8(truncatingIfNeeded: descriptors.count)] + descriptors
    let length = body.count + 4
    var section: [UInt8] = [0xFC, 0x30 | UInt8(length >> 8), UInt8(truncatingIfNeeded: length)] + body
    let crc = CRC32MPEG2.checksum(section)
    section += [
        UInt8(crc >> 24), UInt8(truncatingIfNeeded: crc >> 16), UInt8(truncatingIfNeeded: crc >> 8),
        UInt8(truncatingIfNeeded: crc),
    ]
    return section
}

@Suite struct SCTE35Tests {
    /// SCTE 35 2022 §14 sample: time_signal with a Provider Placement Opportunity Start segmentation descriptor.
    static let timeSignal = "/DA0AAAAAAAA///wBQb+cr0AUAAeAhxDVUVJSAAAjn/PAAGlmbAICAAAAAAsoKGKNAIAmsnRfg=="
    /// SCTE 35 sample: splice_insert out of network with an avail descriptor.
    static let spliceInsert = "/DAvAAAAAAAA///wFAVIAACPf+/+c2nALv4AUsz1AAAAAAAKAAhDVUVJAAABNWLbowo="

    @Test func timeSignalSample() throws {
        let section = try SpliceInfoSection(base64: Self.timeSignal)
        #expect(section.sapType == 3)
        #expect(section.ptsAdjustment == 0)
        #expect(section.tier == 0xFFF)
        #expect(section.crc == 0x9AC9_D17E)
        #expect(section.command == .timeSignal(Timestamp(wrapping: UInt64(0x7_2BD0_050))))
        guard case .segmentation(let descriptor) = try #require(section.descriptors.first) else {
            Issue.record("expected a segmentation descriptor")
            return
        }
        #expect(descriptor.eventID == 0x4800_008E)
        #expect(!descriptor.isCancel)
        #expect(descriptor.isProgramSegmentation)
        #expect(descriptor.durationTicks == 27_630_000)
        #expect(descriptor.durationSeconds == 307)
        #expect(descriptor.upidType == 0x08)
        #expect(descriptor.upid == [0, 0, 0, 0, 0x2C, 0xA0, 0xA1, 0x8A])
        #expect(descriptor.typeID == 0x34)
        #expect(descriptor.typeName == "Provider Placement Opportunity Start")
        #expect(descriptor.segmentNumber == 2)
        #expect(descriptor.segmentsExpected == 0)
        #expect(!descriptor.deliveryNotRestricted && descriptor.noRegionalBlackout && descriptor.archiveAllowed)
        #expect(descriptor.isAdStart)
    }

    @Test func spliceInsertSample() throws {
        let section = try SpliceInfoSection(base64: Self.spliceInsert)
        guard case .insert(let insert) = section.command else {
            Issue.record("expected splice_insert, got \(section.command)")
            return
        }
        #expect(insert.eventID == 1_207_959_695)
        #expect(insert.isOutOfNetwork && insert.isProgramSplice && !insert.isImmediate)
        #expect(insert.spliceTime?.value == 0x7369_C02E)
        #expect(insert.breakDuration == BreakDuration(autoReturn: true, ticks: 0x52_CCF5))
        #expect(section.descriptors == [.avail(providerAvailID: 309)])
        // The same bytes as hex.
        let bytes = Base64.decode(Self.spliceInsert) ?? []
        let hexText = "0x" + bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        #expect(try SpliceInfoSection(hex: hexText) == section)
        #expect(Base64.encode(bytes) == Self.spliceInsert)
    }

    @Test func otherCommands() throws {
        #expect(try SpliceInfoSection(bytes: spliceSection(commandType: 0, command: [])).command == .null)
        #expect(
            try SpliceInfoSection(bytes: spliceSection(commandType: 7, command: [])).command == .bandwidthReservation)
        let privateCommand = try SpliceInfoSection(
            bytes: spliceSection(commandType: 0xFF, command: [0x41, 0x42, 0x43, 0x44, 9, 8]))
        #expect(privateCommand.command == .privateCommand(identifier: 0x4142_4344, bytes: [9, 8]))
        // splice_schedule: one program splice at UTC 1000 with a 30 s auto-return break.
        let schedule: [UInt8] = [1, 0, 0, 0, 7, 0x7F, 0xFF, 0, 0, 0x03, 0xE8, 0x80, 0x00, 0x29, 0x32, 0xE0, 0, 5, 1, 2]
        guard
            case .schedule(let events) = try SpliceInfoSection(bytes: spliceSection(commandType: 4, command: schedule))
                .command
        else {
            Issue.record("expected splice_schedule")
            return
        }
        #expect(events.count == 1)
        #expect(events.first?.eventID == 7)
        #expect(events.first?.isOutOfNetwork == true)
        #expect(events.first?.utcSpliceTime == 1000)
        #expect(events.first?.breakDuration == BreakDuration(autoReturn: true, ticks: 2_700_000))
        #expect(events.first?.uniqueProgramID == 5)
        // time_signal with pts_adjustment: the adjusted time wraps.
        let adjusted = try SpliceInfoSection(
            bytes: spliceSection(commandType: 6, command: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF], ptsAdjustment: 10))
        guard case .timeSignal(let time?) = adjusted.command else {
            Issue.record("expected a time")
            return
        }
        #expect(adjusted.adjusted(time).value == 9)
    }

    @Test func truncatedAndCorruptSections() throws {
        let bytes = Base64.decode(Self.timeSignal) ?? []
        for length in 0..<bytes.count {
            #expect(throws: MPEGTSError.self, "prefix \(length)") {
                _ = try SpliceInfoSection(bytes: Array(bytes[..<length]))
            }
        }
        var corrupt = bytes
        corrupt[20] ^= 0x40
        #expect { _ = try SpliceInfoSection(bytes: corrupt) } throws: { ($0 as? MPEGTSError)?.code == .crcMismatch }
        #expect(throws: MPEGTSError.self) { _ = try SpliceInfoSection(base64: "not base64 !") }
        #expect(throws: MPEGTSError.self) { _ = try SpliceInfoSection(hex: "0xFC3") }
        // A descriptor loop longer than the section, with a correct CRC: a typed error, not a trap.
        var lying = spliceSection(
            commandType: 0, command: [], descriptors: [0, 8, 0x43, 0x55, 0x45, 0x49, 0, 0, 1, 0x35])
        lying[15] = 0x40  // descriptor_loop_length
        let length = lying.count - 4
        let crc = CRC32MPEG2.checksum(lying[..<length])
        lying.replaceSubrange(
            length...,
            with: [
                UInt8(crc >> 24), UInt8(truncatingIfNeeded: crc >> 16), UInt8(truncatingIfNeeded: crc >> 8),
                UInt8(truncatingIfNeeded: crc),
            ])
        #expect { _ = try SpliceInfoSection(bytes: lying) } throws: { ($0 as? MPEGTSError)?.code == .truncated }
    }

    @Test func cuesFromTheDemuxer() throws {
        var builder = StreamBuilder()
        builder.tables(extraStreams: [ElementaryStream(streamType: .scte35, pid: 0x1F0)])
        let cue = Base64.decode(Self.spliceInsert) ?? []
        builder.bytes += builder.packetizer.packets(section: cue, pid: 0x1F0)
        builder.bytes += builder.packetizer.packets(section: cue, pid: 0x1F0)
        var demuxer = Demuxer()
        var analyzer = TSAnalyzer()
        demuxer.feed(builder.bytes) { analyzer.consume($0) }
        demuxer.finish { analyzer.consume($0) }
        #expect(analyzer.scte35.count == 2, "every SCTE-35 section is reported, repeats included")
        #expect(analyzer.scte35.first?.pid == 0x1F0)
        let decoded = try SpliceInfoSection(bytes: try #require(analyzer.scte35.first).section.bytes)
        #expect(decoded == (try SpliceInfoSection(base64: Self.spliceInsert)))
        #expect(analyzer.tables[0xFC] == 2)
    }
}
