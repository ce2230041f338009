import CLIToolkit
import FileRange
import Foundation
import FragmentedMP4
import MPEGTS

/// `tsplayer remux`: one fragmented MP4 file from a .ts, every track or the audio of one language.
enum RemuxCommand {
    static let command = Command(
        name: "tsplayer remux", overview: "Remux an MPEG-TS file to one fragmented MP4 file (no transcoding).",
        discussion: """
            Video (H.264, HEVC) and audio (AAC, AC-3, E-AC-3, MPEG audio) tracks are copied; HEVC goes in as hvc1
            with its parameter sets in the sample entry. A file of recordings joined end to end whose later part is
            on other PIDs or another program goes on in the first recording's tracks. Progress is shown on a
            terminal.
            """,
        synopsis: ["tsplayer remux <input> <output> [--audio <language>]"],
        arguments: [
            Argument("<input>", help: "The .ts file."),
            Argument("<output>", help: "The .mp4 file to write (replaced if it exists)."),
        ],
        options: [
            .value(
                "--audio", value: "language",
                help: "Keep only the audio tracks of this ISO 639-2 language (and the video).")
        ])

    static let subcommand = Subcommand(
        command: command, abstract: "Remux a .ts file to a fragmented MP4 file.", run: run)

    @Sendable static func run(_ arguments: [String]) async -> Int32 {
        let parsed = command.parseOrExit(arguments)
        guard parsed.positionals.count == 2 else {
            command.usageError("expected an input and an output file")
        }
        let input = parsed.positionals[0]
        let output = parsed.positionals[1]
        do {
            let damaged = try remux(input: input, output: output, language: parsed.value("--audio")?.lowercased())
            // Stream errors found in the input, the output written all the same: exit 1, as tsinspect's report.
            return damaged ? ExitCode.failure : ExitCode.success
        } catch let error as RemuxError {
            Output.error("\(input): \(error)")
            return error.status
        } catch {
            Output.error("\(input): \(ErrorText.describe(error))")
            return ExitCode.unreadable
        }
    }

    /// Remuxes `input` into `output`; `label` names the input in log lines (the input's path by default). Returns
    /// whether the input had stream errors that lose frames (a last packet cut short, bytes without sync, PES packets
    /// with a bad header), each said on stderr; the output holds what could be read. Continuity counter jumps alone
    /// (which files joined end to end have) are said but do not count.
    @discardableResult
    static func remux(input: String, output: String, language: String?, label: String? = nil) throws -> Bool {
        let name = label ?? input
        let file = try FileStreamer(path: input)
        defer { file.close() }
        let size = Int64(try file.size())
        let head = try file.read(at: 0, length: Int(min(Int64(8 << 20), size)))
        // Packets of 188, 192 or 204 bytes, found as the demuxer finds them; a recording that begins inside a
        // packet starts at its first whole one.
        guard let first = PacketSize.detect(in: Array(head.prefix(64 << 10))) else {
            throw RemuxError("not an MPEG-TS file (no packets at its start)", status: ExitCode.unreadable)
        }
        if first.offset > 0 {
            Output.log("remux: \(name): the \(first.offset) bytes before the first whole packet are left out")
        }
        let layout: TSProgramLayout
        do {
            layout = try TSProgramLayout(head: head)
        } catch {
            // No tables in the head: not a transport stream this can read (exit 2). Tables but no stream to carry,
            // or a track without parameter sets: a failure of what was asked (exit 1). The detail names the PID.
            if error.code == .invalidValue {
                throw RemuxError(
                    "not an MPEG-TS file: \(error.detail) (\(head.count) bytes read)", status: ExitCode.unreadable)
            }
            throw RemuxError((error.code == .unsupportedCodec ? "nothing to remux: " : "cannot remux: ") + error.detail)
        }
        var pids: Set<UInt16>?
        if let language {
            let audio = layout.tracks.filter { !$0.isVideo && $0.language == language }
            guard !audio.isEmpty else {
                let known = layout.tracks.filter { !$0.isVideo }.map { "PID \($0.pid): \($0.language ?? "und")" }
                throw RemuxError(
                    "no audio track in language '\(language)' (audio: \(known.joined(separator: ", ")))")
            }
            pids = Set(layout.tracks.filter(\.isVideo).map(\.pid) + audio.map(\.pid))
        }
        for item in layout.skipped { Output.log("remux: \(name): PID \(item.pid) left out: \(item.reason)") }
        let temporary = output + ".partial"
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
            let handle = FileHandle(forWritingAtPath: temporary)
        else { throw RemuxError("cannot create \(temporary)") }
        var succeeded = false
        defer {
            try? handle.close()
            if !succeeded { try? FileManager.default.removeItem(atPath: temporary) }
        }
        var progressLine = ProgressLine(fd: 2, plainInterval: nil)
        var lastShown = -1
        let statistics: DemuxStatistics
        do {
            statistics = try remux(layout: layout, pids: pids, file: file, size: size, to: handle) { position in
                let percent = Int(Double(position) * 100 / Double(max(1, size)))
                if percent != lastShown {
                    lastShown = percent
                    progressLine.update("remux \(min(100, percent))%")
                }
            }
        } catch let error as FragmentedMP4Error where error.code == .configurationChange {
            progressLine.finish(nil)
            throw RemuxError(error.detail)
        }
        progressLine.finish(nil)
        // What the demuxer skipped is said, with where: a file cut short (a copy or a recording that stopped) ends
        // inside a packet, whose bytes are left out (the frames before it are in the output, the last as far as it
        // goes); bytes without sync (garbage between packets) are skipped; PES packets with a bad header are left
        // out; continuity counter jumps (lost packets, or a join) are counted. The output holds what could be read.
        if statistics.truncatedBytes > 0 {
            Output.log(
                "remux: \(name): the file ends inside a packet: its last \(statistics.truncatedBytes) bytes, "
                    + "from byte offset \(size - Int64(statistics.truncatedBytes)), are not a whole packet and were "
                    + "left out")
        }
        if statistics.syncLosses > 0 {
            Output.log(
                "remux: \(name): sync lost \(statistics.syncLosses) "
                    + (statistics.syncLosses == 1 ? "time: " : "times: ")
                    + "\(statistics.skippedBytes) bytes between packets were skipped")
        }
        if statistics.pesErrors > 0 {
            Output.log(
                "remux: \(name): \(statistics.pesErrors) PES packets with a bad header were left out (the "
                    + "frames they held are missing)")
        }
        if let first = statistics.firstContinuityErrors.first {
            Output.log(
                "remux: \(name): \(statistics.continuityErrors) continuity counter jumps (packets lost, or "
                    + "files joined), the first on PID \(first.pid) at byte offset \(first.offset)")
        }
        try handle.close()
        if FileManager.default.fileExists(atPath: output) { try FileManager.default.removeItem(atPath: output) }
        try FileManager.default.moveItem(atPath: temporary, toPath: output)
        succeeded = true
        return statistics.truncatedBytes > 0 || statistics.syncLosses > 0 || statistics.pesErrors > 0
    }

