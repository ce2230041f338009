import HLSPlaylist

/// A playlist as fetched, kept in the task store so that a resumed task never fetches playlists again.
struct SourcePlaylist: Codable, Hashable, Sendable {
    /// The URL it was fetched from (after the caller's URL; redirects are not tracked).
    var url: String
    var text: String
    /// The folder (relative to the task folder, "" for the variant) its media go to.
    var folder: String
}

/// Everything fetched while preparing a task: the multivariant playlist (if any) and the chosen media playlists.
struct Sources: Codable, Hashable, Sendable {
    var multivariant: SourcePlaylist?
    /// The line index of the chosen EXT-X-STREAM-INF in the multivariant playlist.
    var variantLine: Int?
    /// The variant's media playlist first, then one per chosen rendition.
    var media: [SourcePlaylist]
    /// The EXT-X-MEDIA line index of each rendition in `media[1...]`.
    var renditionLines: [Int]
}

/// One file fetched by a task.
struct Job: Codable, Hashable, Sendable {
    enum Kind: String, Codable, Sendable { case segment, key, map }
    var kind: Kind
    var url: String
    /// The byte range fetched, when only part of the resource is needed.
    var rangeOffset: UInt64?
    var rangeLength: UInt64?
    /// Where it goes, relative to the task folder.
    var path: String
    /// Whether the body must be MPEG-TS (checked for sync bytes, fake headers stripped).
    var expectTS: Bool
    /// Whether a fake image header may be stripped (not for byte ranges, whose offsets are fixed).
    var mayStrip: Bool
}

/// A shared file put together from the ranges fetched for it.
struct Assembly: Codable, Hashable, Sendable {
    var path: String
    var pieces: [String]
}

/// What a task fetches and writes, derived from its ``Sources``.
struct Plan: Sendable {
    var jobs: [Job]
    var assemblies: [Assembly]
    /// Playlists to write at the end: path relative to the task folder, and bytes.
    var playlists: [(path: String, bytes: [UInt8])]
    /// The largest number of segments of one media playlist (for progress).
    var segmentCount: Int
}

/// Builds the plan of a task from its playlists.
enum Planner {
    static let nonTSExtensions: Set<String> = [
        "aac", "mp3", "ac3", "ec3", "eac3", "vtt", "webvtt", "m4s", "mp4", "m4a", "m4v", "cmfv", "cmfa", "cmft",
        "fmp4", "mov", "srt", "ttml", "dfxp", "id3",
    ]

