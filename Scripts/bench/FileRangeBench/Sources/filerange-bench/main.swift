// Reads a file with FileStreamer in 64 KiB blocks, sequentially or at random block-aligned offsets, and prints
// the bytes read and the seconds taken as "BYTES SECONDS".
//
// Usage: filerange-bench sequential|random FILE
import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func seconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

let arguments = CommandLine.arguments
guard arguments.count == 3, ["sequential", "random"].contains(arguments[1]) else {
    print("usage: filerange-bench sequential|random FILE")
    exit(64)
}
do {
    let streamer = try FileStreamer(path: arguments[2])
    let size = try streamer.size()
    let block = 64 << 10
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: block, alignment: 4096)
    defer { buffer.deallocate() }
    var total: UInt64 = 0
    var checksum: UInt8 = 0
    let start = seconds()
    if arguments[1] == "sequential" {
        var offset: UInt64 = 0
        while offset < size {
            let count = try streamer.read(into: buffer, at: offset)
            if count == 0 { break }
            checksum ^= buffer[count - 1]
            offset += UInt64(count)
            total += UInt64(count)
        }
    } else {
        let blocks = size / UInt64(block)
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        for _ in 0..<blocks {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            let count = try streamer.read(into: buffer, at: (state % blocks) * UInt64(block))
            checksum ^= buffer[max(0, count - 1)]
            total += UInt64(count)
        }
    }
    let elapsed = seconds() - start
    print("\(total) \(elapsed) \(checksum)")
} catch {
    print("error: \(error)")
    exit(1)
}
