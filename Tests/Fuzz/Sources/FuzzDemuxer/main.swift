// Fuzzes the streaming demuxer: the input is demuxed in one shot and again in chunks whose sizes come from the
// input's own bytes; both must give the same events, and nothing may trap. The index's packet runs (the served
// 188-byte view of 188/192/204-byte packets) must be the same either way, follow on, and map every served byte to a
// packet whose 188 bytes start with a sync byte; the packets per PID per keyframe span are the same either way and
// add up to what a program filter keeps from the runs; the parts of a joined recording are the same either way,
// in order and tiling the timeline, and remapping each onto the first writes whole packets; reading the input through
// a part reader (as fragmented MP4 and remux do) keeps its length and gives the same bytes in pieces as in one read;
// the bytes read as a sidecar index give a value or a typed error.
import FuzzSupport
import MPEGTS

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    var oneShot = Demuxer(options: DemuxOptions(scanKeyframes: true, reassemblePES: true))
    var expected: [DemuxEvent] = []
    oneShot.feed(bytes) { expected.append($0) }
    oneShot.finish { expected.append($0) }
    var chunked = Demuxer(options: DemuxOptions(scanKeyframes: true, reassemblePES: true))
    var events: [DemuxEvent] = []
    var position = 0
    var step = 0
    while position < bytes.count {
        let size = 1 + Int(bytes[step % bytes.count]) * 3
        let end = min(bytes.count, position + size)
        chunked.feed(UnsafeRawBufferPointer(rebasing: bytes[position..<end])) { events.append($0) }
        position = end
        step += 1
    }
    chunked.finish { events.append($0) }
    if events != expected {
        print("chunked demuxing differs from one shot")
        abort()
    }
    for case .section(let section, _, _) in events where section.tableID == 0xFC {
        _ = try? SpliceInfoSection(bytes: section.bytes)
    }
    for case .pesPacket(let packet) in events {
        _ = CodecDetails.parse(codec: .h264, payload: packet.payload)
        _ = CodecDetails.parse(codec: .hevc, payload: packet.payload)
    }
    checkLayout(bytes)
    _ = try? TSIndex(serialized: Array(bytes))
}

