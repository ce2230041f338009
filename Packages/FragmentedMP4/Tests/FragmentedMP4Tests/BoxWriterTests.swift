import Testing

@testable import FragmentedMP4

@Suite struct BoxWriterTests {
    @Test func sizesArePatchedAndFullBoxHeadersWritten() {
        let box = RawBox("abcd", fullBoxHeader: FullBoxHeader(version: 1, flags: 0x0A0B0C), body: [1, 2])
        #expect(box.serialized() == [0, 0, 0, 14] + tag("abcd") + [1, 0x0A, 0x0B, 0x0C, 1, 2])
        let container = ContainerBox("moov", [box, RawBox("free", body: [])])
        #expect(container.serialized() == [0, 0, 0, 30] + tag("moov") + box.serialized() + [0, 0, 0, 8] + tag("free"))
    }

    @Test func largeFormWhenAsked() throws {
        let box = Box(type: "free", sizeForm: .large, content: .data([5]))
        let bytes = box.serialized()
        #expect(bytes == [0, 0, 0, 1] + tag("free") + [0, 0, 0, 0, 0, 0, 0, 17, 5])
        #expect(try BoxReader.parse(bytes) == [box])
    }

    /// The mdat header for a payload that does not fit a 32-bit box size, without allocating the payload.
    @Test func mediaDataHeaderSwitchesTo64BitPast4GiB() throws {
        let largest32 = UInt64(UInt32.max) - 8
        #expect(try MediaDataHeader.bytes(payloadLength: 0) == [0, 0, 0, 8] + tag("mdat"))
        #expect(try MediaDataHeader.bytes(payloadLength: largest32) == [0xFF, 0xFF, 0xFF, 0xFF] + tag("mdat"))
        let large = try MediaDataHeader.bytes(payloadLength: largest32 + 1)
        #expect(large == [0, 0, 0, 1] + tag("mdat") + [0, 0, 0, 1, 0, 0, 0, 0x08])  // 2^32 − 8 + 16
        #expect(throws: FragmentedMP4Error.self) { try MediaDataHeader.bytes(payloadLength: .max) }
        // The reader accepts the 64-bit header and reports the missing payload as truncation.
        do throws(FragmentedMP4Error) {
            _ = try BoxReader.parse(large)
            Issue.record("a 4 GiB mdat header with no payload parsed")
        } catch { #expect(error.code == .truncated && error.path == ["mdat"]) }
    }

    /// write → read → the same tree → write → the same bytes, for an init segment and a media segment.
    @Test func roundTrip() throws {
        let segment = try MediaSegment(
            sequenceNumber: 7,
            tracks: [
                TrackFragment(
                    trackID: 1, baseMediaDecodeTime: 1 << 40,
                    samples: [Sample(data: [1, 2, 3], duration: 3000, isSync: true, compositionTimeOffset: 6000)]),
                TrackFragment(trackID: 2, baseMediaDecodeTime: 0, samples: [Sample(data: [4], duration: 1024)]),
            ], segmentType: MediaSegment.defaultSegmentType
        ).serialized()
        for bytes in [try Fixtures.initSegment(), segment] {
            let tree = try BoxReader.parse(bytes)
            var writer = BoxWriter()
            for box in tree { writer.write(box) }
            #expect(writer.bytes == bytes)
            #expect(try BoxReader.parse(writer.bytes) == tree)
        }
    }
}
