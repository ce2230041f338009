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
        let track = anchorInit.flatMap { FragmentedSlateTemplate.videoTrack(initSection: $0) }
        return template.slate(duration: slot.duration, start: start, track: track)
    }

    /// The shipped template's init section, made for the content's video track (ID and timescale).
    public func fragmentedSlateInit(contentInit: [UInt8]?) -> [UInt8]? {
        let track = contentInit.flatMap { FragmentedSlateTemplate.videoTrack(initSection: $0) }
        return FragmentedSlateTemplate.shipped?.initSection(for: track)
    }
}
