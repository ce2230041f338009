/// Encryption parameters for generated playlists (EXT-X-KEY, RFC 8216bis §4.4.4.4).
public struct KeySpec: Sendable, Hashable {
    public var method: String
    public var uri: String?
    public var iv: [UInt8]?
    public var keyFormat: String?
    public var keyFormatVersions: String?

    public init(
        method: String, uri: String? = nil, iv: [UInt8]? = nil, keyFormat: String? = nil,
        keyFormatVersions: String? = nil
    ) {
        self.method = method
        self.uri = uri
        self.iv = iv
        self.keyFormat = keyFormat
        self.keyFormatVersions = keyFormatVersions
    }

    var attributes: AttributeList {
        var a: AttributeList = [Attribute(name: "METHOD", rawValue: method)]
        if let uri { a.setQuoted("URI", uri) }
        if let iv {
            let hex: [Character] = Array("0123456789ABCDEF")
            var text = "0x"
            for b in iv {
                text.append(hex[Int(b >> 4)])
                text.append(hex[Int(b & 15)])
            }
            a.set("IV", rawValue: text)
        }
        if let keyFormat { a.setQuoted("KEYFORMAT", keyFormat) }
        if let keyFormatVersions { a.setQuoted("KEYFORMATVERSIONS", keyFormatVersions) }
        return a
    }
}

/// Builds media playlists in canonical form: VOD, EVENT, a live sliding window, or an I-frame playlist.
/// EXT-X-TARGETDURATION is the largest EXTINF rounded to the nearest integer (RFC 8216bis §4.4.3.1) and
/// EXT-X-VERSION the lowest version that covers the features used (§8).
public struct MediaPlaylistBuilder: Sendable {
    public enum Kind: Sendable, Hashable {
        /// EXT-X-PLAYLIST-TYPE:VOD and EXT-X-ENDLIST.
        case vod
        /// EXT-X-PLAYLIST-TYPE:EVENT; ENDLIST once `ended`.
        case event(ended: Bool)
        /// No playlist type; only the last `window` segments are listed and the media and discontinuity
        /// sequence numbers count the ones dropped.
        case live(window: Int)
    }

    public struct Segment: Sendable, Hashable {
        public var uri: String
        public var duration: Double
        public var title: String
        public var byteRange: ByteRange?
        public var discontinuity: Bool
        public var key: KeySpec?
        public var mapURI: String?
        public var mapByteRange: ByteRange?
        public var programDateTime: DateTime?
        public var gap: Bool
        /// Written as EXT-X-BITRATE before the segment, unless it has a ``byteRange`` (to which the tag does not
        /// apply).
        public var bitrate: UInt64?

        public init(
            uri: String, duration: Double, title: String = "", byteRange: ByteRange? = nil,
            discontinuity: Bool = false, key: KeySpec? = nil, mapURI: String? = nil, mapByteRange: ByteRange? = nil,
            programDateTime: DateTime? = nil, gap: Bool = false, bitrate: UInt64? = nil
        ) {
            self.uri = uri
            self.duration = duration
            self.title = title
            self.byteRange = byteRange
            self.discontinuity = discontinuity
            self.key = key
            self.mapURI = mapURI
            self.mapByteRange = mapByteRange
            self.programDateTime = programDateTime
            self.gap = gap
            self.bitrate = bitrate
        }
    }

    public var kind: Kind
    public var iFramesOnly: Bool = false
    public var independentSegments: Bool = false
    public var segments: [Segment] = []
    /// Media sequence number of the first segment in ``segments`` (before any window is applied).
    public var mediaSequence: UInt64 = 0
    public var discontinuitySequence: UInt64 = 0
    /// Fraction digits written for EXTINF durations.
    public var durationDecimals: Int = 3
    /// Write the implicit form (`length` without `@offset`) when a range continues the previous one.
    public var implicitByteRangeOffsets: Bool = false

    public init(kind: Kind, segments: [Segment] = []) {
        self.kind = kind
        self.segments = segments
    }

    public mutating func append(_ segment: Segment) { segments.append(segment) }

    /// The listed segments and the sequence numbers of the first one.
    private var window: (ArraySlice<Segment>, UInt64, UInt64) {
        guard case .live(let size) = kind, size >= 0, segments.count > size else {
            return (segments[...], mediaSequence, discontinuitySequence)
        }
        let dropped = segments.count - size
        let droppedDiscontinuities = segments[..<dropped].reduce(0) { $0 + ($1.discontinuity ? 1 : 0) }
        return (
            segments[dropped...], mediaSequence &+ UInt64(dropped),
            discontinuitySequence &+ UInt64(droppedDiscontinuities)
        )
    }

