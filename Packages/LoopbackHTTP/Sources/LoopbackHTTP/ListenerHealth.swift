import FileRange
import HTTPWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What an event loop does when accepting from a listener fails: a value with no I/O, so that tests drive it with
/// made-up errors.
///
/// A listening socket can die under a running server: iOS reclaims the sockets of a suspended app (Apple's
/// TN2277, "Networking and Multitasking"), after which the listener reads as ready for ever while `accept` fails
/// with `ECONNABORTED` (or `EBADF`), and kqueue may report `EV_EOF` on it. Retrying such a listener spins the loop.
/// So: an error that belongs to one connection (`ECONNABORTED`, `EPROTO`, and the network errors Linux passes
/// on from a connection that failed in the queue) is retried, but ``abortLimit`` of them in a row, with no
/// successful `accept` and no empty queue (`EAGAIN`) in between, mean the listener is gone; an error that
/// belongs to the listener (`EBADF`, `EINVAL` — Linux's answer once it was shut down —, `ENOTSOCK`, `EFAULT`) or
/// a hang-up on it fails it at once; running out of descriptors or memory pauses accepting for a moment.
struct ListenerHealth: Equatable {
    enum Action: Equatable {
        /// Try the next connection.
        case retry
        /// Stop accepting for a moment (descriptors or memory ran out); keep serving.
        case pause
        /// The listener is unusable: stop watching it and report the server failed.
        case fail
    }

    /// Connection-level errors in a row that mean the listener itself is gone.
    static let abortLimit = 32

    private(set) var consecutiveAborts = 0

    /// A connection was accepted, or the queue was empty: the listener works.
    mutating func healthy() { consecutiveAborts = 0 }

    mutating func acceptFailed(_ error: Errno) -> Action {
        switch error.rawValue {
        case EMFILE, ENFILE, ENOBUFS, ENOMEM:
            return .pause
        case EBADF, EINVAL, ENOTSOCK, EFAULT:
            return .fail
        case ECONNABORTED, EPROTO, EPERM, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH,
            ETIMEDOUT, ECONNRESET:
            consecutiveAborts += 1
            return consecutiveAborts >= Self.abortLimit ? .fail : .retry
        default:
            return .pause
        }
    }

    /// The poller reported a hang-up or an error on the listener (kqueue's `EV_EOF`, epoll's `EPOLLHUP` or
    /// `EPOLLERR`): a listening socket has no peer that could hang up, so the socket itself was shut down.
    mutating func hungUp() -> Action { .fail }
}
