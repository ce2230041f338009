// Hand-made media playlists for tests that feed a parser, a proxy or a downloader: the one builder of the
// "#EXTM3U, version, target duration, media sequence, segments" text that the tests used to write out each time.

/// The text of a media playlist, written line by line exactly as given (durations are written as given too, so a
/// test chooses "4.0" or "4.000").
public struct MediaPlaylistText: Sendable {
    /// One segment: the tag lines before it (each ending in a line feed), its EXTINF duration and its URI.
    public struct Segment: Sendable {
        public var tags: String
        public var duration: String
        public var uri: String

        public init(tags: String = "", duration: String, uri: String) {
            self.tags = tags
            self.duration = duration
            self.uri = uri
        }
    }

    /// EXT-X-VERSION, or nil for none.
    public var version: Int?
    public var targetDuration: Int
    /// EXT-X-MEDIA-SEQUENCE, or nil for none.
    public var mediaSequence: Int?
    /// Lines after those (each ending in a line feed), e.g. "#EXT-X-PLAYLIST-TYPE:VOD\n".
    public var header: String
    public var segments: [Segment]
    /// Whether EXT-X-ENDLIST closes it.
    public var ended: Bool

    public init(
        version: Int? = 3, targetDuration: Int, mediaSequence: Int? = nil, header: String = "",
        segments: [Segment] = [], ended: Bool = false
    ) {
        self.version = version
        self.targetDuration = targetDuration
        self.mediaSequence = mediaSequence
        self.header = header
        self.segments = segments
        self.ended = ended
    }

    /// A live window: the segments with media sequence numbers `first..<first + count`, EXT-X-MEDIA-SEQUENCE
    /// `first`; `uri` and `tags` (the lines before a segment) are asked per media sequence number.
    public static func window(
        first: Int, count: Int, version: Int? = 3, targetDuration: Int, duration: String,
        uri: (Int) -> String, tags: (Int) -> String = { _ in "" }
    ) -> MediaPlaylistText {
        MediaPlaylistText(
            version: version, targetDuration: targetDuration, mediaSequence: first,
            segments: (first..<(first + count)).map { Segment(tags: tags($0), duration: duration, uri: uri($0)) })
    }

    public var text: String {
        var text = "#EXTM3U\n"
        if let version { text += "#EXT-X-VERSION:\(version)\n" }
        text += "#EXT-X-TARGETDURATION:\(targetDuration)\n"
        if let mediaSequence { text += "#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)\n" }
        text += header
        for segment in segments { text += segment.tags + "#EXTINF:\(segment.duration),\n\(segment.uri)\n" }
        return ended ? text + "#EXT-X-ENDLIST\n" : text
    }

    public var bytes: [UInt8] { Array(text.utf8) }
}
