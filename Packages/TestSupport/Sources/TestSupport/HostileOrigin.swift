// A hostile HTTP origin on a loopback socket for the tests of deadlines, budgets and fairness: it trickles, never
// ends, never answers and lies about lengths, chosen per request by the first segment of the path.
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A loopback origin whose behaviour the path picks:
/// - `/silent/…`: accepts and reads the request, never answers (the connection stays open until ``stop()``);
/// - `/trickle/<name>`: the body registered as `<name>` (``serve(_:_:)``), its head and body one byte every
///   ``trickleInterval`` seconds, with a true Content-Length;
/// - `/endless/…`: `200 OK` with no length, zeros as fast as the reader takes them, never ending;
/// - `/huge/<n>`: `200 OK` with `Content-Length: n` and n bytes of a repeating pattern (Range requests answered
///   with 206 for `bytes=a-b` and `bytes=a-`);
/// - `/lie/<n>`: `Content-Length: n`, then half of it, then nothing more (the connection stays open);
/// - `/stall/<n>`: the head of `/huge/<n>` (200, or 206 for a Range) at once, then no body byte ever;
/// - `/drip/<n>`: the head of `/huge/<n>` at once, then its body one byte every ``trickleInterval`` seconds;
/// - anything else: the body registered under the whole path at once (404 when none).
/// A request target in absolute form (`http://host/path`, as sent to a proxy) is taken by its path.
/// One thread per connection; ``requests`` counts requests per first path segment.
public final class HostileOrigin: Sendable {
    public let port: UInt16
    private let listener: Int32
    private let bodies = Locked<[String: [UInt8]]>([:])
    private let counts = Locked<[String: Int]>([:])
    private let open = Locked<[Int32]>([])
    private let stopped = Locked(false)
    /// Seconds between two bytes of a trickled answer.
    public let trickleInterval: Double

    /// The pattern `/huge/` serves (byte i is i mod 251) from every phase: a block of ``hugeBlock`` bytes starting
    /// at offset o is `hugeReference[o % 251 ..< o % 251 + hugeBlock]`.
    private static let hugeReference: [UInt8] = (0..<(hugeBlock + 251)).map { UInt8($0 % 251) }
    /// 251 × 260 bytes (about 64 KiB), a whole number of periods, so every block of a body starts at its own phase.
    private static let hugeBlock = 251 * 260

    /// Whether `bytes` are what `/huge/` serves from `offset` on, compared a block at a time (`memcmp`), so that a
    /// check of megabytes is quick even in a debug build and holds no cooperative thread for long.
    public static func isHugeBody(_ bytes: [UInt8], from offset: Int = 0) -> Bool {
        hugeReference.withUnsafeBytes { reference in
            bytes.withUnsafeBytes { body in
                var start = 0
                while start < body.count {
                    let length = min(hugeBlock, body.count - start)
                    let phase = (offset + start) % 251
                    guard memcmp(body.baseAddress! + start, reference.baseAddress! + phase, length) == 0 else {
                        return false
                    }
                    start += length
                }
                return true
            }
        }
    }

    public init(trickleInterval: Double = 1) throws {
        let fd = LoopbackTCP.listener(backlog: 512)
        guard fd >= 0 else { throw POSIXError(.EADDRINUSE) }
        listener = fd
        port = LoopbackTCP.localPort(fd)
        self.trickleInterval = trickleInterval
        LoopbackTCP.serveConnections(on: fd) { [self] client in
            open.withLock { $0.append(client) }
            serve(client)
            open.withLock { list in list.removeAll { $0 == client } }
            close(client)
        }
    }

    /// `http://127.0.0.1:<port><path>`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Registers the body served at `path` (and at `/trickle<path>` one byte at a time).
    public func serve(_ path: String, _ body: [UInt8]) { bodies.withLock { $0[path] = body } }

    /// Requests received whose path starts with `/<kind>/` (`silent`, `trickle`, …; `other` for the rest).
    public func requests(_ kind: String) -> Int { counts.withLock { $0[kind] ?? 0 } }

