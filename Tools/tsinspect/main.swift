// tsinspect: shows what is inside an MPEG-TS file: programs, streams, timing, errors, keyframes, SCTE-35 cues.
import CLIToolkit
import FileRange
import HLSPlaylist
import MPEGTS

/// Bytes per read of a file: large enough that system calls do not count, small enough to stay in cache.
let readSize = 1 << 20
let schemaVersion = 1

let command = Command(
    name: "tsinspect",
    overview: "Show what is inside an MPEG-TS file (188-, 192- or 204-byte packets).",
    discussion: """
        Prints a summary: file size, packet size and count, duration, bitrate, programs, and per PID the stream
        type, codec, packet count and share, first and last PTS, continuity errors; the PSI tables seen, SCTE-35
        cues and sync losses. Exit status: 0 clean, 1 stream errors found (sync loss, continuity, CRC, PES or
        truncation), 2 unreadable input or not MPEG-TS, 64 bad usage.
        """,
    synopsis: [
        "tsinspect [--json] [--pts [--frames] | --keyframes | --scte35 | --probe [--timing]] <file>",
        "tsinspect --make-slate <seconds> [--start-pts <ticks>]",
    ],
    arguments: [Argument("<file>", help: "An MPEG-TS file, or - for standard input.")],
    options: [
        .flag(
            "--json",
            help: "Print JSON: one document (schema in Documentation/tsinspect.md), or with --pts one JSON object "
                + "per line."),
        .flag("--pts", help: "Print one line per PES packet: PID, PTS, DTS, keyframe flag, byte offset."),
        .flag(
            "--frames",
            help: "With --pts: one line per audio frame instead of per audio PES (AAC ADTS, MPEG audio, AC-3, "
                + "E-AC-3), each with its own PTS and its size."),
        .flag("--keyframes", help: "Print the keyframes of the main stream: byte offset, PTS, seconds."),
        .flag("--scte35", help: "Print every SCTE-35 splice command."),
        .flag("--probe", help: "Read only the head and tail of the file and print the duration."),
        .flag("--timing", help: "With --probe: also print how long the probe took, measured inside the process."),
        .value(
            "--make-slate", value: "seconds",
            help: "Write a slate (black video, silent audio; H.264 + AAC) of that duration to standard output "
                + "instead of reading a file.",
            expects: "a duration in seconds", example: "2"),
        .value(
            "--start-pts", value: "ticks", help: "The slate's first PTS in 90 kHz ticks (default 126000).",
            expects: "a PTS in 90 kHz ticks", example: "126000"),
        .value(
            "--audio-origin", value: "ticks",
            help: "For a chain of slates: the first slate's --start-pts. The silent audio stays on one frame grid "
                + "from there, so consecutive slates join with no audio gap (a slate's last frame may end up to a "
                + "frame after it).",
            expects: "a PTS in 90 kHz ticks", example: "126000"),
    ])

enum Mode {
    case summary
    case pts
    case keyframes
    case scte35
    case probe
    case makeSlate
}

struct Options {
    var input: String?
    var json = false
    var mode = Mode.summary
    var slateSeconds: Double?
    var startPTS: UInt64 = 126_000
    var audioOrigin: UInt64?
    var timing = false
    var frames = false
}

func failure(_ message: String) -> Never {
    Output.fail(message, status: ExitCode.unreadable)
}

/// The options of a parsed command line; a combination that makes no sense is a usage error.
func readOptions(_ parsed: ParsedArguments) throws(UsageError) -> Options {
    var options = Options()
    let modes: [(String, Mode)] = [
        ("--pts", .pts), ("--keyframes", .keyframes), ("--scte35", .scte35), ("--probe", .probe),
        ("--make-slate", .makeSlate),
    ]
    var modeFlag: String?
    for name in parsed.given {
        guard let mode = modes.first(where: { $0.0 == name })?.1 else { continue }
        if let modeFlag, modeFlag != name { throw UsageError("'\(name)' cannot be combined with '\(modeFlag)'") }
        modeFlag = name
        options.mode = mode
    }
    options.json = parsed.flag("--json")
    options.timing = parsed.flag("--timing")
    options.frames = parsed.flag("--frames")
    if let seconds = try parsed.number("--make-slate") {
        guard seconds > 0, seconds <= 3600 else {
            throw UsageError(
                "invalid duration '\(parsed.value("--make-slate") ?? "")' for '--make-slate' (0 < seconds <= 3600)")
        }
        options.slateSeconds = seconds
    }
    if let ticks = try parsed.integer("--start-pts", as: UInt64.self) {
        guard ticks < 1 << 33 else {
            throw UsageError("invalid PTS '\(ticks)' for '--start-pts' (0 ... 2^33-1)")
        }
        options.startPTS = ticks
    }
    if let ticks = try parsed.integer("--audio-origin", as: UInt64.self) {
        guard ticks < 1 << 33 else {
            throw UsageError("invalid PTS '\(ticks)' for '--audio-origin' (0 ... 2^33-1)")
        }
        guard options.mode == .makeSlate else {
            throw UsageError("'--audio-origin' needs '--make-slate'")
        }
        options.audioOrigin = ticks
    }
    if parsed.positionals.count > 1 {
        throw UsageError("unexpected argument '\(parsed.positionals[1])' after '\(parsed.positionals[0])'")
    }
    options.input = parsed.positionals.first
    if options.timing && options.mode != .probe { throw UsageError("'--timing' needs '--probe'") }
    if options.frames && options.mode != .pts { throw UsageError("'--frames' needs '--pts'") }
    if options.mode == .makeSlate {
        if let input = options.input { throw UsageError("unexpected argument '\(input)' with '--make-slate'") }
        return options
    }
    if options.input == nil { throw UsageError("missing expected argument '<file>'") }
    return options
}

