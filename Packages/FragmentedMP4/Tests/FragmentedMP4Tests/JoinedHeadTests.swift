import MPEGTS
import Testing

@testable import FragmentedMP4

/// ``TSProgramLayout/init(head:pids:leavingOut:program:)`` on a head that holds two recordings joined end to end: the
/// layout is the first recording's.
@Suite struct JoinedHeadTests {
    /// A recording of one AAC stream on `audio`, program `program` with its PMT on `pmtPID`; without frames, the
    /// tables alone. One packetizer for the recordings joined, so that their continuity counters run on (a repeated
    /// counter would make a second table packet a duplicate, which the demuxer drops).
    static func recording(
        program: UInt16, pmtPID: UInt16, audio: UInt16, frames: Int = 3, packetizer: inout Packetizer
    ) -> [UInt8] {
        let pat = ProgramAssociationTable(
            transportStreamID: 1, programs: [.init(programNumber: program, pmtPID: pmtPID)])
        let pmt = ProgramMapTable(
            programNumber: program, pcrPID: audio, streams: [ElementaryStream(streamType: .aacADTS, pid: audio)])
        var bytes = packetizer.packets(section: pat.sectionBytes, pid: 0)
        bytes += packetizer.packets(section: pmt.sectionBytes, pid: pmtPID)
        for number in 0..<frames {
            let header = PESHeader(streamID: 0xC0, pts: Timestamp(wrapping: UInt64(number) * 1920), dts: nil)
            bytes += packetizer.packets(pes: header, payload: adtsFrame([UInt8(number), 1]), pid: audio)
        }
        return bytes
    }

    @Test func aSecondRecordingOnAnotherProgramIsLeftOut() throws {
        var packetizer = Packetizer()
        let first = Self.recording(program: 1, pmtPID: 0x1000, audio: 0x101, packetizer: &packetizer)
        let second = Self.recording(program: 2, pmtPID: 0x1100, audio: 0x201, packetizer: &packetizer)
        #expect(TSProgramLayout.firstRecordingLength(first + second) == first.count)
        let layout = try TSProgramLayout(head: first + second)
        #expect(layout.programMap.programNumber == 1)
        #expect(layout.tracks.map(\.pid) == [0x101])
        // One recording: all of it.
        #expect(TSProgramLayout.firstRecordingLength(first) == first.count)
        #expect(TSProgramLayout.firstRecordingLength(first + first) == 2 * first.count)
    }

    @Test func aSecondRecordingOnOtherPIDsOfTheSameProgramIsLeftOut() throws {
        var packetizer = Packetizer()
        let first = Self.recording(program: 1, pmtPID: 0x1000, audio: 0x101, packetizer: &packetizer)
        let second = Self.recording(program: 1, pmtPID: 0x1000, audio: 0x102, packetizer: &packetizer)
        #expect(TSProgramLayout.firstRecordingLength(first + second) == first.count + 188)
        let layout = try TSProgramLayout(head: first + second)
        #expect(layout.tracks.map(\.pid) == [0x101])
    }

    /// Tables that change before any frame: the bytes before the change make no layout, so the whole head is read.
    @Test func tablesAloneBeforeTheChangeGiveTheWholeHeadsLayout() throws {
        var packetizer = Packetizer()
        let first = Self.recording(program: 1, pmtPID: 0x1000, audio: 0x101, frames: 0, packetizer: &packetizer)
        let second = Self.recording(program: 2, pmtPID: 0x1100, audio: 0x201, packetizer: &packetizer)
        #expect(TSProgramLayout.firstRecordingLength(first + second) == first.count)
        let layout = try TSProgramLayout(head: first + second)
        #expect(layout.tracks.map(\.pid) == [0x201])
    }
}
