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

/// A loopback port that nothing listens on: bound to find a free number, then closed (TestSupport's LoopbackTCP).
func closedPort() -> UInt16 { LoopbackTCP.unusedPort() }