    /// The lower-cased extension of a URL's path (letters and digits, up to 5), or "".
    static func pathExtension(_ url: String) -> String {
        let path = URIReference(url).path
        let last = path.split(separator: "/").last ?? ""
        guard let dot = last.lastIndex(of: ".") else { return "" }
        let ext = last[last.index(after: dot)...].lowercased()
        guard !ext.isEmpty, ext.count <= 5,
            ext.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) })
        else { return "" }
        return ext
    }

    static func resolve(_ raw: String, against base: String) -> String {
        URIReference(raw).resolved(against: URIReference(base)).description
    }

    static func parseRange(_ text: String) -> (length: UInt64, offset: UInt64?)? {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2, let length = UInt64(parts[0]) else { return nil }
        if parts.count == 2 {
            guard let offset = UInt64(parts[1]) else { return nil }
            return (length, offset)
        }
        return (length, nil)
    }

    /// Parses a fetched playlist, reporting failures as ``DownloadError/Code/invalidPlaylist``.
    static func parse(_ source: SourcePlaylist) throws(DownloadError) -> Playlist {
        do {
            return try Playlist(source.text)
        } catch {
            throw DownloadError(.invalidPlaylist, "cannot parse playlist: \(error)", url: source.url)
        }
    }

    static func plan(_ sources: Sources, skipped: Set<String> = []) throws(DownloadError) -> Plan {
        var jobs: [Job] = []
        var assemblies: [Assembly] = []
        var playlists: [(path: String, bytes: [UInt8])] = []
        var segmentCount = 0
        for source in sources.media {
            let result = try planMedia(source, skipped: skipped)
            jobs += result.jobs
            assemblies += result.assemblies
            playlists.append((prefix(source.folder) + "index.m3u8", result.playlist))
            segmentCount = max(segmentCount, result.segments)
        }
        if let multivariant = sources.multivariant, let variantLine = sources.variantLine,
            !sources.renditionLines.isEmpty
        {
            let master = try writeMultivariant(multivariant, variantLine: variantLine, sources: sources)
            playlists.append(("master.m3u8", master))
        }
        // Keys first: a key that cannot be fetched stops the task before the media are fetched.
        let ordered =
            jobs.filter { $0.kind == .key } + jobs.filter { $0.kind == .map }
            + jobs.filter { $0.kind == .segment }
        return Plan(jobs: ordered, assemblies: assemblies, playlists: playlists, segmentCount: segmentCount)
    }

    static func prefix(_ folder: String) -> String { folder.isEmpty ? "" : folder + "/" }

    /// A use of a resource by a segment or map.
    private struct Use {
        var url: String
        var range: ByteRange?
        var isMap: Bool
        var segment: Int?
    }

    private static func planMedia(
        _ source: SourcePlaylist, skipped: Set<String>
    ) throws(DownloadError) -> (jobs: [Job], assemblies: [Assembly], playlist: [UInt8], segments: Int) {
        let playlist = try parse(source)
        guard playlist.kind != .multivariant else {
            throw DownloadError(.invalidPlaylist, "expected a media playlist", url: source.url)
        }
        let media = playlist.media(url: source.url)
        guard media.endList || media.playlistType == "VOD" else {
            throw DownloadError(.unsupported, "live playlists are not downloaded by this version", url: source.url)
        }
        guard !media.segments.isEmpty else {
            throw DownloadError(.invalidPlaylist, "the media playlist has no segments", url: source.url)
        }
        let folder = prefix(source.folder)
        var jobs: [Job] = []
        var assemblies: [Assembly] = []

        // Keys: one file per distinct key URI of the identity key format.
        var keyNames: [String: String] = [:]
        for (index, tag) in playlist.tags(.key) {
            guard let a = tag.attributes, let method = a.enumeratedString("METHOD") ?? a["METHOD"]?.text,
                method != "NONE", (a.quotedString("KEYFORMAT") ?? "identity") == "identity"
            else { continue }
            guard let raw = a.quotedString("URI") else {
                throw DownloadError(.invalidPlaylist, "EXT-X-KEY without URI on line \(index + 1)", url: source.url)
            }
            let url = resolve(raw, against: source.url)
            let scheme = URIReference(url).scheme?.lowercased()
            guard scheme == "http" || scheme == "https" else {
                throw DownloadError(.keyUnavailable, "the key is not at an http(s) URL", url: url)
            }
            if keyNames[url] == nil {
                let name = "key\(keyNames.count).key"
                keyNames[url] = name
                jobs.append(Job(kind: .key, url: url, path: folder + name, expectTS: false, mayStrip: false))
            }
        }

        // Uses of media resources by segments and maps, grouped by URL in order of first use.
        var uses: [Use] = []
        var mapRanges: [Int: ByteRange?] = [:]
        for (index, tag) in playlist.tags(.map) {
            guard let a = tag.attributes, let raw = a.quotedString("URI") else { continue }
            var range: ByteRange?
            if let text = a.quotedString("BYTERANGE"), let spec = parseRange(text) {
                range = ByteRange(length: spec.length, offset: spec.offset ?? 0)
            }
            mapRanges[index] = range
            uses.append(Use(url: resolve(raw, against: source.url), range: range, isMap: true))
        }
        for (i, segment) in media.segments.enumerated() {
            uses.append(Use(url: segment.uri, range: segment.byteRange, isMap: false, segment: i))
        }
        var order: [String] = []
        var byURL: [String: [Use]] = [:]
        for use in uses {
            if byURL[use.url] == nil { order.append(use.url) }
            byURL[use.url, default: []].append(use)
        }

        // Local name and offset mapping per resource.
        struct Local {
            var name: String
            var pieces: [(range: ByteRange, localOffset: UInt64)]
        }
        var locals: [String: Local] = [:]
        var segmentFiles = 0
        var sharedFiles = 0
        var initFiles = 0
        for url in order {
            let list = byURL[url] ?? []
            let onlyMap = list.allSatisfy(\.isMap)
            let hasMap = list.contains(where: \.isMap)
            let firstSegment = list.first(where: { !$0.isMap })?.segment
            var ext = pathExtension(url)
            if ext.isEmpty { ext = onlyMap ? "mp4" : "ts" }
            let encrypted = firstSegment.map { !media.segments[$0].keys.isEmpty } ?? false
            let hasInit = firstSegment.map { media.segments[$0].map != nil } ?? false
            let expectTS = !onlyMap && !hasMap && !encrypted && !hasInit && !nonTSExtensions.contains(ext)
            if list.contains(where: { $0.range == nil }) {
                // The whole resource is fetched; ranges in it keep their offsets.
                let name: String
                if onlyMap {
                    name = "init\(initFiles).\(ext)"
                    initFiles += 1
                } else {
                    name = "seg" + pad(firstSegment ?? segmentFiles) + "." + ext
                    segmentFiles += 1
                }
                locals[url] = Local(name: name, pieces: [])
                jobs.append(
                    Job(
                        kind: onlyMap ? .map : .segment, url: url, path: folder + name, expectTS: expectTS,
                        mayStrip: list.count == 1))
                continue
            }
            // Only ranges are fetched; overlapping ranges are merged; the local file holds them back to back.
            var ranges = Array(Set(list.compactMap(\.range))).sorted { $0.offset < $1.offset }
            var merged: [ByteRange] = []
            for range in ranges {
                if let last = merged.last, range.offset < last.end {
                    let end = max(last.end, range.end)
                    merged[merged.count - 1] = ByteRange(length: end - last.offset, offset: last.offset)
                } else {
                    merged.append(range)
                }
            }
            ranges = merged
            let name: String
            if onlyMap {
                name = "init\(initFiles).\(ext)"
                initFiles += 1
            } else if ranges.count == 1 {
                name = "seg" + pad(firstSegment ?? segmentFiles) + "." + ext
                segmentFiles += 1
            } else {
                name = "media\(sharedFiles).\(ext)"
                sharedFiles += 1
            }
            var pieces: [(range: ByteRange, localOffset: UInt64)] = []
            var offset: UInt64 = 0
            var piecePaths: [String] = []
            for (k, range) in ranges.enumerated() {
                pieces.append((range, offset))
                let (sum, overflow) = offset.addingReportingOverflow(range.length)
                guard !overflow else {
                    throw DownloadError(.invalidPlaylist, "byte ranges overflow", url: url)
                }
                offset = sum
                let path = ranges.count == 1 ? folder + name : folder + ".pieces/" + name + "." + pad(k)
                piecePaths.append(path)
                let aligned = range.offset % 188 == 0 && range.length % 188 == 0
                jobs.append(
                    Job(
                        kind: onlyMap ? .map : .segment, url: url, rangeOffset: range.offset,
                        rangeLength: range.length, path: path, expectTS: expectTS && aligned, mayStrip: false))
            }
            if ranges.count > 1 { assemblies.append(Assembly(path: folder + name, pieces: piecePaths)) }
            locals[url] = Local(name: name, pieces: pieces)
        }

        func localRange(_ url: String, _ range: ByteRange) -> ByteRange {
            guard let local = locals[url], !local.pieces.isEmpty else { return range }
            for piece in local.pieces where range.offset >= piece.range.offset && range.end <= piece.range.end {
                return ByteRange(length: range.length, offset: piece.localOffset + (range.offset - piece.range.offset))
            }
            return range
        }

        // The local playlist: the same lines, with URIs and byte ranges pointing at the local files.
        var segmentAtURILine: [Int: Int] = [:]
        var segmentOfLine: [Int: Int] = [:]
        for (i, segment) in media.segments.enumerated() {
            segmentAtURILine[segment.lineRange.upperBound - 1] = i
            for line in segment.lineRange { segmentOfLine[line] = i }
        }
        var lines: [PlaylistLine] = []
        lines.reserveCapacity(playlist.lines.count)
        for (index, line) in playlist.lines.enumerated() {
            if line.isURI, let i = segmentAtURILine[index] {
                let segment = media.segments[i]
                let name = locals[segment.uri]?.name ?? ""
                if skipped.contains(segment.uri)
                    || skipped.contains(segment.uri + "#" + String(segment.byteRange?.offset ?? 0))
                {
                    lines.append(PlaylistLine(tag: Tag(.gap), ending: line.ending))
                }
                lines.append(PlaylistLine(uri: name, ending: line.ending))
                continue
            }
            guard let tag = line.tag, let known = tag.known else {
                lines.append(line)
                continue
            }
            switch known {
            case .key:
                if var a = tag.attributes, let raw = a.quotedString("URI"),
                    let name = keyNames[resolve(raw, against: source.url)]
                {
                    a.setQuoted("URI", name)
                    lines.append(PlaylistLine(tag: .attributes(.key, a), ending: line.ending))
                } else {
                    lines.append(line)
                }
            case .map:
                guard var a = tag.attributes, let raw = a.quotedString("URI") else {
                    lines.append(line)
                    continue
                }
                let url = resolve(raw, against: source.url)
                a.setQuoted("URI", locals[url]?.name ?? raw)
                if let range = mapRanges[index] ?? nil {
                    let local = localRange(url, range)
                    a.setQuoted("BYTERANGE", "\(local.length)@\(local.offset)")
                }
                lines.append(PlaylistLine(tag: .attributes(.map, a), ending: line.ending))
            case .byteRange:
                if let i = segmentOfLine[index], let range = media.segments[i].byteRange {
                    let local = localRange(media.segments[i].uri, range)
                    lines.append(
                        PlaylistLine(
                            tag: Tag(.byteRange, .byteRange(ByteRangeSpec(length: local.length, offset: local.offset))),
                            ending: line.ending))
                } else {
                    lines.append(line)
                }
            case .preloadHint, .renditionReport, .serverControl, .skip:
                continue
            default:
                lines.append(line)
            }
        }
        let out = Playlist(lines: lines, hasByteOrderMark: false)
        return (jobs, assemblies, out.write(), media.segments.count)
    }

    static func pad(_ n: Int) -> String {
        let text = String(n)
        return text.count >= 5 ? text : String(repeating: "0", count: 5 - text.count) + text
    }

    /// The local multivariant playlist: the chosen variant and the renditions downloaded with it.
    private static func writeMultivariant(
        _ source: SourcePlaylist, variantLine: Int, sources: Sources
    ) throws(DownloadError) -> [UInt8] {
        let playlist = try parse(source)
        let info = playlist.multivariant(url: source.url)
        guard let variant = info.variants.first(where: { $0.lineIndex == variantLine }) else {
            throw DownloadError(.invalidPlaylist, "the chosen variant is gone", url: source.url)
        }
        var folderOfLine: [Int: String] = [:]
        for (k, line) in sources.renditionLines.enumerated() where k + 1 < sources.media.count {
            folderOfLine[line] = sources.media[k + 1].folder
        }
        var keptGroups: Set<String> = []
        var lines: [PlaylistLine] = []
        for (index, line) in playlist.lines.enumerated() {
            guard let tag = line.tag, let known = tag.known else { continue }
            switch known {
            case .extm3u, .version, .independentSegments, .start:
                lines.append(line)
            case .media:
                guard var a = tag.attributes else { continue }
                let type = a.enumeratedString("TYPE") ?? ""
                let group = a.quotedString("GROUP-ID") ?? ""
                let referenced =
                    (type == "AUDIO" && group == variant.audio) || (type == "SUBTITLES" && group == variant.subtitles)
                    || (type == "CLOSED-CAPTIONS" && group == variant.closedCaptions)
                guard referenced else { continue }
                if let folder = folderOfLine[index] {
                    a.setQuoted("URI", folder + "/index.m3u8")
                } else if a["URI"] != nil {
                    continue
                }
                keptGroups.insert(type + "/" + group)
                lines.append(PlaylistLine(tag: .attributes(.media, a), ending: line.ending))
            default:
                continue
            }
        }
        var a = variant.attributes
        if let g = variant.audio, !keptGroups.contains("AUDIO/" + g) { a.set("AUDIO", rawValue: nil) }
        if let g = variant.subtitles, !keptGroups.contains("SUBTITLES/" + g) { a.set("SUBTITLES", rawValue: nil) }
        if let g = variant.closedCaptions, !keptGroups.contains("CLOSED-CAPTIONS/" + g) {
            a.set("CLOSED-CAPTIONS", rawValue: "NONE")
        }
        a.set("VIDEO", rawValue: nil)
        a.set("PATHWAY-ID", rawValue: nil)
        lines.append(PlaylistLine(tag: .attributes(.streamInf, a)))
        lines.append(PlaylistLine(uri: "index.m3u8"))
        return Playlist(lines: lines).write()
    }
}

