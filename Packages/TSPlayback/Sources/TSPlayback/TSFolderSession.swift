public import FileRange
import HLSPlaylist
public import LoopbackHTTP
import MPEGTS
import TextCodecs

/// Plays a folder of `.ts` files as one HLS presentation: each file (or each given byte range of a file) is a
/// segment. Files are discovered in natural name order (`seg2.ts` before `seg10.ts`) and probed at both ends for
/// their true duration; where one file's timestamps do not continue the previous file's, an `EXT-X-DISCONTINUITY`
/// tells the player. The files are served confined to the folder.
///
/// Routes, under the session's token: `master.m3u8`, `index.m3u8`, and the files by name. Everything is answered on
/// the server's event loop without work that can take long: both playlists are made once, when the folder is
/// opened (from the sizes and durations found then), and a file is sent as the server sends static files.
public final class TSFolderSession: PlaybackSource {
    /// A segment of the folder's playlist.
    public struct Segment: Hashable, Sendable {
        /// The file, relative to the folder.
        public var file: String
        /// The byte range of the file, when the segment is not the whole file.
        public var range: FileRange.ByteRange?
        /// The duration in seconds.
        public var duration: Double
        /// Whether the segment's timestamps do not continue the previous segment's.
        public var discontinuity: Bool
    }

    /// The folder.
    public let folder: String
    /// The token the folder's routes sit under.
    public let token: SessionToken
    /// The segments, in play order.
    public let segments: [Segment]
    private let files: StaticFileHandler
    /// `master.m3u8` and `index.m3u8`, made when the folder was opened.
    private let multivariantBytes: [UInt8]
    private let mediaBytes: [UInt8]

    /// Opens `folder`. With `segments`, each must name its `file` (relative to the folder) and is served as given;
    /// without, every `.ts` file in the folder becomes a segment, in natural name order.
    public init(folder: String, segments given: [SegmentInfo]? = nil) throws(PlaybackError) {
        self.folder = folder
        self.token = SessionToken.random()
        self.files = StaticFileHandler(root: folder)
        guard let names = FileSystem.entries(in: folder) else {
            throw PlaybackError(.cannotOpen, path: folder, detail: "not a readable folder")
        }
        var segments: [Segment] = []
        var byteCounts: [UInt64] = []  // each segment's bytes, for the multivariant playlist's bit rates
        if let given {
            guard !given.isEmpty else { throw PlaybackError(.emptySegments, path: folder, detail: "no segments given") }
            for (number, info) in given.enumerated() {
                guard let file = info.file, !file.isEmpty else {
                    throw PlaybackError(.missingFileField, path: folder, detail: "segment \(number) names no file")
                }
                guard !file.split(separator: "/").contains(".."), !file.hasPrefix("/") else {
                    throw PlaybackError(.invalidSegment, path: folder, detail: "segment \(number) leaves the folder")
                }
                let path = folder + "/" + file
                let size: UInt64
                do {
                    let streamer = try FileStreamer(path: path)
                    defer { streamer.close() }
                    size = try streamer.size()
                } catch {
                    throw PlaybackError(.cannotOpen, path: path, detail: "\(error)")
                }
                let planned = try SegmentInfo.validated([info], fileSize: size, path: path)
                guard let one = planned.first else { continue }
                let whole = one.offset == 0 && one.length == size
                segments.append(
                    Segment(
                        file: file, range: whole ? nil : FileRange.ByteRange(offset: one.offset, length: one.length),
                        duration: one.duration, discontinuity: false))
                byteCounts.append(one.length)
            }
        } else {
            let tsFiles = names.filter { $0.lowercased().hasSuffix(".ts") }.sorted(by: NaturalOrder.less)
            guard !tsFiles.isEmpty else { throw PlaybackError(.emptySegments, path: folder, detail: "no .ts files") }
            var previous: TSProbe?
            for file in tsFiles {
                let path = folder + "/" + file
                let probe: TSProbe
                do {
                    probe = try TSProbe.probe(path: path)
                } catch {
                    throw PlaybackError(.notTransportStream, path: path, detail: "\(error)")
                }
                guard let duration = probe.duration, duration > 0 else {
                    throw PlaybackError(.notTransportStream, path: path, detail: "no timestamps found")
                }
                var discontinuity = false
                if let previous {
                    // The one rule for a file and a folder (TimelineBreak): the main stream's time stamps go back or
                    // jump from where the previous file's ended; or the main stream is another PID (other tables).
                    if let before = previous.mainStream, let after = probe.mainStream {
                        discontinuity =
                            before.pid != after.pid || TimelineBreak.isBreak(before.endPTS.distance(to: after.firstPTS))
                    } else if let end = previous.firstPTS?.advanced(by: previous.durationTicks ?? 0),
                        let first = probe.firstPTS
                    {
                        discontinuity = TimelineBreak.isBreak(end.distance(to: first))
                    }
                }
                previous = probe
                segments.append(Segment(file: file, range: nil, duration: duration, discontinuity: discontinuity))
                byteCounts.append(probe.fileSize)
            }
        }
        self.segments = segments
        self.mediaBytes = Array(Self.mediaPlaylist(segments).utf8)
        self.multivariantBytes = Array(Self.multivariantPlaylist(segments, byteCounts: byteCounts).utf8)
    }

