import Testing

@testable import FragmentedMP4

@Suite struct MediaSegmentTests {
    let video = [
        Sample(data: [1, 1, 1, 1], duration: 3000, isSync: true, compositionTimeOffset: 3000),
        Sample(data: [2, 2], duration: 3000, isSync: false, compositionTimeOffset: -3000),
        Sample(data: [3], duration: 3000, isSync: false),
    ]
    let audio = [Sample(data: [9, 9, 9], duration: 1024), Sample(data: [8], duration: 1000)]

    @Test func moofTrafsAndDataOffsets() throws {
        let bytes = try MediaSegment(
            sequenceNumber: 42,
            tracks: [
                TrackFragment(trackID: 1, baseMediaDecodeTime: 0x1_0000_0000, samples: video),
                TrackFragment(trackID: 2, baseMediaDecodeTime: 5, samples: audio),
            ], segmentType: MediaSegment.defaultSegmentType
        ).serialized()
        let boxes = try BoxReader.parse(bytes)
        #expect(boxes.map(\.type) == ["styp", "moof", "mdat"])
        let moofStart = boxes[0].serialized().count
        let moof = boxes[1]
        #expect(moof.children.map(\.type) == ["mfhd", "traf", "traf"])
        #expect(moof.child("mfhd")?.data == [0, 0, 0, 0, 0, 0, 0, 42])
        #expect(boxes[2].data == [1, 1, 1, 1, 2, 2, 3, 9, 9, 9, 8])
        let trafs = moof.children.filter { $0.type == "traf" }
        for (traf, samples) in zip(trafs, [video, audio]) {
            #expect(traf.children.map(\.type) == ["tfhd", "tfdt", "trun"])
            #expect(Array(traf.child("tfhd")?.data.prefix(4) ?? []) == [0, 2, 0, 0])  // default-base-is-moof
            #expect(traf.child("tfdt")?.data.first == 1)  // version 1
            let trun = try #require(traf.child("trun")).data
            #expect(uint32(trun, 4) == UInt32(samples.count))
            let offset = Int(uint32(trun, 8))
            // The data offset, counted from the moof, lands on the track's first sample.
            let first = samples[0].data
            #expect(Array(bytes[moofStart + offset..<moofStart + offset + first.count]) == first)
        }
        let videoRun = try #require(trafs[0].child("trun")).data
        #expect(Array(videoRun[0..<4]) == [1, 0, 0x0F, 0x01])  // version 1: signed composition offsets
        #expect(uint32(videoRun, 12) == 3000 && uint32(videoRun, 16) == 4 && uint32(videoRun, 20) == 0x0200_0000)
        #expect(uint32(videoRun, 24) == 3000)
        #expect(uint32(videoRun, 36) == 0x0101_0000 && Int32(bitPattern: uint32(videoRun, 40)) == -3000)
        let audioRun = try #require(trafs[1].child("trun")).data
        #expect(Array(audioRun[0..<4]) == [0, 0, 0x07, 0x01])  // no composition offsets
        #expect(audioRun.count == 12 + 12 * 2)
        let tfdt = try #require(trafs[0].child("tfdt")).data
        #expect(Array(tfdt[4..<12]) == [0, 0, 0, 1, 0, 0, 0, 0])
    }

    @Test func withoutStypStartsWithMoof() throws {
        let bytes = try MediaSegment(
            sequenceNumber: 1, tracks: [TrackFragment(trackID: 1, baseMediaDecodeTime: 0, samples: audio)]
        ).serialized()
        let boxes = try BoxReader.parse(bytes)
        #expect(boxes.map(\.type) == ["moof", "mdat"])
        let trun = try #require(boxes[0].descendant(["traf", "trun"])).data
        #expect(Int(uint32(trun, 8)) == boxes[0].serialized().count + 8)
    }
}
