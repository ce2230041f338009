/// Whether a playlist is a media playlist or a multivariant playlist.
public enum PlaylistKind: String, Sendable, Hashable {
    case media
    case multivariant
    /// Neither media nor multivariant tags (for example an empty playlist).
    case unknown
}

/// A parsed playlist as a list of lines: the lossless model that every other view is computed from.
public struct Playlist: Sendable, Hashable {
    /// The lines in order. Edit freely; ``write()`` renders them back.
    public var lines: [PlaylistLine]
    /// Whether the source began with a UTF-8 byte order mark (written back by ``write()``).
    public var hasByteOrderMark: Bool
    /// Problems found by a tolerant parse (empty after a strict parse).
    public var diagnostics: [ParseDiagnostic]

    public init(lines: [PlaylistLine] = [], hasByteOrderMark: Bool = false, diagnostics: [ParseDiagnostic] = []) {
        self.lines = lines
        self.hasByteOrderMark = hasByteOrderMark
        self.diagnostics = diagnostics
    }

    /// Parses a playlist (tolerant unless `strict`). See ``PlaylistParser``.
    public init(bytes: [UInt8], strict: Bool = false, limits: PlaylistLimits = .default) throws(PlaylistError) {
        self = try PlaylistParser(strict: strict, limits: limits).parse(bytes)
    }
    public init(_ text: String, strict: Bool = false, limits: PlaylistLimits = .default) throws(PlaylistError) {
        self = try PlaylistParser(strict: strict, limits: limits).parse(Array(text.utf8))
    }

    /// The kind, judged from the tags present (multivariant tags win over segment tags).
    /// A URI line that no EXT-X-STREAM-INF precedes settles the question (a media segment), so the scan usually
    /// stops at the first segment.
    public var kind: PlaylistKind {
        var media = false
        var variantPending = false
        for index in lines.indices {
            if lines[index].storedIsURI {
                if variantPending { return .multivariant }
                return .media
            }
            guard let known = lines[index].storedKnownTag else { continue }
            switch known.scope {
            case .multivariant:
                if known == .streamInf { variantPending = true }
                if !media { return .multivariant }
            case .mediaPlaylist, .mediaSegment, .mediaMetadata: media = true
            default: break
            }
        }
        return media ? .media : .unknown
    }

    /// The tag lines of one known tag, with their line indices.
    public func tags(_ known: KnownTag) -> [(index: Int, tag: Tag)] {
        var out: [(index: Int, tag: Tag)] = []
        for (i, line) in lines.enumerated() where line.storedKnownTag == known {
            if case .tag(let t) = line.content { out.append((i, t)) }
        }
        return out
    }

    /// The first tag of one known tag.
    public func firstTag(_ known: KnownTag) -> Tag? {
        for line in lines where line.storedKnownTag == known {
            if case .tag(let t) = line.content { return t }
        }
        return nil
    }

    /// The bytes of the playlist: every line's bytes and line ending, in order, after the BOM if there was one.
    /// For an unmodified parsed playlist these are exactly the parsed bytes.
    public func write() -> [UInt8] {
        var count = hasByteOrderMark ? 3 : 0
        for line in lines { count += line.bytes.count + 2 }
        var out: [UInt8] = []
        out.reserveCapacity(count)
        if hasByteOrderMark { out.append(contentsOf: [0xEF, 0xBB, 0xBF]) }
        for line in lines {
            out.append(contentsOf: line.bytes)
            switch line.ending {
            case .lf: out.append(asciiLF)
            case .crlf:
                out.append(asciiCR)
                out.append(asciiLF)
            case .none: break
            }
        }
        return out
    }

    /// The playlist as text (see ``write()``).
    public var text: String { String(decoding: write(), as: UTF8.self) }

    /// The canonical form: no BOM, LF line endings, no blank lines, tags re-rendered from their typed values
    /// (attribute lists without stray whitespace), URIs trimmed, comments kept, a final line break.
    public func writeCanonical() -> [UInt8] {
        var out: [UInt8] = []
        for line in lines {
            let start = out.count
            switch line.content {
            case .blank: continue
            case .comment: out.append(contentsOf: line.bytes)
            case .tag(let t): out.append(contentsOf: t.rendered.utf8)
            case .uri:
                let uri = line.uri ?? ""
                if uri.hasPrefix("#") {
                    // Without its leading blanks this URI would read back as a tag or a comment.
                    out.append(contentsOf: line.bytes)
                } else {
                    out.append(contentsOf: uri.utf8)
                }
            }
            // Trailing blanks go; a carriage return before the line feed would read back as part of a CRLF ending.
            while out.count > start, let last = out.last, last == asciiCR || ASCII.isWhitespace(last) {
                out.removeLast()
            }
            if out.count == start {
                continue
            }
            out.append(asciiLF)
        }
        return out
    }
}
