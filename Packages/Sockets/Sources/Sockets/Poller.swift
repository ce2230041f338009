public import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The kernel objects of one poller, created before its thread starts so that other threads can wake it.
public struct PollerDescriptors: Sendable {
    /// The epoll or kqueue descriptor.
    public var poll: Int32
    /// The wake-up source (an eventfd on Linux; on Darwin the kqueue itself, through a user event).
    public var wake: Int32
}

/// One readiness event.
public struct PollEvent: Hashable, Sendable {
    /// The token the descriptor was registered with, or ``Poller/wakeToken`` for a wake-up.
    public var token: UInt64
    public var readable: Bool
    public var writable: Bool
    /// The peer closed (at least its sending side), or the socket failed: read until end of file.
    public var hangup: Bool
}

/// The kernel's readiness API: epoll on Linux, kqueue on Darwin. The event loops of LoopbackHTTP run one each. Connections are registered once,
/// edge-triggered for both directions; listeners level-triggered for reading; a wake-up source lets other
/// threads interrupt `wait`.
#if canImport(Darwin)
    /// The kevent(2) function. Darwin's `kevent` is also a struct whose memberwise initializer has the same six
    /// parameters, so a direct call `kevent(kq, …)` is taken for the initializer ("missing argument labels"); a
    /// reference to the name in a value position picks the function (swift-nio does the same). <sys/event.h>
    /// declares `int kevent(int kq, const struct kevent *changelist, int nchanges, struct kevent *eventlist, int
    /// nevents, const struct timespec *timeout)` without nullability annotations, so every pointer imports as an
    /// implicitly unwrapped optional, which this type matches; the C function type spelled out keeps the global
    /// `Sendable` in Swift 6.
    private let sysKevent:
        @convention(c) (
            Int32, UnsafePointer<kevent>?, Int32, UnsafeMutablePointer<kevent>?, Int32, UnsafePointer<timespec>?
        ) -> Int32 = kevent
#endif

public final class Poller {
    /// The token of the events that ``wake(_:)`` causes.
    public static let wakeToken = UInt64.max

    #if os(Linux)
        private let epoll: Int32
        private let wakeFD: Int32
        private let buffer: UnsafeMutableRawPointer
        private let capacity = 256

        public static func makeDescriptors() throws(SocketError) -> PollerDescriptors {
            let epoll = sys_epoll_create1(EpollConstants.closeOnExec)
            guard epoll >= 0 else { throw SocketError(.poller, errno: .current, message: "epoll_create1") }
            let wakeFD = sys_eventfd(0, EpollConstants.eventfdNonBlocking | EpollConstants.eventfdCloseOnExec)
            guard wakeFD >= 0 else {
                let error = Errno.current
                closeDescriptor(epoll)
                throw SocketError(.poller, errno: error, message: "eventfd")
            }
            guard control(epoll, EpollConstants.controlAdd, wakeFD, EpollConstants.input, Poller.wakeToken) == 0 else {
                let error = Errno.current
                closeDescriptor(wakeFD)
                closeDescriptor(epoll)
                throw SocketError(.poller, errno: error, message: "epoll_ctl")
            }
            return PollerDescriptors(poll: epoll, wake: wakeFD)
        }

        private static func control(_ epoll: Int32, _ operation: Int32, _ fd: Int32, _ events: UInt32, _ token: UInt64)
            -> Int32
        {
            var storage: (UInt64, UInt64) = (0, 0)
            return withUnsafeMutableBytes(of: &storage) { raw in
                guard let base = raw.baseAddress else { return -1 }
                EpollEventLayout.store(events: events, data: token, into: base)
                return sys_epoll_ctl(epoll, operation, fd, base)
            }
        }

        public init(descriptors: PollerDescriptors) {
            epoll = descriptors.poll
            wakeFD = descriptors.wake
            buffer = .allocate(byteCount: capacity * EpollEventLayout.stride, alignment: 8)
        }

        deinit { buffer.deallocate() }

        public func closeDescriptors() {
            closeDescriptor(wakeFD)
            closeDescriptor(epoll)
        }

        public func addConnection(_ fd: Int32, token: UInt64) throws(Errno) {
            let events =
                EpollConstants.input | EpollConstants.output | EpollConstants.readHangup | EpollConstants.edgeTriggered
            guard Poller.control(epoll, EpollConstants.controlAdd, fd, events, token) == 0 else { throw Errno.current }
        }

        /// Watches a descriptor for arriving bytes only (a relay's source), edge-triggered.
        public func addReadable(_ fd: Int32, token: UInt64) throws(Errno) {
            let events = EpollConstants.input | EpollConstants.readHangup | EpollConstants.edgeTriggered
            guard Poller.control(epoll, EpollConstants.controlAdd, fd, events, token) == 0 else { throw Errno.current }
        }

        public func addListener(_ fd: Int32, token: UInt64) throws(Errno) {
            let events = EpollConstants.input | EpollConstants.exclusive
            guard Poller.control(epoll, EpollConstants.controlAdd, fd, events, token) == 0 else { throw Errno.current }
        }

        public func remove(_ fd: Int32) {
            _ = Poller.control(epoll, EpollConstants.controlDelete, fd, 0, 0)
        }

        /// Wakes the thread blocked in `wait` on these descriptors (callable from any thread).
        public static func wake(_ descriptors: PollerDescriptors) {
            var one: UInt64 = 1
            _ = withUnsafeBytes(of: &one) { write(descriptors.wake, $0.baseAddress, 8) }
        }

        public func drainWake() {
            var value: UInt64 = 0
            _ = withUnsafeMutableBytes(of: &value) { read(wakeFD, $0.baseAddress, 8) }
        }

