/// The door check of every reader of playlists: whether bytes start like an HLS playlist, decided from their first
/// bytes alone, so a binary file, a `.ts` segment or an HTML page is refused with one clear message instead of being
/// parsed as thousands of bad lines.
///
/// A playlist starts with `#EXTM3U` (RFC 8216bis section 4.4.1.1), after an optional UTF-8 byte order mark.
public enum PlaylistStart: Hashable, Sendable {
    /// The bytes start with `#EXTM3U`.
    case playlist
    /// Too few bytes to tell yet (only when the caller said more may come).
    case undecided
    /// Not an HLS playlist; ``message`` says how it starts.
    case notAPlaylist(start: [UInt8])

    /// How many of the first bytes the message shows.
    public static let shownBytes = 16

    /// Classifies `bytes`, the start of an input; `complete` says that no more bytes will come.
    public static func check(_ bytes: some Collection<UInt8>, complete: Bool) -> PlaylistStart {
        let tag = Array("#EXTM3U".utf8)
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        var body = bytes[...]
        if body.starts(with: bom) {
            body = body.dropFirst(3)
        } else if !complete, bom.starts(with: body) {
            return .undecided
        }
        if body.starts(with: tag) { return .playlist }
        if !complete, tag.starts(with: body) { return .undecided }
        return .notAPlaylist(start: Array(bytes.prefix(shownBytes)))
    }

    /// `not an HLS playlist (starts with "G@\x11\x10...")` for ``notAPlaylist(start:)``; nil otherwise.
    public var message: String? {
        guard case .notAPlaylist(let start) = self else { return nil }
        return "not an HLS playlist (starts with \(Self.quoted(start)))"
    }

    /// Bytes as a quoted ASCII string, anything not printable escaped (`\xNN`), so that binary never reaches a
    /// terminal.
    public static func quoted(_ bytes: some Collection<UInt8>) -> String {
        var text = "\""
        for byte in bytes {
            switch byte {
            case 0x5C: text += "\\\\"
            case 0x22: text += "\\\""
            case 0x20...0x7E: text.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16)
                text += "\\x" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return text + "\""
    }
}
