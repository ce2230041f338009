/// One sample of a fragment.
public struct Sample: Sendable {
    /// The sample's bytes as they go into `mdat` (length-prefixed NAL units for video, raw frames for audio).
    public var data: [UInt8]
    /// In the track's timescale.
    public var duration: UInt32
    /// A sync sample (keyframe); every audio sample is one.
    public var isSync: Bool
    /// Presentation time minus decode time, in the track's timescale.
    public var compositionTimeOffset: Int32

    public init(data: [UInt8], duration: UInt32, isSync: Bool = true, compositionTimeOffset: Int32 = 0) {
        self.data = data
        self.duration = duration
        self.isSync = isSync
        self.compositionTimeOffset = compositionTimeOffset
    }

    /// `sample_flags` (ISO/IEC 14496-12, 8.8.3.1): a sync sample depends on no other (`sample_depends_on = 2`); any
    /// other depends on others (`1`) and is a non-sync sample.
    public var flags: UInt32 { isSync ? 0x0200_0000 : 0x0101_0000 }
}

/// The samples of one track in one fragment.
public struct TrackFragment: Sendable {
    public var trackID: UInt32
    /// The decode time of the first sample, in the track's timescale.
    public var baseMediaDecodeTime: UInt64
    public var samples: [Sample]

    public init(trackID: UInt32, baseMediaDecodeTime: UInt64, samples: [Sample]) {
        self.trackID = trackID
        self.baseMediaDecodeTime = baseMediaDecodeTime
        self.samples = samples
    }
}

/// `mfhd` (8.8.5): the fragment's sequence number.
public struct MovieFragmentHeaderBox: MP4Box {
    public var type: FourCC { .mfhd }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader() }
    public var sequenceNumber: UInt32
    public init(sequenceNumber: UInt32) { self.sequenceNumber = sequenceNumber }
    public func writeBody(to writer: inout BoxWriter) { writer.append(sequenceNumber) }
}

/// `tfhd` (8.8.7) with `default-base-is-moof` (0x020000) and no other field: data offsets count from the `moof`.
public struct TrackFragmentHeaderBox: MP4Box {
    public var type: FourCC { .tfhd }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader(flags: 0x02_0000) }
    public var trackID: UInt32
    public init(trackID: UInt32) { self.trackID = trackID }
    public func writeBody(to writer: inout BoxWriter) { writer.append(trackID) }
}

/// `tfdt` (8.8.12), version 1: the 64-bit base media decode time.
public struct TrackFragmentDecodeTimeBox: MP4Box {
    public var type: FourCC { .tfdt }
    public var fullBoxHeader: FullBoxHeader? { FullBoxHeader(version: 1) }
    public var baseMediaDecodeTime: UInt64
    public init(baseMediaDecodeTime: UInt64) { self.baseMediaDecodeTime = baseMediaDecodeTime }
    public func writeBody(to writer: inout BoxWriter) { writer.append(baseMediaDecodeTime) }
}

/// `trun` (8.8.8): the data offset and each sample's duration, size and flags; signed composition time offsets
/// (version 1) when any sample has one.
public struct TrackRunBox: MP4Box {
    public var type: FourCC { .trun }
    public var dataOffset: Int32
    public var samples: [Sample]

    public init(dataOffset: Int32, samples: [Sample]) {
        self.dataOffset = dataOffset
        self.samples = samples
    }

    var hasCompositionOffsets: Bool { samples.contains { $0.compositionTimeOffset != 0 } }

    /// data-offset, sample-duration, sample-size, sample-flags, and sample-composition-time-offsets when needed.
    public var fullBoxHeader: FullBoxHeader? {
        hasCompositionOffsets ? FullBoxHeader(version: 1, flags: 0x000F01) : FullBoxHeader(flags: 0x000701)
    }

    public func writeBody(to writer: inout BoxWriter) {
        let offsets = hasCompositionOffsets
        writer.append(UInt32(truncatingIfNeeded: samples.count))
        writer.append(dataOffset)
        for sample in samples {
            writer.append(sample.duration)
            writer.append(UInt32(truncatingIfNeeded: sample.data.count))
            writer.append(sample.flags)
            if offsets { writer.append(sample.compositionTimeOffset) }
        }
    }
}

/// A media segment: an optional `styp`, one `moof` (`mfhd`, then per track `traf` with `tfhd`, `tfdt`, `trun`) and
/// one `mdat` with every track's samples in order, each `trun`'s data offset pointing at its track's first sample.
public struct MediaSegment: Sendable {
    public var sequenceNumber: UInt32
    public var tracks: [TrackFragment]
    /// The `styp` to start with, if any.
    public var segmentType: FileTypeBox?

    public init(sequenceNumber: UInt32, tracks: [TrackFragment], segmentType: FileTypeBox? = nil) {
        self.sequenceNumber = sequenceNumber
        self.tracks = tracks
        self.segmentType = segmentType
    }

    /// The `styp` Apple's HLS authoring examples use: `msdh`, compatible with `msdh` and `msix`.
    public static let defaultSegmentType = FileTypeBox(
        majorBrand: "msdh", compatibleBrands: ["msdh", "msix"], segment: true)

    func moof(dataOffsets: [Int32]) -> ContainerBox {
        var children: [any MP4Box] = [MovieFragmentHeaderBox(sequenceNumber: sequenceNumber)]
        for (track, offset) in zip(tracks, dataOffsets) {
            children.append(
                ContainerBox(
                    .traf,
                    [
                        TrackFragmentHeaderBox(trackID: track.trackID),
                        TrackFragmentDecodeTimeBox(baseMediaDecodeTime: track.baseMediaDecodeTime),
                        TrackRunBox(dataOffset: offset, samples: track.samples),
                    ]))
        }
        return ContainerBox(.moof, children)
    }

    /// The bytes of the segment. Throws ``FragmentedMP4Error/Code/invalidValue`` when a data offset would not fit
    /// the 32-bit signed field (more than 2 GiB of samples before a track's first one).
    public func serialized() throws(FragmentedMP4Error) -> [UInt8] {
        let payload = tracks.reduce(0) { total, track in total + track.samples.reduce(0) { $0 + $1.data.count } }
        let mdatHeader = try MediaDataHeader.bytes(payloadLength: UInt64(payload))
        // The moof's size does not depend on the offsets' values: measure it, then write it with them.
        let moofSize = moof(dataOffsets: tracks.map { _ in 0 }).serialized().count
        var offsets: [Int32] = []
        var next = moofSize + mdatHeader.count
        for track in tracks {
            guard let offset = Int32(exactly: next) else {
                throw FragmentedMP4Error(.invalidValue, path: [.moof, .traf, .trun], "data offset \(next)")
            }
            offsets.append(offset)
            next += track.samples.reduce(0) { $0 + $1.data.count }
        }
        var writer = BoxWriter()
        writer.reserveCapacity(64 + moofSize + mdatHeader.count + payload)
        if let segmentType { writer.write(segmentType) }
        writer.write(moof(dataOffsets: offsets))
        writer.append(mdatHeader)
        for track in tracks {
            for sample in track.samples { writer.append(sample.data) }
        }
        return writer.bytes
    }
}
