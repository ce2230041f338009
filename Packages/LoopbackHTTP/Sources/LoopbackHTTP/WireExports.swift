// The server's API speaks in the wire layer's types (headers, methods, statuses, request heads, limits,
// timeouts), so importing the server brings them along.
@_exported public import HTTPWire

/// The wire layer's ASCII helpers under their short name inside this module.
typealias ASCII = HTTPASCII
