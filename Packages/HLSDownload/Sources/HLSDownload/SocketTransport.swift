import Dispatch
import FileRange
import HLSPlaylist

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// HTTP/1.1 GET over POSIX sockets for `http://` URLs, with keep-alive connections reused per host and bodies
/// read in large chunks (up to ``chunkSize`` bytes per read, where URLSession on Linux delivers 16 KiB); `https://`
/// URLs, and redirects to them, go to a fallback transport (``URLSessionTransport`` by default).
///
/// Blocking socket calls run on dispatch queues, never on Swift's cooperative pool; cancelling the calling task
/// shuts the connection down, which ends a blocked read at once. A read that receives nothing for the stall
/// timeout fails with ``TransportError/Code/timedOut``.
public struct SocketTransport: DownloadTransport {
    private let pool: ConnectionPool
    private let fallback: (any DownloadTransport)?
    private let maxRedirects: Int
    private let followsRedirects: Bool
    /// The largest body chunk delivered at once.
    public let chunkSize: Int

    /// A transport whose reads time out after `stallTimeout` seconds without data, following at most
    /// `maxRedirects` redirects; `https://` goes to `fallback` (refused when nil). With `followsRedirects` false a
    /// redirect response is returned as it is, for a caller that checks each target itself. `refusesAddress` is
    /// asked about each numeric address a host resolves to, right before connecting to it: a refused address is
    /// never connected to, and a host with only refused addresses fails with
    /// ``TransportError/Code/addressRefused`` (the check is made on the addresses actually used, so a name that
    /// resolves differently from one lookup to the next cannot slip past it).
    public init(
        stallTimeout: Double = 20, maxRedirects: Int = 5, chunkSize: Int = 512 << 10,
        fallback: (any DownloadTransport)? = nil, followsRedirects: Bool = true,
        refusesAddress: (@Sendable (String) -> Bool)? = nil
    ) {
        self.pool = ConnectionPool(stallTimeout: max(0.01, stallTimeout), refusesAddress: refusesAddress)
        self.maxRedirects = max(0, maxRedirects)
        self.followsRedirects = followsRedirects
        self.chunkSize = max(4096, chunkSize)
        self.fallback = fallback
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        try await followingRedirects(request) { fallback, forwarded in
            var response = try await fallback.send(forwarded)
            if response.url == nil { response.url = forwarded.url }
            return response
        } exchange: { target, url in
            var response = try await exchange(target, headers: request.headers)
            response.url = url
            return (response, response.status, response.header("Location"))
        }
    }

    /// A small body whole (a playlist, a key): the request, the head and up to `maxBytes` of body are sent and
    /// read in one blocking call on the connection's queue, where ``send(_:)`` hands every chunk over separately.
    /// Redirects are followed as by ``send(_:)``; `https://` goes to the fallback. A longer body throws
    /// ``TransportError/Code/tooLarge``.
    public func fetch(_ request: TransportRequest, maxBytes: Int) async throws -> WholeResponse {
        try await followingRedirects(request) { fallback, forwarded in
            var response = try await WholeResponse(collecting: try await fallback.send(forwarded), maxBytes: maxBytes)
            if response.url == nil { response.url = forwarded.url }
            return response
        } exchange: { target, url in
            var response = try await exchangeWhole(target, headers: request.headers, maxBytes: maxBytes)
            response.url = url
            return (response, response.status, response.header("Location"))
        }
    }

    /// Runs `exchange` on each plain-http URL in turn, following redirects (when ``followsRedirects``) up to
    /// ``maxRedirects``, to http(s) targets only; an `https://` URL goes to the fallback through `secure`.
    private func followingRedirects<Response>(
        _ request: TransportRequest,
        secure: (any DownloadTransport, TransportRequest) async throws -> Response,
        exchange: (Target, String) async throws -> (Response, status: Int, location: String?)
    ) async throws -> Response {
        var url = request.url
        var redirects = 0
        while true {
            try Task.checkCancellation()
            let target = try Target(url)
            if target.secure {
                guard let fallback else { throw TransportError(.invalidURL, "https is not supported here: \(url)") }
                var forwarded = request
                forwarded.url = url
                return try await secure(fallback, forwarded)
            }
            let (response, status, location) = try await exchange(target, url)
            if followsRedirects, [301, 302, 303, 307, 308].contains(status), let location {
                redirects += 1
                guard redirects <= maxRedirects else {
                    throw TransportError(.tooManyRedirects, "redirect refused at \(url)")
                }
                let next = URIReference(location).resolved(against: URIReference(url)).description
                let scheme = URIReference(next).scheme?.lowercased()
                guard scheme == "http" || scheme == "https" else {
                    throw TransportError(.tooManyRedirects, "redirect refused at \(url)")
                }
                url = next
                continue
            }
            return response
        }
    }

