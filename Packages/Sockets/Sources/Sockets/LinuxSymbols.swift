#if os(Linux)
    // epoll, eventfd and accept4 are not exported by the Glibc module of the Swift toolchain, and this package
    // declares no C target, so the few entry points it needs are declared here by symbol name. Every argument is a
    // plain integer or pointer, which the platform C calling convention and Swift's pass identically.

    @_silgen_name("epoll_create1")
    func sys_epoll_create1(_ flags: Int32) -> Int32

    @_silgen_name("epoll_ctl")
    func sys_epoll_ctl(_ epfd: Int32, _ op: Int32, _ fd: Int32, _ event: UnsafeMutableRawPointer?) -> Int32

    @_silgen_name("epoll_wait")
    func sys_epoll_wait(_ epfd: Int32, _ events: UnsafeMutableRawPointer?, _ maxEvents: Int32, _ timeout: Int32)
        -> Int32

    @_silgen_name("eventfd")
    func sys_eventfd(_ initialValue: UInt32, _ flags: Int32) -> Int32

    @_silgen_name("accept4")
    func sys_accept4(
        _ fd: Int32, _ address: UnsafeMutableRawPointer?, _ length: UnsafeMutablePointer<UInt32>?, _ flags: Int32
    ) -> Int32

    /// `<sys/epoll.h>` and `<sys/eventfd.h>` constants (identical on every Linux architecture).
    enum EpollConstants {
        static let input: UInt32 = 0x001
        static let output: UInt32 = 0x004
        static let error: UInt32 = 0x008
        static let hangup: UInt32 = 0x010
        static let readHangup: UInt32 = 0x2000
        static let exclusive: UInt32 = 1 << 28
        static let edgeTriggered: UInt32 = 1 << 31
        static let controlAdd: Int32 = 1
        static let controlDelete: Int32 = 2
        static let closeOnExec: Int32 = 0o2_000_000
        static let eventfdNonBlocking: Int32 = 0o4000
        static let eventfdCloseOnExec: Int32 = 0o2_000_000
    }

    /// `struct epoll_event` is packed on x86_64 (12 bytes), naturally aligned elsewhere (16 bytes).
    enum EpollEventLayout {
        #if arch(x86_64) || arch(i386)
            static let stride = 12
            static let dataOffset = 4
        #else
            static let stride = 16
            static let dataOffset = 8
        #endif

        static func store(events: UInt32, data: UInt64, into pointer: UnsafeMutableRawPointer) {
            pointer.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
            pointer.storeBytes(of: data, toByteOffset: dataOffset, as: UInt64.self)
        }

        static func load(_ pointer: UnsafeRawPointer) -> (events: UInt32, data: UInt64) {
            (
                pointer.loadUnaligned(fromByteOffset: 0, as: UInt32.self),
                pointer.loadUnaligned(fromByteOffset: dataOffset, as: UInt64.self)
            )
        }
    }
#endif