let options: Options
do {
    options = try readOptions(command.parseOrExit(Command.processArguments()))
} catch {
    command.usageError(error.message)
}
let inputPath = options.input ?? "-"

if options.mode == .makeSlate, let seconds = options.slateSeconds {
    do {
        let builder = try SlateBuilder()
        var counters: [UInt16: UInt8] = [:]
        let duration = Int64((seconds * 90_000).rounded())
        let start = Timestamp(wrapping: options.startPTS)
        let slate =
            if let origin = options.audioOrigin {
                builder.make(
                    durationTicks: duration, startPTS: start, audioOrigin: Timestamp(wrapping: origin),
                    continuityCounters: &counters)
            } else {
                builder.make(durationTicks: duration, startPTS: start, continuityCounters: &counters)
            }
        var out = OutputBuffer(fd: 1)
        out.bytes = slate
        out.flush()
        ExitCode.exit(ExitCode.success)
    } catch {
        failure("cannot make a slate: \(describe(error))")
    }
}

if options.mode == .probe {
    guard inputPath != "-" else { command.usageError("'--probe' needs a file, not standard input") }
    do {
        let started = MonotonicClock.nanoseconds()
        let probe = try TSProbe.probe(path: inputPath)
        let elapsed = MonotonicClock.nanoseconds() - started
        printProbe(probe, path: inputPath, json: options.json, nanoseconds: options.timing ? elapsed : nil)
        ExitCode.exit(ExitCode.success)
    } catch {
        if error.code == .notTransportStream {
            if let playlist = playlistMessage(path: inputPath) { failure(playlist) }
            failure("\(inputPath) is not an MPEG-TS stream: no sync byte pattern found (gave up at offset 0)")
        }
        failure("cannot read \(inputPath): \(error.detail)")
    }
}

/// The message for an HLS playlist given where MPEG-TS is expected.
func playlistMessage(_ path: String) -> String {
    "\(path) is an HLS playlist, not an MPEG-TS stream: check it with m3u8lint, or fetch its media with "
        + "tsplayer download"
}

/// The message for `path` if it is an HLS playlist (read from its first bytes), nil otherwise.
func playlistMessage(path: String) -> String? {
    guard let file = try? FileStreamer(path: path) else { return nil }
    defer { file.close() }
    guard let head = try? file.read(at: 0, length: 16), PlaylistStart.check(head, complete: true) == .playlist
    else { return nil }
    return playlistMessage(path)
}

/// Where the demuxer's events go: the analyzer, or with `--pts` one output line per PES (with `--frames`, per
/// audio frame). A plain struct held in a local variable, so the per-event calls need no dynamic exclusivity
/// checks.
struct EventSink {
    var analyzer: TSAnalyzer
    var out = OutputBuffer(fd: 1)
    let printPTS: Bool
    let jsonLines: Bool
    /// `--frames`: audio PES are split into frames, one splitter per PID.
    var splitFrames = false
    var splitters: [UInt16: AudioFrameSplitter] = [:]
    var garbage = GarbageRegions()

    @inline(__always)
    mutating func handle(_ event: DemuxEvent) {
        if case .pes(let info) = event {
            if printPTS {
                // With --frames an audio PES is printed as its frames, once it is complete.
                if splitFrames, splits(info.pid) { return }
                writePTSLine(info, json: jsonLines, into: &out)
            } else {
                analyzer.consume(pes: info)
            }
            return
        }
        switch event {
        case .pesPacket(let packet):
            if splitFrames { writeFrames(packet) }
            return
        case .synchronized(_, let offset): garbage.synchronized(at: offset)
        case .error(let error) where error.code == .syncLost: garbage.lost(at: error.offset)
        default: break
        }
        analyzer.consume(event)
    }