/// The planner as a fuzzer reaches it (Tests/Fuzz/Sources/DownloadPlannerFuzzer), not public API: prepares and plans
/// a task as ``DownloadManager`` does, with `top` as the playlist fetched from `url` and `media` as the answer for
/// every other playlist it names. Returns each job's and each written playlist's path (relative to the task
/// folder), or the typed error.
@_spi(Fuzzing) public enum PlannerProbe {
    public static func plan(top: String, media: String, url: String, options: DownloadOptions = DownloadOptions())
        throws(DownloadError) -> (jobPaths: [String], playlistPaths: [String])
    {
        let topSource = SourcePlaylist(url: url, text: top, folder: "")
        let playlist = try Planner.parse(topSource)
        let sources: Sources
        if playlist.kind == .multivariant {
            let info = playlist.multivariant(url: url)
            guard let index = Selection.variantIndex(info.variants, policy: options.variant) else {
                throw DownloadError(.noVariant, "no variant matches '\(options.variant)'", url: url)
            }
            let variant = info.variants[index]
            var list = [SourcePlaylist(url: variant.uri, text: media, folder: "")]
            var lines: [Int] = []
            let chosen =
                Selection.renditionIndices(
                    info.renditions, type: "AUDIO", groupID: variant.audio, policy: options.audio)
                + Selection.renditionIndices(
                    info.renditions, type: "SUBTITLES", groupID: variant.subtitles, policy: options.subtitles)
            for (n, r) in chosen.enumerated() {
                let rendition = info.renditions[r]
                guard let uri = rendition.uri else { continue }
                list.append(SourcePlaylist(url: uri, text: media, folder: rendition.type.lowercased() + String(n)))
                lines.append(rendition.lineIndex)
            }
            sources = Sources(
                multivariant: topSource, variantLine: variant.lineIndex, media: list, renditionLines: lines)
        } else {
            sources = Sources(multivariant: nil, variantLine: nil, media: [topSource], renditionLines: [])
        }
        let plan = try Planner.plan(sources)
        return (plan.jobs.map(\.path) + plan.assemblies.map(\.path), plan.playlists.map(\.path))
    }
}