    /// ``fetch(_:maxBytes:)`` without a task, for a caller already on a thread that may block (a dispatch queue's,
    /// never Swift's cooperative pool): the request, head and body in one blocking call on the calling thread, with
    /// no hand-off at all. Plain `http://` only, and no redirect is followed: nil for an `https://` URL (use
    /// ``fetch(_:maxBytes:)``); a redirect answer is returned as it is.
    public func fetchBlocking(_ request: TransportRequest, maxBytes: Int) throws(TransportError) -> WholeResponse? {
        let target = try Target(request.url)
        guard !target.secure else { return nil }
        let head = Self.requestHead(target, headers: request.headers)
        var reused = pool.take(target.key)
        while true {
            let connection: Connection
            if let reused { connection = reused } else { connection = try Connection.connect(target, pool: pool) }
            do throws(TransportError) {
                let (parsed, body) = try Self.whole(on: connection, head: head, maxBytes: maxBytes)
                settle(connection, after: parsed, key: target.key)
                return WholeResponse(status: parsed.status, headers: parsed.headers, body: body, url: request.url)
            } catch {
                connection.close()
                guard reused != nil, error.code == .connectionReset else { throw error }
                reused = nil
            }
        }
    }

    private func exchangeWhole(_ target: Target, headers: [HTTPHeaderField], maxBytes: Int) async throws
        -> WholeResponse
    {
        let head = Self.requestHead(target, headers: headers)
        return try await onPooledConnection(target) { connection in
            let (parsed, body) = try await Connection.run(connection) {
                () throws(TransportError) -> (ResponseHead, [UInt8]) in
                try Self.whole(on: connection, head: head, maxBytes: maxBytes)
            }
            settle(connection, after: parsed, key: target.key)
            return WholeResponse(status: parsed.status, headers: parsed.headers, body: body)
        }
    }

    /// Sends a request head and reads the whole answer (blocking).
    private static func whole(on connection: Connection, head: [UInt8], maxBytes: Int) throws(TransportError)
        -> (ResponseHead, [UInt8])
    {
        try connection.sendAll(head)
        let parsed = try connection.readHead()
        return (parsed, try BodyReader.readWhole(connection, framing: parsed.framing, maxBytes: maxBytes))
    }

    /// Returns a connection whose answer was read whole to the pool, or closes it when it cannot be reused.
    private func settle(_ connection: Connection, after parsed: ResponseHead, key: String) {
        if parsed.keepAlive && parsed.framing != .untilClose {
            pool.put(connection, key: key)
        } else {
            connection.close()
        }
    }

    /// One request on a pooled connection; the body is read later, chunk by chunk.
    private func exchange(_ target: Target, headers: [HTTPHeaderField]) async throws -> TransportResponse {
        let head = Self.requestHead(target, headers: headers)
        return try await onPooledConnection(target) { connection in
            let parsed = try await Connection.run(connection) { () throws(TransportError) -> ResponseHead in
                try connection.sendAll(head)
                return try connection.readHead()
            }
            let reader = BodyReader(
                connection: connection, framing: parsed.framing, reusable: parsed.keepAlive, pool: pool,
                key: target.key, chunkSize: chunkSize)
            let body = AsyncThrowingStream<[UInt8], any Error>(unfolding: { try await reader.next() })
            if parsed.framing == .none { reader.finishIfEmpty() }
            var socketBody: SocketBody?
            if case .length(let length) = parsed.framing, length > 0 { socketBody = SocketBody(reader, length) }
            return TransportResponse(
                status: parsed.status, headers: parsed.headers, body: body, socketBody: socketBody)
        }
    }

