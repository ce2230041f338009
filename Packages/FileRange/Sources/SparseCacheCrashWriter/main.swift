// A child process for the crash-safety test of SparseRangeCache: it writes pseudo-random ranges of a known byte
// pattern into a cache, committing as it goes, until the test kills it with SIGKILL at a random moment. It prints
// "ready" once its first write is durable.
//
// Usage: SparseCacheCrashWriter DATA-PATH SEED
import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The byte every writer puts at `offset`; never zero, so a hole in a sparse file can never pass for data.
func patternByte(at offset: UInt64) -> UInt8 {
    UInt8(truncatingIfNeeded: (offset &* 0x9E37_79B1) >> 11) | 1
}

// From argc/argv, which every standard library declares read-only (the iOS 16 and 17 SDKs declare
// `CommandLine.arguments` a mutable static, which Swift 6 refuses to read); argv[0] included.
let arguments = (0..<Int(CommandLine.argc)).map { CommandLine.unsafeArgv[$0].map { String(cString: $0) } ?? "" }
guard arguments.count == 3, let seed = UInt64(arguments[2]) else {
    print("usage: SparseCacheCrashWriter DATA-PATH SEED")
    exit(64)
}
do {
    let cache = try SparseRangeCache(dataPath: arguments[1])
    var state = seed | 1
    func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
    var announced = false
    while true {
        let offset = next() % (4 << 20)
        let length = Int(next() % (256 << 10)) + 1
        let bytes = (0..<length).map { patternByte(at: offset + UInt64($0)) }
        // Every third write is left uncommitted for a while, to exercise batching; the first is always committed,
        // and only then does the writer say it is ready to be killed.
        try cache.write(bytes, at: offset, commit: !announced || next() % 3 != 0)
        if !announced {
            announced = true
            let ready = Array("ready\n".utf8)
            _ = ready.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        }
    }
} catch {
    print("error: \(error)")
    exit(1)
}