    func splits(_ pid: UInt16) -> Bool {
        analyzer.stream(pid: pid).map { AudioFrameSplitter.splits($0.codec) } ?? false
    }

    mutating func writeFrames(_ packet: PESPacket) {
        let pid = packet.info.pid
        guard let codec = analyzer.stream(pid: pid)?.codec, AudioFrameSplitter.splits(codec) else { return }
        var splitter = splitters.removeValue(forKey: pid) ?? AudioFrameSplitter(codec: codec)
        if splitter.codec != codec { splitter = AudioFrameSplitter(codec: codec) }
        splitter.split(packet) { frame in writeFrameLine(frame, pid: pid, json: jsonLines, into: &out) }
        splitters[pid] = splitter
    }
}

func inspect(_ options: Options, inputPath: String) -> Never {
    var demuxer = Demuxer(
        options: DemuxOptions(scanKeyframes: options.mode != .summary, reassemblePES: options.frames))
    var sink = EventSink(
        analyzer: TSAnalyzer(recordKeyframes: options.mode == .keyframes, recordSCTE35: true),
        printPTS: options.mode == .pts, jsonLines: options.json, splitFrames: options.frames)
    let printPTS = sink.printPTS

    var fileSize: UInt64 = 0
    /// The first bytes, to tell a playlist given by mistake from other input that is not MPEG-TS.
    var head: [UInt8] = []
    func keep(_ chunk: UnsafeRawBufferPointer) {
        if head.count < 16 { head += chunk.prefix(16 - head.count) }
    }
    if inputPath == "-" {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 << 20, alignment: 64)
        let input: SequentialFileReader
        do {
            input = try SequentialFileReader(path: "-")
        } catch {
            failure("cannot read standard input: \(error.errno.message)")
        }
        while true {
            let count: Int
            do {
                count = try input.read(into: buffer)
            } catch {
                failure("cannot read standard input: \(error.errno.message)")
            }
            if count == 0 { break }
            fileSize += UInt64(count)
            keep(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            demuxer.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { sink.handle($0) }
            if printPTS { sink.out.flushIfLarge() }
        }
        buffer.deallocate()
        demuxer.finish { sink.handle($0) }
    } else {
        do {
            let file = try FileStreamer(path: inputPath)
            fileSize = try file.size()
            // Two threads share the reading (FileStreamer.readAhead); the chunks come here in order.
            try file.readAhead(chunkSize: readSize) { chunk in
                keep(chunk)
                demuxer.feed(chunk) { sink.handle($0) }
                if printPTS { sink.out.flushIfLarge() }
                return true
            }
            demuxer.finish { sink.handle($0) }
            if options.mode == .summary {
                // Count the frames of each audio stream's last PES (its real end) by reading it again; if that
                // read fails (the file shrank), the step between the last two PES stands in.
                try? sink.analyzer.measureLastAudioPES(fileSize: fileSize) {
                    (offset, length) throws(FileStreamerError) in
                    try file.read(at: offset, length: length)
                }
            }
            file.close()
        } catch {
            let reason = error.errno.map { "\($0)" } ?? "\(error.code)"
            failure("cannot read \(inputPath): \(reason)")
        }
    }
    sink.garbage.finish(at: demuxer.statistics.bytes)
    var out = sink.out
    let analyzer = sink.analyzer

    if demuxer.statistics.packets == 0 {
        out.flush()
        if PlaylistStart.check(head, complete: true) == .playlist { failure(playlistMessage(inputPath)) }
        failure(
            "\(inputPath) is not an MPEG-TS stream: no sync byte pattern found in \(demuxer.statistics.bytes) bytes "
                + "(gave up at offset \(demuxer.statistics.bytes))")
    }

    switch options.mode {
    case .summary:
        let report = Report(
            path: inputPath, fileSize: fileSize, demuxer: demuxer, analyzer: analyzer, garbage: sink.garbage)
        out.append(options.json ? report.json.render() + "\n" : report.text)
    case .pts:
        break
    case .keyframes:
        writeKeyframes(analyzer, json: options.json, into: &out)
    case .scte35:
        writeSCTE35(analyzer, json: options.json, into: &out)
    case .probe, .makeSlate:
        break
    }
    out.flush()
    ExitCode.exit(demuxer.statistics.hasErrors ? ExitCode.failure : ExitCode.success)
}

inspect(options, inputPath: inputPath)