    /// Writes the remux of `file` to `handle`; returns what the demuxer counted. A joined recording's later parts on
    /// other programs or PIDs are read on the first part's (``PartFollowingInput``), so they go on in its tracks.
    static func remux(
        layout: TSProgramLayout, pids: Set<UInt16>?, file: FileStreamer, size: Int64, to handle: FileHandle,
        progress: (Int64) -> Void
    ) throws -> DemuxStatistics {
        var input = PartFollowingInput(file: file, size: size)
        return try TSRemuxer(layout: layout, pids: pids).remux(
            fileSize: size, read: { offset, length in try input.read(offset, length) },
            write: { bytes in try handle.write(contentsOf: bytes) }, progress: progress)
    }
}

/// The input of a remux as it is read in order: a joined recording's later parts on another program, PMT PID or
/// stream PIDs are moved onto the first part's program and PIDs (MPEGTS's `PartReader`, as served fragmented MP4
/// reads them), so the layout read from the head (the first part's) carries them. The parts are found by an index
/// (`TSIndexer`, without keyframes) that runs ``lookahead`` bytes ahead of the reads: a part begins at the PAT or PMT
/// that changes the streams, and is known once that PMT is read, so each byte is read with the parts known up to
/// well past it. The bytes the index reads ahead are read again by the remux a moment later (from the page cache).
struct PartFollowingInput {
    let file: FileStreamer
    let size: Int64
    /// How far ahead of the bytes read the index has read.
    static let lookahead: Int64 = 8 << 20
    private var indexer = TSIndexer(scanKeyframes: false)
    private var partCount = 0
    private var reader: PartReader?

    init(file: FileStreamer, size: Int64) {
        self.file = file
        self.size = size
    }

    /// `length` bytes at `offset` (fewer at the end of the file, none past it), later parts moved.
    mutating func read(_ offset: Int64, _ length: Int) throws -> [UInt8] {
        guard offset >= 0, offset < size, length > 0 else { return [] }
        let count = Int(min(Int64(length), size - offset))
        let wanted = min(size, offset + Int64(count) + Self.lookahead)
        while Int64(clamping: indexer.bytesIndexed) < wanted {
            let start = indexer.bytesIndexed
            let bytes = try file.read(at: start, length: Int(min(Int64(1 << 20), wanted - Int64(clamping: start))))
            guard !bytes.isEmpty else { break }
            bytes.withUnsafeBytes { indexer.consume($0) }
        }
        if Int64(clamping: indexer.bytesIndexed) >= size, !indexer.isFinished { indexer.finish() }
        // The parts change rarely: the index (which puts each part's start on its packet) is made only then.
        let found = indexer.analyzer.parts.count
        if found != partCount {
            partCount = found
            let index = indexer.index(fileSize: UInt64(size), modificationTime: (0, 0))
            reader = PartReader(parts: index.parts, packetSize: index.packetSize)
        }
        guard let reader else { return try file.read(at: UInt64(offset), length: count) }
        return try reader.read(at: UInt64(offset), length: count) { (start, length) throws(FileStreamerError) in
            try file.read(at: start, length: length)
        }
    }
}

/// A remux that cannot be done, with the exit status it gives (unreadable input, or a failure of what was asked).
struct RemuxError: Error, CustomStringConvertible {
    var description: String
    var status: Int32
    init(_ description: String, status: Int32 = ExitCode.failure) {
        self.description = description
        self.status = status
    }
}
