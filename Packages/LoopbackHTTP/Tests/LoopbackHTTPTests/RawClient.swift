import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A parsed response read from a raw socket.
struct WireResponse: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    var bodyText: String { String(decoding: body, as: UTF8.self) }
    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    var fieldLines: [String] { headers.filter { $0.0 != "Date" }.map { "\($0.0): \($0.1)" } }
}

/// A tiny HTTP/1.1 client on a raw blocking TCP socket, for the socket-level tests. Its reads wait in TestSupport's
/// `blocking`, on a thread of their own (not FileRange's pool, which the server needs, nor a cooperative thread); one
/// task uses a client at a time.
final class RawClient: @unchecked Sendable {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16, host: String = "127.0.0.1") throws {
        let isIPv6 = host.contains(":")
        #if canImport(Glibc)
            let streamType = Int32(SOCK_STREAM.rawValue)
        #else
            let streamType = SOCK_STREAM
        #endif
        fd = socket(isIPv6 ? AF_INET6 : AF_INET, streamType, 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        #if canImport(Darwin)
            // Darwin has no MSG_NOSIGNAL: a write after the server closed would otherwise kill the test process.
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        let result: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard result == 0 else {
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    private var closed = false

    deinit { if !closed { close(fd) } }

    /// Closes with a reset (`SO_LINGER` 0), as a client that vanishes does.
    func reset() {
        guard !closed else { return }
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close(fd)
        closed = true
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc_send(fd, $0.baseAddress, $0.count) }
            if count <= 0 { return }
            offset += count
        }
    }

    /// Reads more bytes; false at end of file or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { return false }
        buffer += chunk[0..<count]
        return true
    }

    /// Whether the server closed the connection (reads to end of file; times out as false).
    func isClosedByPeer() async -> Bool {
        await blocking { self.isClosedByPeerNow() }
    }

    private func isClosedByPeerNow() -> Bool {
        while true {
            var byte: UInt8 = 0
            let count = recv(fd, &byte, 1, 0)
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
            buffer.append(byte)
        }
    }

    /// Reads one response. `head` tells that the request was HEAD (no body follows).
    func readResponse(head: Bool = false) async -> WireResponse? {
        await blocking { self.readResponseNow(head: head) }
    }

    private func readResponseNow(head: Bool) -> WireResponse? {
        var end: Int?
        while end == nil {
            if let range = buffer.firstRange(of: Array("\r\n\r\n".utf8)) {
                end = range.upperBound
            } else if !fill() {
                return nil
            }
        }
        guard let headEnd = end else { return nil }
        let headText = String(decoding: buffer[0..<headEnd - 4], as: UTF8.self)
        buffer.removeFirst(headEnd)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0] == "HTTP/1.1", let status = Int(parts[1]) else { return nil }
        var headers: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.append(
                (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var response = WireResponse(status: status, headers: headers, body: [])
        if head || status == 204 || status == 304 { return response }
        if let length = response.header("Content-Length").flatMap(Int.init) {
            while buffer.count < length { if !fill() { return nil } }
            response.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else if response.header("Transfer-Encoding") == "chunked" {
            while true {
                var lineEnd: Int?
                while lineEnd == nil {
                    if let range = buffer.firstRange(of: Array("\r\n".utf8)) {
                        lineEnd = range.lowerBound
                    } else if !fill() {
                        return nil
                    }
                }
                guard let sizeEnd = lineEnd,
                    let size = Int(String(decoding: buffer[0..<sizeEnd], as: UTF8.self), radix: 16)
                else {
                    return nil
                }
                buffer.removeFirst(sizeEnd + 2)
                while buffer.count < size + 2 { if !fill() { return nil } }
                response.body += buffer[0..<size]
                buffer.removeFirst(size + 2)
                if size == 0 { break }
            }
        } else {
            while fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }
}

private func Glibc_send(_ fd: Int32, _ pointer: UnsafeRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.send(fd, pointer, count, Int32(MSG_NOSIGNAL))
    #else
        Darwin.send(fd, pointer, count, 0)
    #endif
}

/// Open socket descriptors of this process with `port` at either end: the listener, the server's accepted
/// connections and the test's clients. Sockets of anything else in the process (other suites' servers, a URL
/// session's idle connections) open and close on their own schedule, so they are not counted.
func openDescriptorCount(port: UInt16) -> Int {
    openDescriptors().filter { fd in
        isSocket(fd) && (socketPort(fd, peer: false) == port || socketPort(fd, peer: true) == port)
    }.count
}

/// Open descriptors of this process on the file at `path`.
func openDescriptorCount(path: String) -> Int {
    let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    return openDescriptors().filter { descriptorPath($0) == target }.count
}

/// The descriptors open in this process: every number below the descriptor limit that `fcntl` knows.
private func openDescriptors() -> [Int32] {
    (0..<getdtablesize()).filter { fcntl($0, F_GETFD) >= 0 }
}

private func isSocket(_ fd: Int32) -> Bool {
    var info = stat()
    return fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
}

/// The path of the file open at `fd`: `/proc/self/fd` on Linux, `F_GETPATH` on Darwin.
private func descriptorPath(_ fd: Int32) -> String? {
    #if canImport(Darwin)
        var buffer = [CChar](repeating: 0, count: Int(MAXPATHLEN))
        guard fcntl(fd, F_GETPATH, &buffer) != -1 else { return nil }
        return buffer.withUnsafeBufferPointer { $0.baseAddress.map { String(cString: $0) } }
    #else
        return try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
    #endif
}

private func socketPort(_ fd: Int32, peer: Bool) -> UInt16? {
    var address = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let result = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
            peer ? getpeername(fd, socketAddress, &length) : getsockname(fd, socketAddress, &length)
        }
    }
    guard result == 0 else { return nil }
    switch Int32(address.ss_family) {
    case AF_INET:
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    case AF_INET6:
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
        }
    default:
        return nil
    }
}