    /// Stops accepting and shuts every connection down. Each descriptor is closed by the thread that uses it, once
    /// it returns, so that no thread of this origin reads or writes a number the system has handed to another socket.
    public func stop() {
        guard
            stopped.withLock({ s -> Bool in
                defer { s = true }
                return !s
            })
        else { return }
        LoopbackTCP.stopServing(listener)
        open.withLock { list in
            for fd in list { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    deinit { stop() }

    private func serve(_ client: Int32) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        while !stopped.withLock({ $0 }) {
            var end: Range<String.Index>?
            while end == nil {
                end = String(decoding: pending, as: UTF8.self).range(of: "\r\n\r\n")
                if end != nil { break }
                let n = recv(client, &buffer, buffer.count, 0)
                if n <= 0 { return }
                pending += buffer[0..<n]
            }
            let text = String(decoding: pending, as: UTF8.self)
            guard let end else { return }
            pending = Array(text[end.upperBound...].utf8)
            let head = String(text[..<end.lowerBound])
            var path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            if path.lowercased().hasPrefix("http://") || path.lowercased().hasPrefix("https://") {
                let rest = path.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
                path = rest.count == 4 ? "/" + rest[3] : "/"
            }
            // The query plays no part in the route.
            let route = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let parts = route.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            let kind = parts.first ?? ""
            let known = ["silent", "trickle", "endless", "huge", "lie", "stall", "drip"].contains(kind)
            counts.withLock { $0[known ? kind : "other", default: 0] += 1 }
            switch kind {
            case "silent":
                while !stopped.withLock({ $0 }) {
                    let n = recv(client, &buffer, buffer.count, 0)
                    if n <= 0 { return }
                }
                return
            case "trickle":
                let name = "/" + parts.dropFirst().joined(separator: "/")
                let body = bodies.withLock { $0[name] } ?? []
                let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
                for byte in answer {
                    guard write([byte], to: client) else { return }
                    // blocks: the origin's connection thread
                    Thread.sleep(forTimeInterval: trickleInterval)
                }
            case "endless":
                guard write(Array("HTTP/1.1 200 OK\r\nContent-Type: video/mp2t\r\n\r\n".utf8), to: client) else {
                    return
                }
                let zeros = [UInt8](repeating: 0, count: 64 << 10)
                while write(zeros, to: client) {}
                return
            case "stall", "drip":
                let size = parts.dropFirst().first.flatMap { Int($0) } ?? 1000
                let (status, range) = Self.range(head, size: size)
                var answer = "HTTP/1.1 \(status)\r\nContent-Length: \(range.count)\r\nAccept-Ranges: bytes\r\n"
                if status.hasPrefix("206") {
                    answer += "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)\r\n"
                }
                guard write(Array((answer + "\r\n").utf8), to: client) else { return }
                if kind == "drip" {
                    for offset in range {
                        // blocks: the origin's connection thread
                        Thread.sleep(forTimeInterval: trickleInterval)
                        guard !stopped.withLock({ $0 }), write([UInt8(truncatingIfNeeded: offset % 251)], to: client)
                        else { return }
                    }
                    continue
                }
                while !stopped.withLock({ $0 }) {
                    let n = recv(client, &buffer, buffer.count, 0)
                    if n <= 0 { return }
                }
                return
            case "huge":
                let size = parts.dropFirst().first.flatMap { Int($0) } ?? 0
                let (status, range) = Self.range(head, size: size)
                var answer = "HTTP/1.1 \(status)\r\nContent-Length: \(range.count)\r\nAccept-Ranges: bytes\r\n"
                if status.hasPrefix("206") {
                    answer += "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)\r\n"
                }
                guard write(Array((answer + "\r\n").utf8), to: client) else { return }
                var offset = range.lowerBound
                while offset < range.upperBound {
                    let n = min(Self.hugeBlock, range.upperBound - offset)
                    let phase = offset % 251
                    guard write(Array(Self.hugeReference[phase..<phase + n]), to: client) else { return }
                    offset += n
                }
            case "lie":
                let size = parts.dropFirst().first.flatMap { Int($0) } ?? 1000
                let answer = "HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n"
                guard write(Array(answer.utf8) + [UInt8](repeating: 0x47, count: size / 2), to: client) else {
                    return
                }
                while !stopped.withLock({ $0 }) {
                    let n = recv(client, &buffer, buffer.count, 0)
                    if n <= 0 { return }
                }
                return
            default:
                if let body = bodies.withLock({ $0[path] }) {
                    let answer = "HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n"
                    guard write(Array(answer.utf8) + body, to: client) else { return }
                } else {
                    guard write(Array("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8), to: client) else {
                        return
                    }
                }
            }
        }
    }

    /// The status and byte range for a request head on a body of `size` bytes.
    private static func range(_ head: String, size: Int) -> (String, Range<Int>) {
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("range: bytes=") {
            let spec = line.dropFirst("range: bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
            guard spec.count == 2, let start = Int(spec[0]), start < size else { break }
            let last = Int(spec[1]).map { min($0, size - 1) } ?? size - 1
            guard last >= start else { break }
            return ("206 Partial Content", start..<(last + 1))
        }
        return ("200 OK", 0..<size)
    }

    private func write(_ bytes: [UInt8], to client: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes {
                send(client, $0.baseAddress.map { $0 + offset }, $0.count - offset, LoopbackTCP.sendFlags)
            }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }
}

extension HostileOrigin {
    /// The threads of process `pid` now (from /proc on Linux; nil on Darwin, which has no /proc).
    public static func threadCount(of pid: Int32) -> Int? {
        #if os(Linux)
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"))?.count
        #else
            nil
        #endif
    }
}
