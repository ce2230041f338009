import FragmentedMP4
public import HLSAdFilter

/// Makes the slate that stands in for one live ad segment.
public protocol ProxySlateSource: Sendable {
    /// The slate's bytes for `slot`; `anchor` holds the last content segment before it, when it could be fetched.
    func slate(for slot: SlateSlot, anchor: [UInt8]?) async -> [UInt8]?
    /// An fMP4 slate (fragments for the init section ``fragmentedSlateInit(contentInit:)``); `anchor` and
    /// `anchorInit` hold the last content segment before it and that segment's init section, when they could be
    /// fetched.
    func fragmentedSlate(for slot: SlateSlot, anchor: [UInt8]?, anchorInit: [UInt8]?) async -> [UInt8]?
    /// The init section the fMP4 slates of a playlist play with (served at `slate/<playlist>/init.mp4`);
    /// `contentInit` is the content's init section, when it could be fetched.
    func fragmentedSlateInit(contentInit: [UInt8]?) -> [UInt8]?
}

extension ProxySlateSource {
    /// The shipped template's slate, its first decode time where the content timeline is (the anchor's video
    /// decode time plus the slot's offset; the offset alone when the anchor cannot be read).
    public func fragmentedSlate(for slot: SlateSlot, anchor: [UInt8]?, anchorInit: [UInt8]?) async -> [UInt8]? {
        guard let template = FragmentedSlateTemplate.shipped else { return nil }
        var start = slot.offsetFromAnchor
        if let anchor, let anchorInit,
            let content = FragmentedSlateTemplate.contentStart(segment: anchor, initSection: anchorInit)
        {
            start += content
        }
        // The template's bounds, for audio-only slates too: a slot's duration and offset are EXTINF values, which may
        // say anything (10^40 s, infinity).
        guard slot.duration > 0, slot.duration < 600, start >= 0, start < 1e9 else { return nil }
        let track = anchorInit.flatMap { FragmentedSlateTemplate.videoTrack(initSection: $0) }
        // Audio-only content (an init section without video): the slate is its silence alone.
        let audioOnly = anchorInit != nil && track == nil
        guard var slate = audioOnly ? [] : template.slate(duration: slot.duration, start: start, track: track) else {
            return nil
        }
        // Silence on the content's audio track, continuing its frame grid from where the anchor's audio ended: the
        // frames that start within the slot (a slot less than a frame after that end is the first and starts
        // there), as for TS slates.
        if let anchor, let anchorInit, let audio = FragmentedSlateTemplate.audioTrack(initSection: anchorInit),
            let end = FragmentedSlateTemplate.audioEnd(segment: anchor, track: audio)
        {
            let scale = Double(audio.timescale)
            // The slot's start against where the anchor's audio ends, both as presented (decode times moved by
            // each track's edit list: ffmpeg delays the video by the AAC priming).
            // Audio-only content's start is its audio's decode time, as the end is: no shift between them.
            let audioShift = FragmentedSlateTemplate.presentationShift(initSection: anchorInit, trackID: audio.id)
            let videoShift =
                audioOnly
                ? audioShift
                : track.map {
                    FragmentedSlateTemplate.presentationShift(initSection: anchorInit, trackID: $0.id)
                } ?? 0
            // An edit list or a decode time may say anything too: with a shift that puts the slot's start 2^53 ticks
            // or more from 0, or an anchor ending at 2^62 or later, the slate gets no silence.
            let position = ((start + videoShift - audioShift) * scale).rounded()
            let frame = Int64(audio.frameDuration)
            let startingBefore = { (ticks: Int64) in ticks <= 0 ? 0 : (ticks + frame - 1) / frame }
            var frames = 0
            var first: Int64 = 0
            if abs(position) < 0x1p53, let at = Int64(exactly: position), end < 1 << 62 {
                let fromEnd = at - Int64(end)
                first = fromEnd < frame ? 0 : startingBefore(fromEnd)
                let last = max(first, startingBefore(fromEnd + Int64((slot.duration * scale).rounded())))
                frames = Int(last - first)
            }
            // After the video fragments' sequence numbers (one per frame); 1 when there are none.
            let videoFragments =
                audioOnly ? 0 : Int(min(1e6, max(1, (slot.duration / template.frameSeconds).rounded())))
            let sequence = UInt32(audioOnly ? 1 : videoFragments + 2)
            slate += FragmentedSlateTemplate.silentAudioFragment(
                audio: audio, firstDecodeTime: end &+ UInt64(first) &* UInt64(frame), frames: frames, sequence: sequence
            )
        }
        return slate.isEmpty ? nil : slate
    }

    /// The shipped template's init section, made for the content's video track (ID and timescale), with the
    /// content's audio track when slates can carry silence on it; for audio-only content the audio track alone (nil
    /// when slates cannot carry silence on it).
    public func fragmentedSlateInit(contentInit: [UInt8]?) -> [UInt8]? {
        let track = contentInit.flatMap { FragmentedSlateTemplate.videoTrack(initSection: $0) }
        let audio = contentInit.flatMap { FragmentedSlateTemplate.audioTrack(initSection: $0) }
        let audioOnly = contentInit != nil && track == nil
        if audioOnly && audio == nil { return nil }
        return FragmentedSlateTemplate.shipped?.initSection(for: track, audio: audio, video: !audioOnly)
    }
}
