#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A POSIX error number with its symbolic name, thrown by every system call wrapper in the toolkit.
///
/// Compare against the static members (`.interrupted`, `.wouldBlock`, ...) rather than raw numbers: the numbers differ
/// between Linux and Darwin, the names do not.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The platform's numeric value.
    public var rawValue: Int32

    /// Wraps a raw error number.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The calling thread's current `errno`.
    public static var current: Errno {
        Errno(rawValue: errno)
    }

    /// The symbolic name, such as `ENOENT`, or `errno N` for numbers this table does not name.
    public var name: String {
        Errno.names[rawValue] ?? "errno \(rawValue)"
    }

    /// The system's message for this error.
    public var message: String {
        guard let text = strerror(rawValue) else { return name }
        return String(cString: text)
    }

    public var description: String {
        "\(name) (\(message))"
    }

    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let operationNotPermitted = Errno(rawValue: EPERM)
    public static let noSuchFile = Errno(rawValue: ENOENT)
    public static let interrupted = Errno(rawValue: EINTR)
    public static let ioError = Errno(rawValue: EIO)
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    public static let noMemory = Errno(rawValue: ENOMEM)
    public static let fileExists = Errno(rawValue: EEXIST)
    public static let notDirectory = Errno(rawValue: ENOTDIR)
    public static let isDirectory = Errno(rawValue: EISDIR)
    public static let invalidArgument = Errno(rawValue: EINVAL)
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    public static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let brokenPipe = Errno(rawValue: EPIPE)
    public static let connectionAborted = Errno(rawValue: ECONNABORTED)
    public static let connectionReset = Errno(rawValue: ECONNRESET)
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    public static let addressInUse = Errno(rawValue: EADDRINUSE)
    public static let notConnected = Errno(rawValue: ENOTCONN)
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    public static let inProgress = Errno(rawValue: EINPROGRESS)
    public static let notSupported = Errno(rawValue: EOPNOTSUPP)
    public static let fileTooLarge = Errno(rawValue: EFBIG)
    public static let valueOverflow = Errno(rawValue: EOVERFLOW)
    public static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
    public static let tooManySymbolicLinks = Errno(rawValue: ELOOP)
    public static let diskQuotaExceeded = Errno(rawValue: EDQUOT)
    public static let readOnlyFileSystem = Errno(rawValue: EROFS)

    private static let names: [Int32: String] = {
        let pairs: [(Int32, String)] = [
            (EPERM, "EPERM"), (ENOENT, "ENOENT"), (ESRCH, "ESRCH"), (EINTR, "EINTR"), (EIO, "EIO"),
            (ENXIO, "ENXIO"), (E2BIG, "E2BIG"), (EBADF, "EBADF"), (ECHILD, "ECHILD"), (EAGAIN, "EAGAIN"),
            (ENOMEM, "ENOMEM"), (EACCES, "EACCES"), (EFAULT, "EFAULT"), (EBUSY, "EBUSY"), (EEXIST, "EEXIST"),
            (EXDEV, "EXDEV"), (ENODEV, "ENODEV"), (ENOTDIR, "ENOTDIR"), (EISDIR, "EISDIR"), (EINVAL, "EINVAL"),
            (ENFILE, "ENFILE"), (EMFILE, "EMFILE"), (EFBIG, "EFBIG"), (ENOSPC, "ENOSPC"), (ESPIPE, "ESPIPE"),
            (EROFS, "EROFS"), (EPIPE, "EPIPE"), (ERANGE, "ERANGE"), (ENAMETOOLONG, "ENAMETOOLONG"),
            (ENOSYS, "ENOSYS"), (ENOTEMPTY, "ENOTEMPTY"), (ELOOP, "ELOOP"), (EOVERFLOW, "EOVERFLOW"),
            (ENOTSOCK, "ENOTSOCK"), (EADDRINUSE, "EADDRINUSE"), (EADDRNOTAVAIL, "EADDRNOTAVAIL"),
            (ENETUNREACH, "ENETUNREACH"), (ECONNABORTED, "ECONNABORTED"), (ECONNRESET, "ECONNRESET"),
            (ENOBUFS, "ENOBUFS"), (EISCONN, "EISCONN"), (ENOTCONN, "ENOTCONN"), (ETIMEDOUT, "ETIMEDOUT"),
            (ECONNREFUSED, "ECONNREFUSED"), (EHOSTUNREACH, "EHOSTUNREACH"), (EALREADY, "EALREADY"),
            (EINPROGRESS, "EINPROGRESS"), (EOPNOTSUPP, "EOPNOTSUPP"), (EDQUOT, "EDQUOT"),
        ]
        var table: [Int32: String] = [:]
        for (number, name) in pairs where table[number] == nil {
            table[number] = name
        }
        return table
    }()
}

/// The outcome of a system call on a non-blocking descriptor: done, with its value, or "would block" (`EAGAIN`,
/// `EWOULDBLOCK`; `EINPROGRESS` for a connect), which is not an error but "try again when the descriptor is ready".
public enum IOResult<Value> {
    case done(Value)
    case wouldBlock
}

extension IOResult: Sendable where Value: Sendable {}
extension IOResult: Equatable where Value: Equatable {}

/// The toolkit's one system-call helper (STYLE.md item 9): calls `body`, a system call that returns -1 and sets
/// `errno` on failure, again for as long as it fails with `EINTR`; any other failure is thrown as its ``Errno``.
/// For a descriptor that may block, use ``syscall(connecting:_:)``, which reports "would block" as a value.
///
/// Only FileRange and Sockets write a loop around `EINTR`: everyone else calls this (Scripts/check-boundaries.sh).
@inlinable
public func retryingOnInterrupt<T: FixedWidthInteger & SignedInteger>(_ body: () -> T) throws(Errno) -> T {
    while true {
        let result = body()
        if result != -1 {
            return result
        }
        let error = Errno.current
        if error != .interrupted {
            throw error
        }
    }
}

/// ``retryingOnInterrupt(_:)`` for a call on a non-blocking descriptor: `EINTR` is retried, `EAGAIN` /
/// `EWOULDBLOCK` is ``IOResult/wouldBlock`` and, when `connecting` (a `connect(2)` on a non-blocking socket),
/// `EINPROGRESS` and `EALREADY` are too (the connection completes later: wait until the socket is writable, then
/// read `SO_ERROR`). Any other failure is thrown as its ``Errno``.
@inlinable
public func syscall<T: FixedWidthInteger & SignedInteger>(connecting: Bool = false, _ body: () -> T) throws(Errno)
    -> IOResult<T>
{
    do {
        return .done(try retryingOnInterrupt(body))
    } catch {
        if error.isWouldBlock || (connecting && (error == .inProgress || error == .alreadyInProgress)) {
            return .wouldBlock
        }
        throw error
    }
}

extension Errno {
    /// `EALREADY`: a connect is already under way on this socket.
    public static let alreadyInProgress = Errno(rawValue: EALREADY)

    /// Whether this is `EAGAIN` or `EWOULDBLOCK` (the same number on Linux and Darwin, two names in POSIX).
    @inlinable
    public var isWouldBlock: Bool {
        rawValue == Errno.wouldBlock.rawValue || rawValue == Errno.wouldBlockAlias
    }

    @usableFromInline
    static let wouldBlockAlias: Int32 = EWOULDBLOCK
}
