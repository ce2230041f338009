// Fuzzes the TS-to-fMP4 bridge: the input as the head of a transport stream (tables, parameter sets, frame
// headers), then as a byte range cut into fragments that are serialised.
import FragmentedMP4
import FuzzSupport
import MPEGTS

func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    let array = Array(bytes)
    guard let layout = try? TSProgramLayout(head: array), var fragmenter = try? layout.fragmenter() else { return }
    _ = try? layout.initSegment().serialized()
    fragmenter.beginRange(start: 0, end: Int64(array.count / 2))
    fragmenter.feed(array)
    fragmenter.finish()
    let timeline = TSTimeline(firstTimestamp: fragmenter.firstTimestamp ?? Timestamp(wrapping: UInt64(0)))
    for fragment in fragmenter.takeFragments(timeline: timeline).values {
        _ = try? MediaSegment(sequenceNumber: 1, tracks: [fragment]).serialized()
    }
}

runFuzzer(fuzzOne)
