// Fuzzes the LATM/LOAS reader and the bridge's LATM track: the input as LOAS frames read one after another (and
// as an AudioSpecificConfig), then as the payload of PES packets cut where the input's first byte says, through a
// LATM track builder to a fragment that is serialised. Errors are typed; nothing may trap.
import FragmentedMP4
import FuzzSupport
import MPEGTS

func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    let array = Array(bytes)
    var reader = LOASReader()
    var index = 0
    while index < array.count {
        guard let length = LOASReader.frameLength(array, at: index) else {
            index += 1
            continue
        }
        if let unit = try? reader.accessUnit(array, at: index) {
            precondition(!unit.isEmpty && unit.count < length, "an access unit longer than its frame")
            precondition(reader.configuration != nil, "an access unit without a configuration")
        }
        index += length
    }
    _ = try? LOASReader(audioSpecificConfig: array)
    _ = LOASReader.firstConfiguration(in: array)
    _ = CodecDetails.parse(codec: .aacLATM, payload: array)

    // The input as the PES payloads of a LATM stream in a transport stream, through the bridge.
    let pid: UInt16 = 0x101
    var packetizer = Packetizer()
    let pat = ProgramAssociationTable(transportStreamID: 1, programs: [.init(programNumber: 1, pmtPID: 0x1000)])
    let pmt = ProgramMapTable(
        programNumber: 1, pcrPID: pid, streams: [ElementaryStream(streamType: .aacLATM, pid: pid)])
    var ts =
        packetizer.packets(section: pat.sectionBytes, pid: 0)
        + packetizer.packets(section: pmt.sectionBytes, pid: 0x1000)
    let step = 1 + Int(array.first ?? 0) * 4
    var start = 0
    var pts: UInt64 = 0
    while start < array.count {
        let end = min(array.count, start + step)
        let header = PESHeader(streamID: 0xC0, pts: Timestamp(wrapping: pts))
        ts += packetizer.packets(pes: header, payload: Array(array[start..<end]), pid: pid)
        start = end
        pts += 1920
    }
    guard let layout = try? TSProgramLayout(head: ts), var fragmenter = try? layout.fragmenter() else { return }
    _ = try? layout.initSegment().serialized()
    _ = layout.codecs[pid]?.codecString
    fragmenter.beginRange(start: 0, end: .max)
    fragmenter.feed(ts)
    fragmenter.finish()
    for fragment in fragmenter.takeFragments(timeline: TSTimeline(firstTimestamp: Timestamp(wrapping: UInt64(0))))
        .values
    {
        _ = try? MediaSegment(sequenceNumber: 1, tracks: [fragment]).serialized()
    }
}

runFuzzer(fuzzOne)
