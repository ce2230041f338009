// The bridge from MPEG-TS to fragmented MP4 (the TS*.swift files are the only ones in this package that import MPEGTS):
// AAC in LATM/LOAS becomes AAC in fMP4, one raw access unit a sample, the AudioSpecificConfig from the stream's
// StreamMuxConfig (MPEGTS's `LOASReader` reads them).
import MPEGTS

extension TSTrackBuilder {
    /// Adds the LOAS frames of one PES: each frame's access unit is a sample of `samplesPerFrame` samples; a frame
    /// cut by the end of the PES is completed from the next one and keeps its PES's time. Bytes where no LOAS sync
    /// word starts are skipped and counted in ``droppedBytes``, as are frames that do not read (the first one's
    /// error is ``frameError``). As for the other audio formats, a frame of another configuration than the sample
    /// entry's is left out.
    mutating func appendLATM(_ packet: PESPacket) {
        let bytes = carry.isEmpty ? packet.payload : carry + packet.payload
        let carried = carry.count
        carry = []
        var position = 0
        var samplesBefore = 0
        while position < bytes.count {
            guard let length = LOASReader.frameLength(bytes, at: position) else {
                if LOASReader.mayStartFrame(bytes, at: position) { break }
                position += 1
                droppedBytes += 1
                continue
            }
            guard position + length <= bytes.count else { break }
            let fromCarry = position < carried
            let pts = fromCarry ? carryPTS : packet.info.pts
            let before = fromCarry ? carrySamplesBefore : samplesBefore
            let unit: [UInt8]
            do {
                unit = try loas.accessUnit(bytes, at: position)
            } catch {
                if frameError == nil {
                    var located = error
                    located.offset = packet.info.offset
                    located.pid = pid
                    frameError = located
                }
                // A frame lost in a stream already configured still took its time.
                if let lost = loas.configuration?.samplesPerFrame, codec != nil {
                    gapSamples += lost
                    if fromCarry { carrySamplesBefore += lost } else { samplesBefore += lost }
                }
                droppedBytes += length
                position += length
                continue
            }
            guard let configuration = loas.configuration else { break }
            let frameCodec = TrackCodec.aac(AudioSpecificConfig(latm: configuration))
            let samples = configuration.samplesPerFrame
            checkConfiguration(frameCodec, at: packet.info.offset)
            if droppingFrame {
                otherConfigurationFrames += 1
                gapSamples += samples
            } else {
                appendFrame(AudioFrame(data: unit, samples: samples, pts: pts, samplesBefore: before))
            }
            if fromCarry { carrySamplesBefore += samples } else { samplesBefore += samples }
            position += length
        }
        carryRest(
            bytes, from: position, carried: carried, pts: packet.info.pts, samplesBefore: samplesBefore,
            limit: LOASReader.maximumFrameLength)
    }
}
