// File and standard input reading with a size cap, and resource figures for --benchmark (URLs: Fetch.swift;
// output, time and JSON: the CLI toolkit).
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

enum InputError: Error {
    case unreadable(String)
}

enum IO {
    /// The largest input accepted (matches PlaylistLimits.default.maxBytes).
    static let maxBytes = 64 << 20

    static func readFile(_ path: String, maxBytes: Int = IO.maxBytes) throws(InputError) -> [UInt8] {
        let fd = path == "-" ? 0 : open(path, O_RDONLY)
        guard fd >= 0 else { throw .unreadable("\(path): \(String(cString: strerror(errno)))") }
        defer { if fd != 0 { close(fd) } }
        return try readAll(fd, name: path, maxBytes: maxBytes)
    }

    static func readAll(_ fd: Int32, name: String, maxBytes: Int) throws(InputError) -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .unreadable("\(name): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
            if out.count > maxBytes { throw .unreadable("\(name): larger than \(maxBytes) bytes") }
        }
        return out
    }

    /// User plus system CPU time of this process, in seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
            getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return user + system
    }

    /// Peak resident set size in kilobytes.
    static func peakRSSKilobytes() -> Int {
        var usage = rusage()
        #if canImport(Glibc)
            getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        #if canImport(Darwin)
            return Int(usage.ru_maxrss) / 1024
        #else
            return Int(usage.ru_maxrss)
        #endif
    }

}
