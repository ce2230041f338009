import FileRange
import LoopbackHTTP
import MPEGTS

/// What a session reads of a file before indexing it: the program to play and what the file's head shows.
extension TSPlaybackSession {
    /// The program to play: `requested` when the file has it (else `LoopbackHTTP.PlaybackError.Code.unknownProgram`
    /// listing the programs), or the first program with video, else the first with audio; nil for a file of one
    /// program.
    static func chooseProgram(_ requested: UInt16?, probe: TSProbe, path: String) throws(PlaybackError) -> UInt16? {
        let programs = probe.programs
        if let requested {
            guard programs.contains(where: { $0.programNumber == requested }) else {
                let listed = programs.map { table in
                    let codecs = table.streams.filter { $0.codec.kind == .video || $0.codec.kind == .audio }
                        .map(\.codec.name)
                    return "\(table.programNumber)" + (codecs.isEmpty ? "" : " (\(codecs.joined(separator: ", ")))")
                }
                throw PlaybackError(
                    .unknownProgram, path: path,
                    detail: "program \(requested) is not in the file; its programs: "
                        + (listed.isEmpty ? "none found" : listed.joined(separator: ", ")))
            }
            return programs.count > 1 ? requested : nil
        }
        guard programs.count > 1 else { return nil }
        let chosen =
            programs.first { $0.streams.contains { $0.codec.kind == .video } }
            ?? programs.first { $0.streams.contains { $0.codec.kind == .audio } } ?? programs.first
        return chosen?.programNumber
    }

    /// The size and offset of the file's first packet, from its first 64 KiB (188 at 0 when none is found there).
    static func firstPacket(_ file: FileStreamer) -> (size: PacketSize, offset: UInt64) {
        guard let head = try? file.read(at: 0, length: 64 << 10), let found = PacketSize.detect(in: head),
            let offset = UInt64(exactly: found.offset)
        else { return (.standard, 0) }
        return (found.size, offset)
    }

    /// Codec details of the audio and video streams, from the first 2 MiB of the file (video first).
    static func readCodecDetails(_ file: FileStreamer) -> [CodecDetails] {
        readHead(file).details
    }

    /// What the first 2 MiB of the file (from `offset`) show: codec details of the audio and video streams (video
    /// first), and the audio and video PIDs that carried a PES there (nil when the head cannot be read).
    static func readHead(_ file: FileStreamer, at offset: UInt64 = 0, program: Set<UInt16>? = nil) -> (
        details: [CodecDetails], present: Set<UInt16>?
    ) {
        guard let head = try? file.read(at: offset, length: 2 << 20) else { return ([], nil) }
        var indexer = TSIndexer(scanKeyframes: false)
        head.withUnsafeBytes { indexer.consume($0) }
        let streams = indexer.analyzer.orderedStreams.filter {
            ($0.codec.kind == .video || $0.codec.kind == .audio) && (program?.contains($0.pid) ?? true)
        }
        let details = streams.sorted { ($0.codec.kind == .video ? 0 : 1) < ($1.codec.kind == .video ? 0 : 1) }
            .compactMap(\.details)
        return (details, Set(streams.filter { $0.pesCount > 0 }.map(\.pid)))
    }

    /// The most later parts whose heads are read (``readPartHeads(_:)``): a file cut at every few seconds is read
    /// 2 MiB a part no further.
    static let partHeadLimit = 64

    /// Reads the first 2 MiB from where each later part of `index` begins (up to ``partHeadLimit``), each part once,
    /// for the codec details of that part's streams: the CODECS attribute names every part's codecs, wherever in
    /// the file the part begins. Runs where the index is built (a pool thread), never on a playlist request.
    func readPartHeads(_ index: TSIndex) {
        let known = partCodecDetails.withLock { $0 }
        var found: [Int64: [CodecDetails]] = [:]
        for part in index.parts.dropFirst().prefix(Self.partHeadLimit) where known[part.offset] == nil {
            // A part not yet indexed to its end is read as far as the index has gone; read again once it has.
            let start = UInt64(clamping: part.offset)
            guard index.isComplete || index.bytesIndexed >= start + (2 << 20) else { continue }
            found[part.offset] = Self.readHead(file, at: start, program: Set(part.pids)).details
        }
        guard !found.isEmpty else { return }
        partCodecDetails.withLock { $0.merge(found) { old, _ in old } }
    }

    /// The codec details of every part: the file's head, then each later part's (``readPartHeads(_:)``), in the
    /// order of the parts.
    var allCodecDetails: [CodecDetails] {
        let parts = partCodecDetails.withLock { $0 }
        return codecDetails + parts.keys.sorted().flatMap { parts[$0] ?? [] }
    }
}
