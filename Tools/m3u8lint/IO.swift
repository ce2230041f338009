// File, standard input and URL reading with size and time caps; output helpers.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

enum InputError: Error {
    case unreadable(String)
}

/// The POSIX write(2), named apart from IO.write.
private func systemWrite(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int) -> Int { write(fd, p, n) }

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

    /// The marker curl writes after the body, followed by the URL it ended at (after redirects).
    private static let effectiveURLMarker: [UInt8] = Array("\n\u{1}m3u8lint-effective-url:".utf8)

    /// Fetches an http(s) URL with curl (redirects bounded, size and time capped, http/https only).
    /// Returns the body and the URL after redirects.
    static func fetch(_ url: String, maxBytes: Int = IO.maxBytes, seconds: Int = 20) throws(InputError) -> (
        body: [UInt8], effectiveURL: String
    ) {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw .unreadable("\(url): cannot create a pipe") }
        let args = [
            "curl", "-sS", "-f", "-L", "--max-redirs", "5", "--proto", "=http,https", "--proto-redir", "=http,https",
            "--max-time", String(seconds), "--max-filesize", String(maxBytes), "--write-out",
            "\n\u{1}m3u8lint-effective-url:%{url_effective}", "--", url,
        ]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipeFDs[0])
        // curl's own messages are replaced by ours.
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var cArgs: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) }
        cArgs.append(nil)
        defer { for p in cArgs { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, "curl", &actions, nil, cArgs, environ)
        close(pipeFDs[1])
        guard rc == 0 else {
            close(pipeFDs[0])
            throw .unreadable("\(url): cannot run curl (\(String(cString: strerror(rc))))")
        }
        let body: [UInt8]
        do {
            body = try readAll(pipeFDs[0], name: url, maxBytes: maxBytes + 4096)
        } catch {
            close(pipeFDs[0])
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw error
        }
        close(pipeFDs[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else { throw .unreadable("\(url): fetch failed (curl status \(status >> 8))") }
        // Split off what --write-out appended.
        let marker = effectiveURLMarker
        var cut = body.count - marker.count
        while cut >= 0 {
            if body[cut..<(cut + marker.count)].elementsEqual(marker) { break }
            cut -= 1
        }
        guard cut >= 0 else { return (body, url) }
        let effective = String(decoding: body[(cut + marker.count)...], as: UTF8.self)
        return (Array(body[..<cut]), effective.isEmpty ? url : effective)
    }

    static func write(_ bytes: [UInt8], to fd: Int32 = 1) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { systemWrite(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += n
        }
    }
    static func print(_ s: String, to fd: Int32 = 1) { write(Array((s + "\n").utf8), to: fd) }

    static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
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

    static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) != 0 }
}
