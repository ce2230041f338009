import Foundation
public import HLSAdFilter
import MPEGTS

/// The default slate source: a freeze frame of the last content segment, placed on the content's own timeline.
///
/// The TS slate is MPEGTS's `SlateBuilder` continuing the anchor segment (the last content segment before the
/// break): its PAT and PMT (same PIDs and stream types), its first keyframe repeated at the content's frame interval
/// (every picture is an independent IDR, DTS = PTS), silent audio frames on its audio stream (ADTS AAC-LC mono to
/// 7.1, or AC-3; other audio is left out, and the proxy reports
/// ``AdStrippingProxy/Event/slatesWithoutAudio(playlist:reason:)``), PCR on the PCR PID, and continuity counters
/// that continue the anchor's. The
/// first PTS is the anchor's first PTS plus the slot's offset (the anchor's duration and any slates between), so the
/// player sees one continuous timeline across content, slates and content again. The silent audio continues the
/// anchor's audio frame grid from where its audio ended (each slot holds the frames that start within it), so the audio
/// has no hole at any join and does not drift over a long break.
public struct ProxySlateMaker: ProxySlateSource {
    public init() {}

    public func slate(for slot: SlateSlot, anchor: [UInt8]?) async -> [UInt8]? {
        guard let anchor, !slot.isFragmentedMP4 else { return nil }
        return ProxySlateMaker.make(duration: slot.duration, offset: slot.offsetFromAnchor, anchor: anchor)
    }

    /// Builds a slate of `duration` seconds starting `offset` seconds after the anchor segment's first PTS; nil for a
    /// duration outside 0...600 s, an offset outside 0...3600 s, or an anchor with no program and keyframe to continue.
    public static func make(duration: Double, offset: Double, anchor: [UInt8]) -> [UInt8]? {
        guard duration > 0, duration < 600, offset >= 0, offset < 3600,
            let builder = try? SlateBuilder(continuing: anchor)
        else { return nil }
        return builder.continuation(
            durationTicks: Int64((duration * 90_000).rounded()), offsetTicks: Int64((offset * 90_000).rounded()))
    }
}
