import FileRange
import HTTPWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The device's IPv4 local-network interfaces, and which connections
/// ``HTTPServerConfiguration/listensOnLocalNetwork`` lets in.
enum LocalNetwork {
    /// An IPv4 interface address and its netmask, in host byte order.
    struct Interface: Equatable {
        var address: UInt32
        var mask: UInt32
    }

    /// Whom an accepted connection comes from.
    enum Admission: Equatable {
        /// It arrived on a loopback address.
        case loopback
        /// It arrived on this local-network address (dotted decimal) from a peer on the same subnet.
        case localNetwork(String)
        /// Anything else: another subnet (a routed peer, a cellular or VPN interface), or an address that could not
        /// be read.
        case refused
    }

    // <net/if.h> flags, the same on Linux and Darwin (Glibc does not export them to Swift).
    private static let interfaceUp: UInt32 = 0x1
    private static let interfaceLoopback: UInt32 = 0x8

    /// The IPv4 addresses of the interfaces that are up, loopback excluded, from getifaddrs(3).
    static func interfaces() -> [Interface] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var result: [Interface] = []
        var cursor = list
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            let flags = UInt32(truncatingIfNeeded: entry.pointee.ifa_flags)
            guard flags & interfaceUp != 0, flags & interfaceLoopback == 0,
                let address = entry.pointee.ifa_addr, let mask = entry.pointee.ifa_netmask,
                Int32(address.pointee.sa_family) == AF_INET
            else { continue }
            result.append(Interface(address: ipv4(address), mask: ipv4(mask)))
        }
        return result
    }

    /// The dotted-decimal local-network addresses of this device (for URLs that another device, such as an
    /// AirPlay receiver, can reach).
    static func addresses() -> [String] { interfaces().map { dotted($0.address) } }

    /// Where an accepted socket's connection comes from: loopback, the local network, or neither.
    static func admission(of fd: Int32) -> Admission {
        guard let local = address(of: fd, peer: false) else {
            return isIPv6Loopback(fd) ? .loopback : .refused  // the option covers IPv4 only
        }
        if local >> 24 == 127 { return .loopback }
        guard let peer = address(of: fd, peer: true) else { return .refused }
        return admits(local: local, peer: peer, interfaces: interfaces()) ? .localNetwork(dotted(local)) : .refused
    }

    /// Whether a connection from `peer` that arrived on `local` comes from the subnet of the interface that has
    /// `local` (point-to-point interfaces, whose mask is all ones, admit only the device itself).
    static func admits(local: UInt32, peer: UInt32, interfaces: [Interface]) -> Bool {
        guard let interface = interfaces.first(where: { $0.address == local }) else { return false }
        return peer & interface.mask == local & interface.mask
    }

    static func dotted(_ address: UInt32) -> String {
        "\(address >> 24).\(address >> 16 & 0xff).\(address >> 8 & 0xff).\(address & 0xff)"
    }

    private static func ipv4(_ pointer: UnsafeMutablePointer<sockaddr>) -> UInt32 {
        UnsafeMutableRawPointer(pointer).withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
            UInt32(bigEndian: $0.pointee.sin_addr.s_addr)
        }
    }

    /// Whether a socket's own address is the IPv6 loopback address `::1`.
    private static func isIPv6Loopback(_ fd: Int32) -> Bool {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0, Int32(storage.ss_family) == AF_INET6 else { return false }
        return withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                var address = pointer.pointee.sin6_addr
                return withUnsafeBytes(of: &address) { $0.prefix(15).allSatisfy { $0 == 0 } && $0.last == 1 }
            }
        }
    }

    /// A socket's own (or its peer's) IPv4 address, or nil for another family.
    private static func address(of fd: Int32, peer: Bool) -> UInt32? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length)
            }
        }
        guard result == 0, Int32(storage.ss_family) == AF_INET else { return nil }
        return withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ipv4($0) }
        }
    }
}