    /// Runs `work` on an idle pooled connection to the target, or a new one. A pooled connection the server had
    /// closed (`connectionReset`) is replaced by a new one once; on any failure the connection is closed.
    private func onPooledConnection<Result>(_ target: Target, _ work: (Connection) async throws -> Result)
        async throws -> Result
    {
        var reused = pool.take(target.key)
        while true {
            let connection: Connection
            if let idle = reused {
                connection = idle
            } else {
                connection = try await Connection.run(nil) { [pool] () throws(TransportError) -> Connection in
                    try Connection.connect(target, pool: pool)
                }
            }
            do {
                return try await work(connection)
            } catch let error as TransportError where reused != nil && error.code == .connectionReset {
                connection.close()
                reused = nil
                continue
            } catch {
                connection.close()
                throw error
            }
        }
    }

    /// The request head: the caller's headers, minus those the transport owns.
    static func requestHead(_ target: Target, headers: [HTTPHeaderField]) -> [UInt8] {
        var text = "GET \(target.requestTarget) HTTP/1.1\r\nHost: \(target.hostHeader)\r\n"
        let owned: Set<String> = ["host", "connection", "accept-encoding", "content-length", "transfer-encoding"]
        for field in headers where !owned.contains(field.name.lowercased()) {
            let clean =
                field.name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x3A }
                && field.value.utf8.allSatisfy { $0 != 0x0D && $0 != 0x0A && $0 != 0 }
            guard clean else { continue }
            text += field.name + ": " + field.value + "\r\n"
        }
        text += "Accept-Encoding: identity\r\nConnection: keep-alive\r\n\r\n"
        return Array(text.utf8)
    }
}

/// Where a request goes.
struct Target: Sendable {
    var secure: Bool
    var host: String
    var port: UInt16
    var requestTarget: String
    var hostHeader: String
    var key: String { host + "|" + String(port) }

    init(_ url: String) throws(TransportError) {
        let reference = URIReference(url)
        guard let scheme = reference.scheme?.lowercased(), scheme == "http" || scheme == "https",
            var authority = reference.authority, !authority.isEmpty
        else {
            throw TransportError(.invalidURL, "not an http(s) URL: \(url)")
        }
        secure = scheme == "https"
        if let at = authority.lastIndex(of: "@") { authority = String(authority[authority.index(after: at)...]) }
        var hostPart = Substring(authority)
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw TransportError(.invalidURL, "bad IPv6 host: \(url)")
            }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            if rest.hasPrefix(":") { portText = rest.dropFirst() }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw TransportError(.invalidURL, "no host: \(url)") }
        host = String(hostPart)
        if let portText, !portText.isEmpty {
            guard let number = UInt16(portText), number > 0 else {
                throw TransportError(.invalidURL, "bad port: \(url)")
            }
            port = number
        } else {
            port = secure ? 443 : 80
        }
        let path = reference.path.isEmpty ? "/" : reference.path
        requestTarget = path + (reference.query.map { "?" + $0 } ?? "")
        guard requestTarget.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw TransportError(.invalidURL, "the URL holds spaces or control bytes: \(url)")
        }
        hostHeader = authority
    }
}

/// How a response body is delimited.
enum BodyFraming: Equatable, Sendable {
    case none
    case length(UInt64)
    case chunked
    case untilClose
}

/// A parsed response head.
struct ResponseHead: Sendable {
    var status: Int
    var headers: [HTTPHeaderField]
    var framing: BodyFraming
    var keepAlive: Bool
}

/// Idle keep-alive connections by host and port.
final class ConnectionPool: Sendable {
    let stallTimeout: Double
    /// Whether a numeric address must not be connected to (see ``SocketTransport/init``).
    let refusesAddress: (@Sendable (String) -> Bool)?
    private let idle = LockedValue<[String: [Connection]]>([:])
    static let maxIdlePerHost = 32

    init(stallTimeout: Double, refusesAddress: (@Sendable (String) -> Bool)? = nil) {
        self.stallTimeout = stallTimeout
        self.refusesAddress = refusesAddress
    }

    /// An idle connection that the server has not closed, if any.
    func take(_ key: String) -> Connection? {
        while let connection = idle.withLock({ $0[key]?.popLast() }) {
            if connection.isIdleAndOpen() { return connection }
            connection.close()
        }
        return nil
    }

