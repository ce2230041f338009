import FileRange

extension TSIndex {
    /// The sidecar path for a media file: the file's path with `.tsindex` appended.
    public static func sidecarPath(for path: String) -> String { path + ".tsindex" }

    /// The index as a small line-oriented text document (version 4: keyframe ticks run on across time stamp resets,
    /// the packet runs, the recording's parts, and the packets per PID of each keyframe span are kept (one `n` line a
    /// span, as `PID:count` pairs); an older sidecar, which may lack runs, parts or counts, is refused and the file
    /// indexed again).
    public func serialized() -> [UInt8] {
        func optional(_ value: (some CustomStringConvertible)?) -> String { value.map { "\($0)" } ?? "-" }
        var lines = ["tsindex 4"]
        lines.append("size \(fileSize)")
        lines.append("mtime \(modificationSeconds) \(modificationNanoseconds)")
        lines.append("bytes \(bytesIndexed) complete \(isComplete ? 1 : 0) packetSize \(packetSize)")
        lines.append("first \(optional(firstPTS?.value)) duration \(optional(durationTicks))")
        lines.append("keyframePID \(optional(keyframePID))")
        for program in programs {
            lines.append(
                "program \(program.programNumber) \(program.pmtPID) \(program.pcrPID) "
                    + program.streamPIDs.map { "\($0)" }.joined(separator: ","))
        }
        for stream in streams {
            lines.append(
                "stream \(stream.pid) \(stream.programNumber) \(stream.streamType.rawValue) \(stream.codec.name) "
                    + "\(stream.codec.kind.rawValue) \(stream.pesCount) \(optional(stream.firstPTS?.value)) "
                    + "\(optional(stream.lastPTS?.value)) \(optional(stream.durationTicks))")
        }
        for run in packetRuns {
            lines.append("run \(run.fileOffset) \(run.servedOffset) \(run.packets) \(run.packetSize)")
        }
        for part in parts {
            lines.append(
                "part \(part.offset) \(part.cause.rawValue) \(part.programNumber) \(part.pmtPID) \(part.pcrPID) "
                    + "\(optional(part.keyframePID)) \(part.startTicks) \(part.endTicks) "
                    + (part.streams.isEmpty
                        ? "-" : part.streams.map { "\($0.pid):\($0.streamType.rawValue)" }.joined(separator: ",")))
        }
        for keyframe in keyframes { lines.append("k \(keyframe.offset) \(keyframe.pts.value) \(keyframe.ticks)") }
        for span in spanPacketCounts {
            lines.append(
                span.isEmpty ? "n -" : "n " + span.pairs.map { "\($0.pid):\($0.count)" }.joined(separator: ","))
        }
        lines.append("end")
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// Reads an index written by ``serialized()``.
    public init(serialized bytes: [UInt8]) throws(TSFileError) {
        var lineNumber = 0
        func fail(_ detail: String) -> TSFileError {
            TSFileError(.invalidSidecar, offset: nil, "line \(lineNumber): \(detail)")
        }
        var size: UInt64?
        var seconds: Int64 = 0
        var nanoseconds: Int64 = 0
        var bytesIndexed: UInt64 = 0
        var complete = false
        var packetSize = 188
        var first: Timestamp?
        var duration: Int64?
        var keyframePID: UInt16?
        var programs: [Program] = []
        var streams: [Stream] = []
        var keyframes: [Keyframe] = []
        var runs: [PacketRun] = []
        var spans: [PIDPacketCounts] = []
        var parts: [RecordingPart] = []
        var ended = false
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        for line in lines where !line.isEmpty {
            lineNumber += 1
            let fields = line.split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) }
            func int<T: FixedWidthInteger>(_ index: Int, _: T.Type = T.self) throws(TSFileError) -> T {
                guard index < fields.count, let value = T(fields[index]) else { throw fail("field \(index)") }
                return value
            }
            func optionalInt<T: FixedWidthInteger>(_ index: Int, _: T.Type = T.self) throws(TSFileError) -> T? {
                guard index < fields.count else { throw fail("field \(index)") }
                if fields[index] == "-" { return nil }
                return try int(index)
            }
            func timestamp(_ index: Int) throws(TSFileError) -> Timestamp? {
                guard let value: UInt64 = try optionalInt(index) else { return nil }
                guard let stamp = Timestamp(exactly: value) else { throw fail("PTS out of range") }
                return stamp
            }
            guard let kind = fields.first else { continue }
            if lineNumber == 1 {
                guard fields == ["tsindex", "4"] else { throw fail("not a version 4 tsindex") }
                continue
            }
            switch kind {
            case "size": size = try int(1)
            case "mtime":
                seconds = try int(1)
                nanoseconds = try int(2)
            case "bytes":
                bytesIndexed = try int(1)
                complete = try int(3, Int.self) == 1
                packetSize = try int(5)
            case "first":
                first = try timestamp(1)
                duration = try optionalInt(3)
            case "keyframePID": keyframePID = try optionalInt(1)
            case "program":
                let pids = fields.count > 4 ? fields[4].split(separator: ",").compactMap { UInt16($0) } : []
                programs.append(
                    Program(programNumber: try int(1), pmtPID: try int(2), pcrPID: try int(3), streamPIDs: pids))
            case "stream":
                guard fields.count >= 10 else { throw fail("stream line") }
                let codecKind = Codec.Kind(rawValue: fields[5]) ?? .unknown
                streams.append(
                    Stream(
                        pid: try int(1), programNumber: try int(2), streamType: StreamType(rawValue: try int(3)),
                        codec: Codec(name: fields[4], kind: codecKind), pesCount: try int(6),
                        firstPTS: try timestamp(7), lastPTS: try timestamp(8), durationTicks: try optionalInt(9)))
            case "k":
                guard let pts = try timestamp(2) else { throw fail("keyframe without PTS") }
                keyframes.append(Keyframe(offset: try int(1), pts: pts, ticks: try int(3)))
            case "run":
                let run = PacketRun(
                    fileOffset: try int(1), servedOffset: try int(2), packets: try int(3), packetSize: try int(4))
                guard PacketSize(length: run.packetSize) != nil else { throw fail("packet size \(run.packetSize)") }
                let (end, overflow) = run.packets.multipliedReportingOverflow(by: 188)
                guard !overflow, run.servedOffset <= UInt64.max - end,
                    runs.last.map({ $0.servedOffset + $0.packets * 188 == run.servedOffset }) ?? (run.servedOffset == 0)
                else { throw fail("packet runs do not follow on") }
                runs.append(run)
            case "n":
                guard fields.count == 2 else { throw fail("span counts") }
                var pairs: [(pid: UInt16, count: UInt64)] = []
                if fields[1] != "-" {
                    for pair in fields[1].split(separator: ",", omittingEmptySubsequences: false) {
                        let parts = pair.split(separator: ":", omittingEmptySubsequences: false)
                        guard parts.count == 2, let pid = UInt16(parts[0]), pid < 0x2000, let count = UInt64(parts[1]),
                            count < 1 << 48
                        else { throw fail("span counts \(pair)") }
                        pairs.append((pid, count))
                    }
                }
                spans.append(PIDPacketCounts(pairs))
            case "part":
                guard fields.count == 10, let cause = RecordingPart.Cause(rawValue: try int(2)) else {
                    throw fail("part line")
                }
                var partStreams: [RecordingPart.Stream] = []
                if fields[9] != "-" {
                    for entry in fields[9].split(separator: ",") {
                        let pair = entry.split(separator: ":")
                        guard pair.count == 2, let pid = UInt16(pair[0]), pid < 0x2000, let type = UInt8(pair[1])
                        else { throw fail("part stream \(entry)") }
                        partStreams.append(.init(pid: pid, streamType: StreamType(rawValue: type)))
                    }
                }
                let part = RecordingPart(
                    offset: try int(1), cause: cause, programNumber: try int(3), pmtPID: try int(4),
                    pcrPID: try int(5), streams: partStreams, keyframePID: try optionalInt(6),
                    startTicks: try int(7), endTicks: try int(8))
                guard part.offset >= 0, parts.last.map({ $0.offset <= part.offset }) ?? true else {
                    throw fail("parts out of order")
                }
                parts.append(part)
            case "end": ended = true
            default: throw fail("unknown record \(kind)")
            }
        }
        guard ended, let size else { throw TSFileError(.invalidSidecar, "incomplete sidecar") }
        guard spans.isEmpty || spans.count == keyframes.count + 1 else {
            throw TSFileError(.invalidSidecar, "\(spans.count) span counts for \(keyframes.count) keyframes")
        }
        self.init(
            fileSize: size, modificationSeconds: seconds, modificationNanoseconds: nanoseconds,
            bytesIndexed: bytesIndexed, isComplete: complete, packetSize: packetSize, programs: programs,
            streams: streams, firstPTS: first, durationTicks: duration, keyframePID: keyframePID, keyframes: keyframes,
            packetRuns: runs, spanPacketCounts: spans, parts: parts)
    }

    /// Loads the sidecar of `path` when it exists and matches the file's current size and modification time.
    public static func loadSidecar(for path: String) -> TSIndex? {
        do {
            let media = try FileStreamer(path: path)
            defer { media.close() }
            let sidecar = try FileStreamer(path: sidecarPath(for: path))
            defer { sidecar.close() }
            let sidecarSize = try sidecar.size()
            guard sidecarSize < 256 << 20 else { return nil }
            let index = try TSIndex(serialized: try sidecar.read(at: 0, length: Int(sidecarSize)))
            let time = try media.modificationTime()
            guard index.fileSize == (try media.size()), index.modificationSeconds == time.seconds,
                index.modificationNanoseconds == time.nanoseconds
            else { return nil }
            return index
        } catch {
            return nil
        }
    }

    /// Writes the sidecar next to `path` atomically (FileRange's `writeFileAtomically`: a temporary file flushed and
    /// renamed over it), so that a crash never leaves a torn sidecar.
    public func saveSidecar(for path: String) throws(TSFileError) {
        let target = Self.sidecarPath(for: path)
        do {
            try writeFileAtomically(serialized(), to: target)
        } catch {
            throw TSFileError(.io, path: target, "cannot write the index sidecar: \(error)")
        }
    }
}
