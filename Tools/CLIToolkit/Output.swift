// Writing to standard output and standard error: whole writes (EINTR retried), buffered output for large reports,
// the `Error: ` line, and a monotonic clock for timings.
import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Output to file descriptors.
package enum Output {
    /// Writes all of `bytes` to `fd` (1: stdout), retrying interrupted writes; stops quietly if the reader went away.
    package static func write(bytes: some Collection<UInt8>, to fd: Int32 = 1) {
        let array = Array(bytes)
        var offset = 0
        array.withUnsafeBytes { raw in
            while offset < raw.count {
                let count: Int
                do {
                    count = try retryingOnInterrupt {
                        systemWrite(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset)
                    }
                } catch {
                    return
                }
                if count <= 0 { return }
                offset += count
            }
        }
    }

    /// Writes `text` as UTF-8 to `fd`.
    package static func write(_ text: String, to fd: Int32 = 1) { write(bytes: Array(text.utf8), to: fd) }

    /// Writes `text` and a line feed to `fd`, in one write (a reading process sees the whole line at once).
    package static func line(_ text: String, to fd: Int32 = 1) { write(text + "\n", to: fd) }

    /// Writes a line to standard error, its control characters shown (``printable(_:)``).
    package static func log(_ text: String) { line(printable(text), to: 2) }

    /// Writes `Error: message` on standard error, its control characters shown (``printable(_:)``).
    package static func error(_ message: String) { line("Error: \(printable(message))", to: 2) }

    /// `text` with the control characters a terminal would act on shown as `\xNN`: C0 other than tab and line feed
    /// (ESC, CR, NUL...), DEL and C1 (U+0080-U+009F, CSI among them). Log and error lines quote what remote
    /// origins and local clients sent (URLs, paths); none of it may move the cursor, recolour or retitle the
    /// operator's terminal, or overwrite a line.
    package static func printable(_ text: String) -> String {
        let acts = { (v: UInt32) -> Bool in (v < 0x20 && v != 0x09 && v != 0x0A) || (v >= 0x7F && v <= 0x9F) }
        guard text.unicodeScalars.contains(where: { acts($0.value) }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        let digits = Array("0123456789abcdef")
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if acts(v) {
                out += "\\x"
                out.append(digits[Int(v >> 4)])
                out.append(digits[Int(v & 0x0F)])
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Prints `Error: message` on standard error and exits with `status`.
    package static func fail(_ message: String, status: Int32) -> Never {
        error(message)
        exit(status)
    }
}

/// The POSIX write(2), named apart from ``Output/write(_:to:)``.
private func systemWrite(_ fd: Int32, _ pointer: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, pointer, count) }

/// Collects output bytes and writes them to a descriptor in large blocks.
package struct OutputBuffer {
    package let fd: Int32
    package var bytes: [UInt8] = []

    package init(fd: Int32) {
        self.fd = fd
        bytes.reserveCapacity(1 << 20)
    }

    package mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    /// Appends a literal without going through String.
    package mutating func append(literal text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    package mutating func append(byte: UInt8) { bytes.append(byte) }

    /// Writes the bytes once a megabyte has gathered.
    package mutating func flushIfLarge() {
        if bytes.count >= 1 << 20 { flush() }
    }

    package mutating func flush() {
        Output.write(bytes: bytes, to: fd)
        bytes.removeAll(keepingCapacity: true)
    }
}

/// Time for measurements.
package enum MonotonicClock {
    /// CLOCK_MONOTONIC in nanoseconds.
    package static func nanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// CLOCK_MONOTONIC in seconds.
    package static func seconds() -> Double { Double(nanoseconds()) / 1e9 }
}

/// What this process has used, for benchmark reports.
package enum ProcessUsage {
    /// User plus system CPU time of this process, in seconds.
    package static func cpuSeconds() -> Double {
        let usage = current()
        let user = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        let system = Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return user + system
    }

    /// Peak resident set size in kilobytes.
    package static func peakRSSKilobytes() -> Int {
        #if canImport(Darwin)
            return Int(current().ru_maxrss) / 1024
        #else
            return Int(current().ru_maxrss)
        #endif
    }

    private static func current() -> rusage {
        var usage = rusage()
        #if canImport(Glibc)
            getrusage(RUSAGE_SELF.rawValue, &usage)
        #else
            getrusage(RUSAGE_SELF, &usage)
        #endif
        return usage
    }
}