    func put(_ connection: Connection, key: String) {
        let kept = idle.withLock { table -> Bool in
            guard (table[key]?.count ?? 0) < Self.maxIdlePerHost else { return false }
            table[key, default: []].append(connection)
            return true
        }
        if !kept { connection.close() }
    }

    deinit {
        for list in idle.withLock({ $0.values }) {
            for connection in list { connection.close() }
        }
    }
}

/// One TCP connection. Its descriptor is closed once, under a lock, so that shutting it down from a cancellation
/// handler never touches a descriptor number that was reused.
final class Connection: Sendable {
    private struct State {
        var fd: Int32
        var aborted = false
        /// Bytes read past the response head, not yet consumed.
        var buffer: [UInt8] = []
    }
    private let state: LockedValue<State>
    private let queue = DispatchQueue(label: "HLSDownload.SocketTransport.connection")

    private init(fd: Int32) {
        state = LockedValue(State(fd: fd))
    }

    deinit {
        let fd = state.withLock { $0.fd }
        if fd >= 0 { _ = socketClose(fd) }
    }

    /// Runs blocking `work` on the connection's queue (a fresh queue when there is no connection yet); a
    /// cancellation of the calling task shuts the connection down so that a blocked call returns.
    static func run<T: Sendable>(
        _ connection: Connection?, _ work: @escaping @Sendable () throws(TransportError) -> T
    ) async throws -> T {
        try Task.checkCancellation()
        let queue = connection?.queue ?? DispatchQueue(label: "HLSDownload.SocketTransport.connect")
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, TransportError>, Never>) in
                queue.async {
                    do throws(TransportError) {
                        continuation.resume(returning: .success(try work()))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
        } onCancel: {
            connection?.abort()
        }
        if Task.isCancelled {
            connection?.close()
            throw CancellationError()
        }
        return try result.get()
    }

    /// Shuts the connection down (a blocked read or write returns); it is never reused.
    func abort() {
        state.withLock { s in
            s.aborted = true
            if s.fd >= 0 { _ = shutdown(s.fd, Int32(SHUT_RDWR)) }
        }
    }

    func close() {
        let fd = state.withLock { s -> Int32 in
            let fd = s.fd
            s.fd = -1
            s.aborted = true
            return fd
        }
        if fd >= 0 { _ = socketClose(fd) }
    }

    private var fd: Int32 { state.withLock { $0.fd } }

    /// Hands the socket to a relay: switches it to non-blocking mode and returns it with the bytes already read
    /// past the response head (at most `limit`), or nil when more than `limit` are buffered or it is closed.
    func lend(limit: UInt64) -> (descriptor: Int32, buffered: [UInt8])? {
        state.withLock { s in
            guard s.fd >= 0, !s.aborted, UInt64(s.buffer.count) <= limit else { return nil }
            let flags = fcntl(s.fd, F_GETFL)
            guard flags >= 0, fcntl(s.fd, F_SETFL, flags | O_NONBLOCK) == 0 else { return nil }
            defer { s.buffer = [] }
            return (s.fd, s.buffer)
        }
    }

    /// Takes the socket back from a relay (blocking mode again).
    func takeBack() {
        state.withLock { s in
            guard s.fd >= 0 else { return }
            let flags = fcntl(s.fd, F_GETFL)
            if flags >= 0 { _ = fcntl(s.fd, F_SETFL, flags & ~O_NONBLOCK) }
        }
    }

    /// Whether the connection is idle and still open: nothing to read (a readable idle socket is closed or
    /// holding junk).
    func isIdleAndOpen() -> Bool {
        let fd = self.fd
        guard fd >= 0, state.withLock({ !$0.aborted && $0.buffer.isEmpty }) else { return false }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 0
    }

