// tsinspect: shows what is inside an MPEG-TS file: programs, streams, timing, errors, keyframes, SCTE-35 cues.
import FileRange
import MPEGTS

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let toolVersion = "1.0.0"
/// Bytes per read of a file: large enough that system calls do not count, small enough to stay in cache.
let readSize = 1 << 20
let schemaVersion = 1

let usage =
    "USAGE: tsinspect [--json] [--pts [--frames] | --keyframes | --scte35 | --probe [--timing]] <file>\n"
    + "       tsinspect --make-slate <seconds> [--start-pts <ticks>]"

let help = """
    OVERVIEW: Show what is inside an MPEG-TS file (188-, 192- or 204-byte packets).

    Prints a summary: file size, packet size and count, duration, bitrate, programs, and per PID the stream
    type, codec, packet count and share, first and last PTS, continuity errors; the PSI tables seen, SCTE-35
    cues and sync losses. Exit status: 0 clean, 1 stream errors found (sync loss, continuity, CRC, PES or
    truncation), 2 unreadable input or not MPEG-TS, 64 bad usage.

    \(usage)

    ARGUMENTS:
      <file>                  An MPEG-TS file, or - for standard input.

    OPTIONS:
      --json                  Print JSON: one document (schema in Documentation/tsinspect.md), or with --pts
                              one JSON object per line.
      --pts                   Print one line per PES packet: PID, PTS, DTS, keyframe flag, byte offset.
      --frames                With --pts: one line per audio frame instead of per audio PES (AAC ADTS, MPEG
                              audio, AC-3, E-AC-3), each with its own PTS and its size.
      --keyframes             Print the keyframes of the main stream: byte offset, PTS, seconds.
      --scte35                Print every SCTE-35 splice command.
      --probe                 Read only the head and tail of the file and print the duration.
      --timing                With --probe: also print how long the probe took, measured inside the process.
      --make-slate <seconds>  Write a slate (black video, silent audio; H.264 + AAC) of that duration to
                              standard output instead of reading a file.
      --start-pts <ticks>     The slate's first PTS in 90 kHz ticks (default 126000).
      --version               Show the version.
      -h, --help              Show help information.

    """

/// CLOCK_MONOTONIC in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

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
    var timing = false
    var frames = false
}

func usageError(_ message: String) -> Never {
    writeString("Error: \(message)\n\(usage)\n  See 'tsinspect --help' for more information.\n", to: 2)
    exit(64)
}

func failure(_ message: String) -> Never {
    writeString("Error: \(message)\n", to: 2)
    exit(2)
}

func parseArguments(_ arguments: [String]) -> Options {
    var options = Options()
    var modeFlag: String?
    func setMode(_ mode: Mode, _ flag: String) {
        if let modeFlag, modeFlag != flag { usageError("'\(flag)' cannot be combined with '\(modeFlag)'") }
        modeFlag = flag
        options.mode = mode
    }
    var onlyInputs = false
    var index = 0
    func value(_ name: String) -> String {
        index += 1
        guard index < arguments.count else { usageError("missing value for '\(name)'") }
        return arguments[index]
    }
    while index < arguments.count {
        let argument = arguments[index]
        defer { index += 1 }
        if onlyInputs || argument == "-" || !argument.hasPrefix("-") {
            if let input = options.input { usageError("unexpected argument '\(argument)' after '\(input)'") }
            options.input = argument
            continue
        }
        switch argument {
        case "--": onlyInputs = true
        case "-h", "--help":
            writeString(help, to: 1)
            exit(0)
        case "--version":
            writeString(toolVersion + "\n", to: 1)
            exit(0)
        case "--json": options.json = true
        case "--timing": options.timing = true
        case "--frames": options.frames = true
        case "--pts": setMode(.pts, argument)
        case "--keyframes": setMode(.keyframes, argument)
        case "--scte35": setMode(.scte35, argument)
        case "--probe": setMode(.probe, argument)
        case "--make-slate":
            setMode(.makeSlate, argument)
            let text = value(argument)
            guard let seconds = Double(text), seconds > 0, seconds <= 3600 else {
                usageError("invalid duration '\(text)' for '--make-slate' (0 < seconds <= 3600)")
            }
            options.slateSeconds = seconds
        case "--start-pts":
            let text = value(argument)
            guard let ticks = UInt64(text), ticks < 1 << 33 else {
                usageError("invalid PTS '\(text)' for '--start-pts' (0 ... 2^33-1)")
            }
            options.startPTS = ticks
        default: usageError("unknown option '\(argument)'")
        }
    }
    if options.timing && options.mode != .probe { usageError("'--timing' needs '--probe'") }
    if options.frames && options.mode != .pts { usageError("'--frames' needs '--pts'") }
    if options.mode == .makeSlate {
        if let input = options.input { usageError("unexpected argument '\(input)' with '--make-slate'") }
        return options
    }
    if options.input == nil { usageError("missing expected argument '<file>'") }
    return options
}

let options = parseArguments(Array(CommandLine.arguments.dropFirst()))
let inputPath = options.input ?? "-"

if options.mode == .makeSlate, let seconds = options.slateSeconds {
    do {
        let builder = try SlateBuilder()
        var counters: [UInt16: UInt8] = [:]
        let slate = builder.make(
            durationTicks: Int64((seconds * 90_000).rounded()), startPTS: Timestamp(wrapping: options.startPTS),
            continuityCounters: &counters)
        var out = OutputBuffer(fd: 1)
        out.bytes = slate
        out.flush()
        exit(0)
    } catch {
        failure("cannot make a slate: \(error)")
    }
}

if options.mode == .probe {
    guard inputPath != "-" else { usageError("'--probe' needs a file, not standard input") }
    do {
        let started = monotonicNanoseconds()
        let probe = try TSProbe.probe(path: inputPath)
        let elapsed = monotonicNanoseconds() - started
        printProbe(probe, path: inputPath, json: options.json, nanoseconds: options.timing ? elapsed : nil)
        exit(0)
    } catch {
        if error.code == .notTransportStream {
            failure("\(inputPath) is not an MPEG-TS stream: no sync byte pattern found (gave up at offset 0)")
        }
        failure("cannot read \(inputPath): \(error.detail)")
    }
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
    if inputPath == "-" {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 << 20, alignment: 64)
        while true {
            let count = read(0, buffer.baseAddress, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { failure("cannot read standard input: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            fileSize += UInt64(count)
            demuxer.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count])) { sink.handle($0) }
            if printPTS { sink.out.flushIfLarge() }
        }
        buffer.deallocate()
        demuxer.finish { sink.handle($0) }
    } else {
        do {
            let file = try FileStreamer(path: inputPath)
            fileSize = try file.size()
            // The next chunk is read on a second thread while this one is scanned.
            try PrefetchReader.read(file, bufferSize: readSize) { chunk in
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
    exit(demuxer.statistics.hasErrors ? 1 : 0)
}

inspect(options, inputPath: inputPath)