func checkLayout(_ bytes: UnsafeRawBufferPointer) {
    var oneShot = TSIndexer()
    oneShot.consume(bytes)
    oneShot.finish()
    var chunked = TSIndexer()
    var position = 0
    var step = 0
    while position < bytes.count {
        let end = min(bytes.count, position + 1 + Int(bytes[(step * 7) % bytes.count]) * 5)
        chunked.consume(UnsafeRawBufferPointer(rebasing: bytes[position..<end]))
        position = end
        step += 1
    }
    chunked.finish()
    let size = UInt64(bytes.count)
    let index = oneShot.index(fileSize: size, modificationTime: (0, 0))
    let layout = index.layout
    let chunkedIndex = chunked.index(fileSize: size, modificationTime: (0, 0))
    guard layout == chunkedIndex.layout else {
        print("chunked indexing gives other packet runs than one shot")
        abort()
    }
    guard index.spanPacketCounts == chunkedIndex.spanPacketCounts,
        index.spanPacketCounts.isEmpty || index.spanPacketCounts.count == index.keyframes.count + 1
    else {
        print("chunked indexing gives other span counts than one shot, or not one a keyframe span")
        abort()
    }
    let spanFilter = ProgramFilter(programNumber: 1, pmtPID: 0x1000, pids: [0x100, 0x101])
    if !index.spanPacketCounts.isEmpty {
        var keptByRuns = 0
        var scratch: [UInt8] = []
        for run in layout.runs {
            let start = Int(run.fileOffset)
            let end = start + Int(run.packets) * run.packetSize
            keptByRuns += spanFilter.append(
                UnsafeRawBufferPointer(rebasing: bytes[start..<end]), packetSize: run.packetSize,
                syncOffset: run.syncOffset, to: &scratch)
            scratch.removeAll(keepingCapacity: true)
        }
        let counted = index.spanPacketCounts.reduce(UInt64(0)) { $0 + $1.packets(keptBy: spanFilter) }
        guard counted == UInt64(keptByRuns) else {
            print("the span counts give \(counted) filtered packets, the runs \(keptByRuns)")
            abort()
        }
    }
    // The parts of a joined recording: the same in chunks, in order, tiling the timeline; each later part remapped
    // onto the first writes whole packets.
    guard index.parts == chunkedIndex.parts,
        zip(index.parts, index.parts.dropFirst()).allSatisfy({ $0.offset <= $1.offset && $0.endTicks == $1.startTicks })
    else {
        print("parts differ in chunks, or are out of order: \(index.parts)")
        abort()
    }
    if let first = index.parts.first {
        for (number, part) in index.parts.enumerated() {
            var remapped: [UInt8] = []
            let written = PartRemapper(from: part, to: first, version: number).append(
                bytes, packetSize: layout.packetSize, syncOffset: layout.syncOffset, to: &remapped)
            guard remapped.count == written * 188 else {
                print("the part remapper wrote \(remapped.count) bytes for \(written) packets")
                abort()
            }
        }
    }
    // Fragmented MP4 and remux read a joined recording through a part reader: a read of the whole input keeps its
    // length, and reads of any offset and length (here in steps of 1 to 4096 bytes) give the whole read's bytes.
    if let reader = PartReader(parts: index.parts, packetSize: index.packetSize) {
        let read = { (offset: UInt64, length: Int) -> [UInt8] in
            guard offset < size, length > 0 else { return [] }
            return Array(bytes[Int(offset)..<Int(min(size, offset + UInt64(length)))])
        }
        let whole = reader.read(at: 0, length: bytes.count, from: read)
        guard whole.count == bytes.count else {
            print("the part reader read \(whole.count) bytes of \(bytes.count)")
            abort()
        }
        var offset = 0
        var round = 1
        while offset < bytes.count {
            let length = (round * 977) % 4096 + 1
            let piece = reader.read(at: UInt64(offset), length: length, from: read)
            guard piece == Array(whole[offset..<min(whole.count, offset + length)]) else {
                print("the part reader's \(length) bytes at \(offset) differ from the whole read's")
                abort()
            }
            offset += length
            round += 1
        }
    }
    // A program filter over the input's packets never traps and writes whole packets.
    var filtered: [UInt8] = []
    let kept = ProgramFilter(programNumber: 1, pmtPID: 0x1000, pids: [0x100, 0x101]).append(
        bytes, packetSize: layout.packetSize, syncOffset: layout.syncOffset, to: &filtered)
    guard filtered.count == kept * 188 else {
        print("the program filter wrote \(filtered.count) bytes for \(kept) packets")
        abort()
    }
    var served: UInt64 = 0
    for run in layout.runs {
        guard run.servedOffset == served, run.packets > 0,
            run.fileOffset + run.packets * UInt64(run.packetSize) <= size
        else {
            print("packet runs do not follow on or lie outside the input: \(layout.runs)")
            abort()
        }
        served += run.packets * 188
        var packet: UInt64 = 0
        while packet < run.packets {
            let fileOffset = run.fileOffset + packet * UInt64(run.packetSize)
            guard layout.servedOffset(ofFileOffset: fileOffset) == run.servedOffset + packet * 188,
                let found = layout.locate(servedOffset: run.servedOffset + packet * 188),
                found.packetOffset == fileOffset, found.within == 0,
                found.packetSize == run.packetSize, bytes[Int(fileOffset) + run.syncOffset] == 0x47
            else {
                print("served packet \(packet) of run \(run) does not map to a packet that starts with 0x47")
                abort()
            }
            packet += 1
        }
    }
}

runFuzzer(fuzzOne)
