public import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What one `sendfile` call did: the bytes it sent, and `errno` when it returned -1 (nil on success).
///
/// On Darwin the bytes sent are `*len` on return, which counts bytes sent even when the call fails with `EAGAIN` or
/// `EINTR` (sendfile(2)); on Linux they are the return value, and a failed call sent nothing.
public struct SendFileCall: Hashable, Sendable {
    public var sent: Int
    public var error: Int32?

    public init(sent: Int, error: Int32?) {
        self.sent = sent
        self.error = error
    }
}

extension Socket {
    /// Sends up to `count` bytes of `file` from `offset` with `sendfile` (zero copy): the bytes sent, or
    /// `FileRange.IOResult.wouldBlock` when the socket's buffer is full and nothing was sent. A failure that
    /// ``SendFile/isUnsupported(_:)`` accepts means "copy instead".
    public func sendFile(_ file: Int32, offset: UInt64, count: Int) throws(Errno) -> IOResult<Int> {
        try SendFile.run(offset: offset, count: count) { offset, count in
            SendFile.once(socket: descriptor, file: file, offset: offset, count: count)
        }
    }
}

/// The platform-neutral rules around `sendfile`, apart from the call so that tests can drive them.
public enum SendFile {
    /// Calls `call` (one sendfile of `count` bytes from `offset`) until `count` bytes are sent, the socket would
    /// block or the call fails. `EINTR` calls again from where the interrupted call stopped: on Darwin an
    /// interrupted call may already have sent bytes, reported in `len`. Bytes sent before `EAGAIN` or a failure are
    /// reported as sent (a failure shows again on the next call); `EAGAIN` with nothing sent is
    /// `FileRange.IOResult.wouldBlock`. A success that sent nothing means the offset is at or past the end of the file.
    public static func run(
        offset: UInt64, count: Int, _ call: (_ offset: UInt64, _ count: Int) -> SendFileCall
    ) throws(Errno) -> IOResult<Int> {
        guard count > 0 else { return .done(0) }
        var total = 0
        while true {
            let outcome = call(offset &+ UInt64(total), count - total)
            total += min(max(0, outcome.sent), count - total)
            guard let error = outcome.error.map(Errno.init(rawValue:)) else { return .done(total) }
            if error == .interrupted {
                if total < count { continue }
                return .done(total)
            }
            if total > 0 { return .done(total) }
            if error.isWouldBlock { return .wouldBlock }
            throw error
        }
    }

    /// Whether a sendfile failure means "not for this file or socket" rather than a broken connection: then the
    /// body is copied with pread and send instead. Linux: `EINVAL` (a file that cannot be mapped), `ENOSYS`.
    /// Darwin (sendfile(2)): `ENOTSUP` ("fd does not refer to a regular file"), `EOPNOTSUPP` ("the file system
    /// for fd does not support sendfile"), `EINVAL`; the first two are different numbers on Darwin (45
    /// and 102) and the same one on Linux.
    public static func isUnsupported(_ error: Errno) -> Bool {
        switch error.rawValue {
        case EINVAL, ENOSYS, ENOTSUP, EOPNOTSUPP: true
        default: false
        }
    }

    /// One sendfile call for `count` (> 0) bytes of `file` from `offset` to `socket`.
    ///
    /// Darwin: `sendfile(fd, s, offset, &len, hdtr, flags)` with the file first; `len` is in and out, and 0 on the
    /// way in would mean "to the end of the file", which callers never ask for. Linux: `sendfile(out, in, &offset,
    /// count)`.
    static func once(socket: Int32, file: Int32, offset: UInt64, count: Int) -> SendFileCall {
        #if canImport(Darwin)
            var length = off_t(count)
            let result = Darwin.sendfile(file, socket, off_t(clamping: offset), &length, nil, 0)
            let error: Int32? = result == 0 ? nil : errno
            return SendFileCall(sent: Int(max(0, length)), error: error)
        #else
            var position = off_t(clamping: offset)
            let result = Glibc.sendfile(socket, file, &position, count)
            return SendFileCall(sent: max(0, result), error: result < 0 ? errno : nil)
        #endif
    }
}