    /// Opens a connection to the target's host, trying each address, with the stall timeout as connect timeout.
    static func connect(_ target: Target, pool: ConnectionPool) throws(TransportError) -> Connection {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Darwin)
            hints.ai_socktype = SOCK_STREAM
        #else
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(target.host, String(target.port), &hints, &list)
        guard status == 0, let first = list else {
            throw TransportError(.connectionFailed, "cannot resolve \(target.host)")
        }
        defer { freeaddrinfo(first) }
        var last = "no address"
        var refused: [String] = []
        var tried = 0
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            cursor = entry.pointee.ai_next
            tried += 1
            if let refuses = pool.refusesAddress {
                let address = numericAddress(entry.pointee.ai_addr, entry.pointee.ai_addrlen)
                if address.map(refuses) ?? true {
                    refused.append(address ?? "an unreadable address")
                    continue
                }
            }
            let fd = socket(entry.pointee.ai_family, entry.pointee.ai_socktype, entry.pointee.ai_protocol)
            guard fd >= 0 else {
                last = "\(Errno.current)"
                continue
            }
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var result = socketConnect(fd, entry.pointee.ai_addr, entry.pointee.ai_addrlen)
            if result != 0 && Errno.current == .inProgress {
                var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&descriptor, 1, Int32(clamping: Int(pool.stallTimeout * 1000)))
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                if ready == 1, getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 {
                    result = 0
                } else {
                    last = ready == 0 ? "connect timed out" : "\(Errno(rawValue: error == 0 ? ETIMEDOUT : error))"
                }
            } else if result != 0 {
                last = "\(Errno.current)"
            }
            guard result == 0 else {
                _ = socketClose(fd)
                continue
            }
            _ = fcntl(fd, F_SETFL, flags)
            var timeout = timeval()
            timeout.tv_sec = .init(pool.stallTimeout.rounded(.down))
            timeout.tv_usec = .init(pool.stallTimeout.truncatingRemainder(dividingBy: 1) * 1e6)
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            #if canImport(Darwin)
                _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            return Connection(fd: fd)
        }
        if !refused.isEmpty, refused.count == tried {
            throw TransportError(
                .addressRefused,
                "\(target.host) resolves only to refused addresses (\(refused.joined(separator: ", ")))")
        }
        throw TransportError(.connectionFailed, "cannot connect to \(target.host):\(target.port): \(last)")
    }

    /// The numeric text of a socket address (`getnameinfo` with NI_NUMERICHOST).
    static func numericAddress(_ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t) -> String? {
        guard let address else { return nil }
        var host = [CChar](repeating: 0, count: 64)
        guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else {
            return nil
        }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The error for a failed socket call.
    private func failure(_ errno: Errno, _ what: String) -> TransportError {
        if state.withLock({ $0.aborted }) { return TransportError(.connectionReset, "the connection was closed") }
        if errno == .wouldBlock { return TransportError(.timedOut, "no data for the stall timeout") }
        if errno == .connectionReset || errno == .brokenPipe || errno == .notConnected {
            return TransportError(.connectionReset, "the connection was lost while \(what)")
        }
        return TransportError(.other, "\(what) failed: \(errno)")
    }

    func sendAll(_ bytes: [UInt8]) throws(TransportError) {
        let fd = self.fd
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                socketSend(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset, Self.sendFlags)
            }
            if sent < 0 {
                let e = Errno.current
                if e == .interrupted { continue }
                throw failure(e, "sending the request")
            }
            offset += sent
        }
    }

    #if canImport(Darwin)
        static let sendFlags: Int32 = 0
    #else
        static let sendFlags = Int32(MSG_NOSIGNAL)
    #endif

    /// Reads up to `count` bytes into a new array; `waitAll` waits until all arrived (or the timeout, or the end).
    /// An empty result means the peer closed the connection.
    func receive(_ count: Int, waitAll: Bool) throws(TransportError) -> [UInt8] {
        let pending = state.withLock { s -> [UInt8] in
            guard !s.buffer.isEmpty else { return [] }
            let n = min(count, s.buffer.count)
            let taken = Array(s.buffer[0..<n])
            s.buffer.removeFirst(n)
            return taken
        }
        if !pending.isEmpty { return pending }
        let fd = self.fd
        var failed: Errno?
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            while true {
                let n = recv(fd, buffer.baseAddress, count, waitAll ? Int32(MSG_WAITALL) : 0)
                if n < 0 {
                    let e = Errno.current
                    if e == .interrupted { continue }
                    failed = e
                    initialized = 0
                } else {
                    initialized = n
                }
                return
            }
        }
        if let failed {
            // A timed-out MSG_WAITALL read may still have returned data; that case reports a count, not an error.
            throw failure(failed, "reading")
        }
        return bytes
    }

    /// Gives back bytes read past what was needed.
    func unread(_ bytes: ArraySlice<UInt8>) {
        guard !bytes.isEmpty else { return }
        state.withLock { $0.buffer.insert(contentsOf: bytes, at: 0) }
    }

    /// Reads and parses a response head (skipping 1xx interim responses); body bytes read with it are kept.
    func readHead() throws(TransportError) -> ResponseHead {
        var data: [UInt8] = []
        while true {
            var end: Int?
            var scanned = 0
            while end == nil {
                if let found = Self.headEnd(data, from: max(0, scanned - 3)) {
                    end = found
                    break
                }
                scanned = data.count
                guard data.count < 64 << 10 else { throw TransportError(.other, "response head too large") }
                let more = try receive(16 << 10, waitAll: false)
                if more.isEmpty {
                    throw TransportError(.connectionReset, "the connection closed before a response")
                }
                data += more
            }
            guard let end else { continue }
            let head = try Self.parseHead(data[0..<end])
            data.removeFirst(end)
            if (100..<200).contains(head.status) { continue }
            unread(data[...])
            return head
        }
    }

    /// The index just past the first CRLFCRLF at or after `from`.
    static func headEnd(_ data: [UInt8], from: Int) -> Int? {
        var i = from
        while i + 3 < data.count {
            if data[i] == 0x0D && data[i + 1] == 0x0A && data[i + 2] == 0x0D && data[i + 3] == 0x0A { return i + 4 }
            i += 1
        }
        return nil
    }

    /// Parses a status line and header fields (RFC 9112 §4, §5).
    static func parseHead(_ bytes: ArraySlice<UInt8>) throws(TransportError) -> ResponseHead {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: true)
        guard !lines.isEmpty else { throw TransportError(.other, "empty response head") }
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].utf8.count == 3,
            let status = Int(parts[1])
        else {
            throw TransportError(.other, "malformed status line")
        }
        var headers: [HTTPHeaderField] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            var value = line[line.index(after: colon)...]
            while value.first == " " || value.first == "\t" { value = value.dropFirst() }
            while value.last == " " || value.last == "\t" { value = value.dropLast() }
            headers.append(HTTPHeaderField(name: String(line[..<colon]), value: String(value)))
        }
        func values(_ name: String) -> [String] {
            headers.filter { $0.name.lowercased() == name }.map { $0.value.lowercased() }
        }
        let connection = values("connection").flatMap { $0.split(separator: ",").map { $0.trimmingSpaces } }
        var keepAlive = parts[0] == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
        let framing: BodyFraming
        if (100..<200).contains(status) || status == 204 || status == 304 {
            framing = .none
        } else if let coding = values("transfer-encoding").last {
            guard coding.split(separator: ",").last.map({ $0.trimmingSpaces }) == "chunked" else {
                throw TransportError(.other, "unsupported transfer coding '\(coding)'")
            }
            framing = .chunked
        } else if let lengths = Optional(values("content-length")), !lengths.isEmpty {
            guard Set(lengths).count == 1, let length = UInt64(lengths[0].trimmingSpaces) else {
                throw TransportError(.other, "invalid Content-Length")
            }
            framing = length == 0 ? .none : .length(length)
        } else {
            framing = .untilClose
            keepAlive = false
        }
        return ResponseHead(status: status, headers: headers, framing: framing, keepAlive: keepAlive)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}