    /// The largest EXTINF as written, rounded to the nearest integer (at least 1).
    public var targetDuration: UInt64 {
        var target: UInt64 = 1
        for s in window.0 {
            let written = Numbers.decimalFloat(
                Numbers.format(s.duration, decimals: durationDecimals).utf8, signed: false)
            let rounded = (written ?? s.duration).rounded(.toNearestOrAwayFromZero)
            if rounded.isFinite, rounded > Double(target), rounded < 1e18 { target = UInt64(rounded) }
        }
        return target
    }

    /// The lowest protocol version covering the features used (RFC 8216bis §8).
    public var version: UInt64 {
        var v: UInt64 = durationDecimals > 0 ? 3 : 1
        let listed = window.0
        for s in listed {
            if let key = s.key {
                if key.iv != nil { v = max(v, 2) }
                if key.keyFormat != nil || key.keyFormatVersions != nil || key.method == "SAMPLE-AES" {
                    v = max(v, 5)
                }
            }
            if s.byteRange != nil || s.mapByteRange != nil { v = max(v, 4) }
            if s.mapURI != nil { v = max(v, iFramesOnly ? 5 : 6) }
        }
        if iFramesOnly { v = max(v, 4) }
        return v
    }

    /// The playlist, every line canonical.
    public func build() -> Playlist {
        var lines: [PlaylistLine] = []
        func add(_ tag: Tag) { lines.append(PlaylistLine(tag: tag)) }
        let (listed, sequence, discontinuitySequence) = window
        add(Tag(.extm3u))
        add(Tag(.version, .decimalInteger(version)))
        add(Tag(.targetDuration, .decimalInteger(targetDuration)))
        switch kind {
        case .vod: add(Tag(.playlistType, .enumeratedString("VOD")))
        case .event: add(Tag(.playlistType, .enumeratedString("EVENT")))
        case .live: break
        }
        if sequence != 0 || !isVOD { add(Tag(.mediaSequence, .decimalInteger(sequence))) }
        if discontinuitySequence != 0 { add(Tag(.discontinuitySequence, .decimalInteger(discontinuitySequence))) }
        if iFramesOnly { add(Tag(.iFramesOnly)) }
        if independentSegments { add(Tag(.independentSegments)) }
        var currentKey: KeySpec?
        var currentMap: (String, ByteRange?)?
        var previousRange: (String, UInt64)?
        for s in listed {
            if s.discontinuity { add(Tag(.discontinuity)) }
            if s.key != currentKey {
                if let key = s.key {
                    add(.attributes(.key, key.attributes))
                } else {
                    add(.attributes(.key, [Attribute(name: "METHOD", rawValue: "NONE")]))
                }
                currentKey = s.key
            }
            if let mapURI = s.mapURI, currentMap.map({ $0.0 != mapURI || $0.1 != s.mapByteRange }) ?? true {
                var a: AttributeList = []
                a.setQuoted("URI", mapURI)
                if let r = s.mapByteRange { a.setQuoted("BYTERANGE", "\(r.length)@\(r.offset)") }
                add(.attributes(.map, a))
                currentMap = (mapURI, s.mapByteRange)
            }
            if let date = s.programDateTime { add(Tag(.programDateTime, .dateTime(date))) }
            // EXT-X-BITRATE does not apply to a segment with EXT-X-BYTERANGE (RFC 8216bis 4.4.4.8).
            if let bitrate = s.bitrate, s.byteRange == nil { add(Tag(.bitrate, .decimalInteger(bitrate))) }
            if s.gap { add(Tag(.gap)) }
            add(Tag(.extinf, .extinf(ExtInf(duration: s.duration, title: s.title, decimals: durationDecimals))))
            if let r = s.byteRange {
                let continues = previousRange.map { $0.0 == s.uri && $0.1 == r.offset } ?? false
                let spec = ByteRangeSpec(
                    length: r.length, offset: implicitByteRangeOffsets && continues ? nil : r.offset)
                add(Tag(.byteRange, .byteRange(spec)))
                previousRange = (s.uri, r.end)
            } else {
                previousRange = nil
            }
            lines.append(PlaylistLine(uri: s.uri))
        }
        switch kind {
        case .vod, .event(ended: true): add(Tag(.endList))
        default: break
        }
        return Playlist(lines: lines)
    }

    private var isVOD: Bool {
        if case .vod = kind { return true }
        return false
    }
}

/// Builds multivariant playlists in canonical form.
public struct MultivariantPlaylistBuilder: Sendable {
    public struct Variant: Sendable, Hashable {
        public var uri: String
        public var bandwidth: UInt64
        public var averageBandwidth: UInt64?
        public var codecs: String?
        public var resolution: Resolution?
        public var frameRate: Double?
        public var audio: String?
        public var subtitles: String?
        public var closedCaptions: String?
        /// Further attributes written after the ones above.
        public var extra: [Attribute]

