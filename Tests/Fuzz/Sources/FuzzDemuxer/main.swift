// Fuzzes the streaming demuxer: the input is demuxed in one shot and again in chunks whose sizes come from the
// input's own bytes; both must give the same events, and nothing may trap.
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
}

runFuzzer(fuzzOne)