/// A response body of known length as the connection's socket, for a relay that moves it in the kernel (Linux
/// `splice`). The relay claims it before reading any of ``TransportResponse/body`` (which then ends at once), reads
/// exactly ``length`` bytes (the `claim`'s buffered bytes, then the socket), and releases it, once.
public final class SocketBody: Sendable {
    /// The body's length in bytes, buffered bytes included.
    public let length: UInt64
    private let reader: BodyReader
    private let stage = LockedValue(Stage.unclaimed)
    private enum Stage { case unclaimed, claimed, released }

    init(_ reader: BodyReader, _ length: UInt64) {
        self.reader = reader
        self.length = length
    }

    deinit {
        if stage.withLock({ $0 }) == .claimed { reader.release(complete: false) }
    }

    /// The socket, in non-blocking mode, and the body bytes already read from it; nil when the body was already
    /// started, or claimed, or cannot be lent (the stream is then the only way, or the body is lost).
    public func claim() -> (descriptor: Int32, buffered: [UInt8])? {
        guard
            stage.withLock({ s -> Bool in
                guard s == .unclaimed else { return false }
                s = .claimed
                return true
            })
        else { return nil }
        guard let lent = reader.claim(length: length) else {
            stage.withLock { $0 = .released }
            return nil
        }
        return lent
    }