        public init(
            uri: String, bandwidth: UInt64, averageBandwidth: UInt64? = nil, codecs: String? = nil,
            resolution: Resolution? = nil, frameRate: Double? = nil, audio: String? = nil, subtitles: String? = nil,
            closedCaptions: String? = nil, extra: [Attribute] = []
        ) {
            self.uri = uri
            self.bandwidth = bandwidth
            self.averageBandwidth = averageBandwidth
            self.codecs = codecs
            self.resolution = resolution
            self.frameRate = frameRate
            self.audio = audio
            self.subtitles = subtitles
            self.closedCaptions = closedCaptions
            self.extra = extra
        }

        var attributes: AttributeList {
            var a: AttributeList = [Attribute(name: "BANDWIDTH", rawValue: String(bandwidth))]
            if let averageBandwidth { a.set("AVERAGE-BANDWIDTH", rawValue: String(averageBandwidth)) }
            if let codecs { a.setQuoted("CODECS", codecs) }
            if let resolution { a.set("RESOLUTION", rawValue: resolution.description) }
            if let frameRate { a.set("FRAME-RATE", rawValue: Numbers.format(frameRate, decimals: 3)) }
            if let audio { a.setQuoted("AUDIO", audio) }
            if let subtitles { a.setQuoted("SUBTITLES", subtitles) }
            if let closedCaptions {
                if closedCaptions == "NONE" {
                    a.set("CLOSED-CAPTIONS", rawValue: "NONE")
                } else {
                    a.setQuoted("CLOSED-CAPTIONS", closedCaptions)
                }
            }
            a = AttributeList(a.attributes + extra)
            return a
        }
    }

    public struct Rendition: Sendable, Hashable {
        public var type: String
        public var groupID: String
        public var name: String
        public var uri: String?
        public var language: String?
        public var isDefault: Bool
        public var autoselect: Bool
        public var extra: [Attribute]

        public init(
            type: String, groupID: String, name: String, uri: String? = nil, language: String? = nil,
            isDefault: Bool = false, autoselect: Bool = false, extra: [Attribute] = []
        ) {
            self.type = type
            self.groupID = groupID
            self.name = name
            self.uri = uri
            self.language = language
            self.isDefault = isDefault
            self.autoselect = autoselect || isDefault
            self.extra = extra
        }
    }

    public var variants: [Variant] = []
    /// I-frame variants; their URI goes in the URI attribute.
    public var iFrameVariants: [Variant] = []
    public var renditions: [Rendition] = []
    public var independentSegments: Bool = false

    public init() {}

    /// The lowest protocol version covering the features used (RFC 8216bis §8).
    public var version: UInt64 {
        var v: UInt64 = 1
        for r in renditions {
            if let id = r.extra.first(where: { $0.name == "INSTREAM-ID" })?.quotedString, id.hasPrefix("SERVICE") {
                v = max(v, 7)
            }
        }
        for variant in variants + iFrameVariants where variant.extra.contains(where: { $0.name.hasPrefix("REQ-") }) {
            v = max(v, 12)
        }
        return v
    }

    public func build() -> Playlist {
        var lines: [PlaylistLine] = [PlaylistLine(tag: Tag(.extm3u))]
        let v = version
        if v > 1 { lines.append(PlaylistLine(tag: Tag(.version, .decimalInteger(v)))) }
        if independentSegments { lines.append(PlaylistLine(tag: Tag(.independentSegments))) }
        for r in renditions {
            var a: AttributeList = [Attribute(name: "TYPE", rawValue: r.type)]
            a.setQuoted("GROUP-ID", r.groupID)
            a.setQuoted("NAME", r.name)
            if let language = r.language { a.setQuoted("LANGUAGE", language) }
            a.set("DEFAULT", rawValue: r.isDefault ? "YES" : "NO")
            a.set("AUTOSELECT", rawValue: r.autoselect ? "YES" : "NO")
            a = AttributeList(a.attributes + r.extra)
            if let uri = r.uri { a.setQuoted("URI", uri) }
            lines.append(PlaylistLine(tag: .attributes(.media, a)))
        }
        for variant in variants {
            lines.append(PlaylistLine(tag: .attributes(.streamInf, variant.attributes)))
            lines.append(PlaylistLine(uri: variant.uri))
        }
        for variant in iFrameVariants {
            var a = variant.attributes
            a.setQuoted("URI", variant.uri)
            lines.append(PlaylistLine(tag: .attributes(.iFrameStreamInf, a)))
        }
        return Playlist(lines: lines)
    }
}