        /// Waits up to `timeoutMilliseconds` and calls `body` for each event.
        public func wait(timeoutMilliseconds: Int32, _ body: (PollEvent) -> Void) {
            let count = sys_epoll_wait(epoll, buffer, Int32(capacity), timeoutMilliseconds)
            guard count > 0 else { return }
            let readable =
                EpollConstants.input | EpollConstants.readHangup | EpollConstants.hangup | EpollConstants.error
            let writable = EpollConstants.output | EpollConstants.error
            let hangup = EpollConstants.hangup | EpollConstants.error | EpollConstants.readHangup
            for i in 0..<Int(count) {
                let (flags, token) = EpollEventLayout.load(buffer + i * EpollEventLayout.stride)
                body(
                    PollEvent(
                        token: token, readable: flags & readable != 0, writable: flags & writable != 0,
                        hangup: flags & hangup != 0))
            }
        }
    #else
        private let queue: Int32
        private var buffer: UnsafeMutablePointer<kevent>
        private let capacity = 256

        /// One change or event record. `struct kevent` is `{ uintptr_t ident; int16_t filter; uint16_t flags;
        /// uint32_t fflags; intptr_t data; void *udata; }` (<sys/event.h>); `EV_SET` is a macro Swift does not
        /// import, so the fields are set one by one. The token rides in `udata` (`UnsafeMutableRawPointer?`,
        /// nil for token 0), which the kernel hands back untouched.
        private static func event(ident: UInt, filter: Int32, flags: Int32, fflags: UInt32 = 0, token: UInt64)
            -> kevent
        {
            var event = Darwin.kevent()
            event.ident = ident
            event.filter = Int16(truncatingIfNeeded: filter)
            event.flags = UInt16(truncatingIfNeeded: flags)
            event.fflags = fflags
            event.data = 0
            event.udata = UnsafeMutableRawPointer(bitPattern: UInt(truncatingIfNeeded: token))
            return event
        }

        public static func makeDescriptors() throws(SocketError) -> PollerDescriptors {
            let queue = kqueue()
            guard queue >= 0 else { throw SocketError(.poller, errno: .current, message: "kqueue") }
            // The wake-up source: a user event, triggered by `wake` (EVFILT_USER, NOTE_TRIGGER; kqueue(2)).
            var event = Self.event(ident: 0, filter: EVFILT_USER, flags: EV_ADD | EV_CLEAR, token: Poller.wakeToken)
            guard sysKevent(queue, &event, 1, nil, 0, nil) == 0 else {
                let error = Errno.current
                closeDescriptor(queue)
                throw SocketError(.poller, errno: error, message: "kevent EVFILT_USER")
            }
            return PollerDescriptors(poll: queue, wake: queue)
        }

        public init(descriptors: PollerDescriptors) {
            queue = descriptors.poll
            buffer = .allocate(capacity: capacity)
        }

        deinit { buffer.deallocate() }

        public func closeDescriptors() { closeDescriptor(queue) }

        private func change(_ fd: Int32, filter: Int32, flags: Int32, token: UInt64) -> Int32 {
            var event = Self.event(ident: UInt(truncatingIfNeeded: fd), filter: filter, flags: flags, token: token)
            return sysKevent(queue, &event, 1, nil, 0, nil)
        }

        public func addConnection(_ fd: Int32, token: UInt64) throws(Errno) {
            guard change(fd, filter: EVFILT_READ, flags: EV_ADD | EV_CLEAR, token: token) == 0,
                change(fd, filter: EVFILT_WRITE, flags: EV_ADD | EV_CLEAR, token: token) == 0
            else { throw Errno.current }
        }

        /// Watches a descriptor for arriving bytes only (a relay's source), edge-triggered.
        public func addReadable(_ fd: Int32, token: UInt64) throws(Errno) {
            guard change(fd, filter: EVFILT_READ, flags: EV_ADD | EV_CLEAR, token: token) == 0 else {
                throw Errno.current
            }
        }

        public func addListener(_ fd: Int32, token: UInt64) throws(Errno) {
            guard change(fd, filter: EVFILT_READ, flags: EV_ADD, token: token) == 0 else { throw Errno.current }
        }

        public func remove(_ fd: Int32) {
            _ = change(fd, filter: EVFILT_READ, flags: EV_DELETE, token: 0)
            _ = change(fd, filter: EVFILT_WRITE, flags: EV_DELETE, token: 0)
        }

        public static func wake(_ descriptors: PollerDescriptors) {
            var event = Self.event(ident: 0, filter: EVFILT_USER, flags: 0, fflags: UInt32(NOTE_TRIGGER), token: 0)
            _ = sysKevent(descriptors.poll, &event, 1, nil, 0, nil)
        }

        public func drainWake() {}

        public func wait(timeoutMilliseconds: Int32, _ body: (PollEvent) -> Void) {
            var timeout = timespec(
                tv_sec: Int(timeoutMilliseconds / 1000), tv_nsec: Int(timeoutMilliseconds % 1000) * 1_000_000)
            let count = sysKevent(queue, nil, 0, buffer, Int32(capacity), &timeout)
            guard count > 0 else { return }
            for i in 0..<Int(count) {
                let event = buffer[i]
                let token = UInt64(UInt(bitPattern: event.udata))
                let isUser = Int32(event.filter) == EVFILT_USER
                body(
                    PollEvent(
                        token: isUser ? Poller.wakeToken : token,
                        readable: Int32(event.filter) == EVFILT_READ,
                        writable: Int32(event.filter) == EVFILT_WRITE,
                        hangup: Int32(event.flags) & EV_EOF != 0 && Int32(event.filter) == EVFILT_READ))
            }
        }
    #endif
}