    /// Gives the socket back. `complete`: exactly the body was read from it (the connection may be reused);
    /// otherwise it is closed.
    public func release(complete: Bool) {
        guard
            stage.withLock({ s -> Bool in
                guard s == .claimed else { return false }
                s = .released
                return true
            })
        else { return }
        reader.release(complete: complete)
    }
}

/// Delivers one response body in chunks, then gives the connection back to the pool when it can be reused.
final class BodyReader: Sendable {
    private struct State {
        var framing: BodyFraming
        /// Data bytes left in the current chunk (chunked framing), nil before a chunk-size line.
        var chunkLeft: UInt64?
        var finished = false
    }
    private let state: LockedValue<State>
    private let connection: Connection
    private let reusable: Bool
    private let pool: ConnectionPool
    private let key: String
    private let chunkSize: Int

    init(
        connection: Connection, framing: BodyFraming, reusable: Bool, pool: ConnectionPool, key: String,
        chunkSize: Int
    ) {
        self.state = LockedValue(State(framing: framing))
        self.connection = connection
        self.reusable = reusable
        self.pool = pool
        self.key = key
        self.chunkSize = chunkSize
    }

    deinit {
        // Dropped before the end: the connection is in an unknown place of the body and cannot be reused.
        if !state.withLock({ $0.finished }) { connection.close() }
    }

    /// Claims the whole body for a relay before any of it was read: the socket and the bytes already buffered.
    func claim(length: UInt64) -> (descriptor: Int32, buffered: [UInt8])? {
        let claimed = state.withLock { s -> Bool in
            guard !s.finished, s.framing == .length(length) else { return false }
            s.finished = true
            return true
        }
        guard claimed else { return nil }
        guard let lent = connection.lend(limit: length) else {
            connection.close()  // the body cannot be read either way now
            return nil
        }
        return lent
    }

    /// Ends a relay's claim: a relay that moved the whole body gives the connection back to the pool.
    func release(complete: Bool) {
        connection.takeBack()
        if complete && reusable { pool.put(connection, key: key) } else { connection.close() }
    }

    /// Marks a body without content done (the connection goes back to the pool).
    func finishIfEmpty() {
        if state.withLock({ $0.framing }) == .none { complete() }
    }

    private func complete() {
        let first = state.withLock { s -> Bool in
            defer { s.finished = true }
            return !s.finished
        }
        if first {
            if reusable { pool.put(connection, key: key) } else { connection.close() }
        }
    }

    /// The next chunk, or nil at the end of the body.
    func next() async throws -> [UInt8]? {
        let snapshot = state.withLock { $0 }
        if snapshot.finished { return nil }
        switch snapshot.framing {
        case .none:
            complete()
            return nil
        case .length(let left):
            let want = Int(min(left, UInt64(chunkSize)))
            let bytes = try await Connection.run(connection) { [connection] () throws(TransportError) -> [UInt8] in
                try connection.receive(want, waitAll: true)
            }
            if bytes.isEmpty {
                state.withLock { $0.finished = true }
                connection.close()
                throw TransportError(.connectionReset, "the connection closed with \(left) body bytes missing")
            }
            let remaining = left - UInt64(bytes.count)
            state.withLock { $0.framing = .length(remaining) }
            if remaining == 0 { complete() }
            return bytes
        case .untilClose:
            let bytes = try await Connection.run(connection) { [connection, chunkSize] () throws(TransportError) in
                try connection.receive(chunkSize, waitAll: true)
            }
            if bytes.isEmpty {
                state.withLock { $0.finished = true }
                connection.close()
                return nil
            }
            return bytes
        case .chunked:
            let result = try await Connection.run(connection) {
                [connection, chunkSize, chunkLeft = snapshot.chunkLeft] () throws(TransportError) -> ChunkStep in
                try Self.readChunked(connection, chunkLeft: chunkLeft, limit: chunkSize)
            }
            switch result {
            case .data(let bytes, let left):
                state.withLock { $0.chunkLeft = left }
                return bytes
            case .end:
                complete()
                return nil
            }
        }
    }

