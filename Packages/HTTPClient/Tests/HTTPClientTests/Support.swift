import HTTPClient

/// A client with the settings the socket tests use: an idle (and connect) timeout, redirects and chunk size, and
/// optionally a rule that refuses numeric addresses.
func makeClient(
    stallTimeout: Double, maxRedirects: Int = 5, chunkSize: Int = 512 << 10,
    refusesAddress: (@Sendable (String) -> Bool)? = nil
) -> HTTPClient {
    var configuration = HTTPClientConfiguration()
    configuration.idleTimeout = stallTimeout
    configuration.connectTimeout = stallTimeout
    configuration.maxRedirects = maxRedirects
    configuration.chunkSize = chunkSize
    if let refusesAddress { configuration.addressPolicy = UpstreamAddressPolicy(refusing: refusesAddress) }
    return HTTPClient(configuration: configuration)
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A loopback port that nothing listens on: bound to find a free number, then closed.
func closedPort() -> UInt16 {
    #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
    #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #endif
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return UInt16(bigEndian: address.sin_port)
}
