// Fuzzes the ISO BMFF box reader: whole buffers and prefixes; a buffer that reads must write back to itself.
import FragmentedMP4
import FuzzSupport

func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    let array = Array(bytes)
    if let boxes = try? BoxReader.parse(array, limits: BoxLimits(maximumDepth: 16, maximumBoxCount: 10_000)) {
        var writer = BoxWriter()
        for box in boxes { writer.write(box) }
        // Sizes of 0 (to the end) and forced 64-bit headers are kept as read, so the bytes come back unchanged.
        precondition(writer.bytes == array, "a read box tree wrote back different bytes")
    }
    _ = try? BoxReader.parsePrefix(array)
    _ = FragmentedSlateTemplate(array)
    _ = FragmentedSlateTemplate.videoTrack(initSection: array)
    _ = FragmentedSlateTemplate.contentStart(segment: array, initSection: array)
}

runFuzzer(fuzzOne)