    /// Reads a whole body of at most `maxBytes` (blocking; on the connection's queue).
    static func readWhole(_ connection: Connection, framing: BodyFraming, maxBytes: Int) throws(TransportError)
        -> [UInt8]
    {
        let tooLarge = TransportError(.tooLarge, "the body is longer than \(maxBytes) bytes")
        switch framing {
        case .none:
            return []
        case .length(let length):
            guard length <= UInt64(maxBytes) else { throw tooLarge }
            var body: [UInt8] = []
            body.reserveCapacity(Int(length))
            while body.count < Int(length) {
                let bytes = try connection.receive(Int(length) - body.count, waitAll: true)
                if bytes.isEmpty {
                    throw TransportError(
                        .connectionReset, "the connection closed with \(Int(length) - body.count) body bytes missing")
                }
                body += bytes
            }
            return body
        case .untilClose:
            var body: [UInt8] = []
            while true {
                let bytes = try connection.receive(64 << 10, waitAll: false)
                if bytes.isEmpty { return body }
                body += bytes
                guard body.count <= maxBytes else { throw tooLarge }
            }
        case .chunked:
            var body: [UInt8] = []
            var left: UInt64?
            while true {
                switch try readChunked(connection, chunkLeft: left, limit: 1 << 20) {
                case .data(let bytes, let remaining):
                    body += bytes
                    left = remaining
                    guard body.count <= maxBytes else { throw tooLarge }
                case .end:
                    return body
                }
            }
        }
    }

    enum ChunkStep: Sendable {
        case data([UInt8], left: UInt64?)
        case end
    }

    /// Reads a line ending in CRLF (at most 8 KiB).
    static func readLine(_ connection: Connection) throws(TransportError) -> [UInt8] {
        var line: [UInt8] = []
        while true {
            let bytes = try connection.receive(1024, waitAll: false)
            if bytes.isEmpty { throw TransportError(.connectionReset, "the connection closed inside a chunked body") }
            if let newline = bytes.firstIndex(of: 0x0A) {
                line += bytes[..<newline]
                connection.unread(bytes[(newline + 1)...])
                if line.last == 0x0D { line.removeLast() }
                return line
            }
            line += bytes
            guard line.count < 8192 else { throw TransportError(.other, "chunk line too long") }
        }
    }

    /// The next piece of a chunked body (RFC 9112 §7.1).
    static func readChunked(
        _ connection: Connection, chunkLeft: UInt64?, limit: Int
    ) throws(TransportError) -> ChunkStep {
        var left = chunkLeft
        if left == nil || left == 0 {
            if left == 0 {
                // The CRLF after a chunk's data.
                _ = try readLine(connection)
            }
            let line = try readLine(connection)
            let sizeText = line.prefix { $0 != 0x3B && $0 != 0x20 && $0 != 0x09 }
            guard !sizeText.isEmpty, sizeText.count <= 16,
                let size = UInt64(String(decoding: sizeText, as: UTF8.self), radix: 16)
            else {
                throw TransportError(.other, "malformed chunk size")
            }
            if size == 0 {
                // Trailer fields, up to the empty line.
                var count = 0
                while try !readLine(connection).isEmpty {
                    count += 1
                    guard count < 100 else { throw TransportError(.other, "too many trailer fields") }
                }
                return .end
            }
            left = size
        }
        let want = Int(min(left ?? 0, UInt64(limit)))
        let bytes = try connection.receive(want, waitAll: true)
        if bytes.isEmpty { throw TransportError(.connectionReset, "the connection closed inside a chunk") }
        return .data(bytes, left: (left ?? 0) - UInt64(bytes.count))
    }
}

#if canImport(Glibc)
    private let socketClose = Glibc.close
    private let socketConnect = Glibc.connect
    private let socketSend = Glibc.send
#elseif canImport(Musl)
    private let socketClose = Musl.close
    private let socketConnect = Musl.connect
    private let socketSend = Musl.send
#elseif canImport(Darwin)
    private let socketClose = Darwin.close
    private let socketConnect = Darwin.connect
    private let socketSend = Darwin.send
#endif
