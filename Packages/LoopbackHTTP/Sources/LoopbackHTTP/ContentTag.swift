import HTTPWire

// The content ETag of a body in memory: what the server sends for a `200` answer that has no ETag of its handler's.
extension HTTPApplication {
    /// The bytes of a `200` answer to GET or HEAD with a body in memory and no ETag of its handler's, which get a
    /// content ETag (the one rule for `prepare` and for a later answer's responder, which computes it off the loop).
    static func contentTagged(
        _ status: HTTPStatus, _ method: HTTPMethod, _ body: HTTPResponse.Body, _ headers: HTTPHeaders
    )
        -> [UInt8]?
    {
        guard status.code == 200, method == .get || method == .head, case .bytes(let bytes) = body,
            !headers.contains(name: "ETag")
        else { return nil }
        return bytes
    }

    /// `"<length hex>-<contentHash hex>"` of the bytes: the ETag the server gives a `200` body in memory that has none
    /// of its handler's. A handler that sends the same bytes many times computes it once, where it makes them, and
    /// sends it as its `ETag` field, so that they are not hashed again for each answer.
    public static func contentEntityTag(_ bytes: [UInt8]) -> String {
        "\"\(String(bytes.count, radix: 16))-\(String(contentHash(bytes), radix: 16))\""
    }

    /// A 64-bit hash of a body for its validator: four independent multiply-xorshift lanes over 8-byte words, so
    /// a 150 KB playlist hashes in about 10 µs (a byte-at-a-time FNV-1a chain took 0.7 ms, a proxy poll's budget).
    /// Not cryptographic: a validator only has to change when the content does.
    static func contentHash(_ bytes: [UInt8]) -> UInt64 {
        let multiplier: UInt64 = 0xFF51_AFD7_ED55_8CCD
        return bytes.withUnsafeBytes { raw -> UInt64 in
            var lanes: (UInt64, UInt64, UInt64, UInt64) = (
                0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0x85EB_CA77_C2B2_AE63
            )
            var offset = 0
            while offset + 32 <= raw.count {
                lanes.0 = (lanes.0 ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* multiplier
                lanes.1 = (lanes.1 ^ raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)) &* multiplier
                lanes.2 = (lanes.2 ^ raw.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)) &* multiplier
                lanes.3 = (lanes.3 ^ raw.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self)) &* multiplier
                lanes.0 ^= lanes.0 >> 29
                lanes.1 ^= lanes.1 >> 29
                lanes.2 ^= lanes.2 >> 29
                lanes.3 ^= lanes.3 >> 29
                offset += 32
            }
            var hash =
                lanes.0 ^ lanes.1.rotatedLeft(by: 1) ^ lanes.2.rotatedLeft(by: 2) ^ lanes.3.rotatedLeft(by: 3)
            while offset < raw.count {
                hash = (hash ^ UInt64(raw[offset])) &* 0x100_0000_01B3
                offset += 1
            }
            hash ^= UInt64(raw.count)
            hash = (hash ^ hash >> 33) &* multiplier
            return hash ^ hash >> 33
        }
    }
}

extension UInt64 {
    fileprivate func rotatedLeft(by count: UInt64) -> UInt64 { self << count | self >> (64 - count) }
}