    public func prepare() {}

    /// The media playlist's text (VOD).
    public func mediaPlaylist() -> String { String(decoding: mediaBytes, as: UTF8.self) }

    /// The multivariant playlist's text.
    public func multivariantPlaylist() -> String { String(decoding: multivariantBytes, as: UTF8.self) }

    private static func mediaPlaylist(_ segments: [Segment]) -> String {
        var builder = MediaPlaylistBuilder(kind: .vod)
        builder.segments = segments.map { segment in
            MediaPlaylistBuilder.Segment(
                uri: URIPath.encode(segment.file), duration: segment.duration,
                byteRange: segment.range.map { HLSPlaylist.ByteRange(length: $0.length, offset: $0.offset) },
                discontinuity: segment.discontinuity)
        }
        return builder.build().text
    }

    private static func multivariantPlaylist(_ segments: [Segment], byteCounts: [UInt64]) -> String {
        var builder = MultivariantPlaylistBuilder()
        var peak: Double = 1
        var totalBits: Double = 0
        var totalDuration: Double = 0
        for (segment, byteCount) in zip(segments, byteCounts) where segment.duration > 0 {
            let bits = Double(byteCount * 8)
            peak = max(peak, bits / segment.duration)
            totalBits += bits
            totalDuration += segment.duration
        }
        let average: UInt64? = totalDuration > 0 ? UInt64((totalBits / totalDuration).rounded(.up)) : nil
        builder.variants = [
            MultivariantPlaylistBuilder.Variant(
                uri: "index.m3u8", bandwidth: UInt64(peak.rounded(.up)), averageBandwidth: average)
        ]
        return builder.build().text
    }

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        let route = request.wildcardSegments
        if route == ["master.m3u8"] {
            return .bytes(multivariantBytes, contentType: "application/vnd.apple.mpegurl")
        }
        if route == ["index.m3u8"] {
            return .bytes(mediaBytes, contentType: "application/vnd.apple.mpegurl")
        }
        return files.respond(to: request)
    }
}

/// Compares names the way people sort them: runs of digits by their value.
enum NaturalOrder {
    static func less(_ lhs: String, _ rhs: String) -> Bool {
        var left = Array(lhs.utf8)[...]
        var right = Array(rhs.utf8)[...]
        func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }
        // Equal numbers written with different leading zeros decide only when all else is equal.
        var tieBreak: Bool?
        while let a = left.first, let b = right.first {
            if isDigit(a), isDigit(b) {
                let leftDigits = left.prefix(while: isDigit)
                let rightDigits = right.prefix(while: isDigit)
                let leftValue = leftDigits.drop { $0 == 48 }
                let rightValue = rightDigits.drop { $0 == 48 }
                if leftValue.count != rightValue.count { return leftValue.count < rightValue.count }
                if !leftValue.elementsEqual(rightValue) { return leftValue.lexicographicallyPrecedes(rightValue) }
                if tieBreak == nil, leftDigits.count != rightDigits.count {
                    tieBreak = leftDigits.count < rightDigits.count
                }
                left = left.dropFirst(leftDigits.count)
                right = right.dropFirst(rightDigits.count)
            } else {
                if a != b { return a < b }
                left = left.dropFirst()
                right = right.dropFirst()
            }
        }
        if left.count != right.count { return left.count < right.count }
        return tieBreak ?? false
    }
}

/// Percent-encodes a relative file path for use as a URI in a playlist: every byte but the unreserved ones and `/`.
enum URIPath {
    static func encode(_ path: String) -> String {
        Percent.encode(path) { Percent.isUnreserved($0) || $0 == UInt8(ascii: "/") }
    }
}
