// MARK: AES-128 (to read an encrypted anchor segment)

/// AES-128-CBC decryption (FIPS-197, SP 800-38A) for reading an anchor segment encrypted with HLS's METHOD=AES-128,
/// so a slate can continue its timeline. Table-driven, byte-oriented; slates are cached, so speed matters little.
enum AES128 {
    static let tables: (sbox: [UInt8], inverse: [UInt8]) = {
        var sbox = [UInt8](repeating: 0, count: 256)
        var inverse = [UInt8](repeating: 0, count: 256)
        var p: UInt8 = 1
        var q: UInt8 = 1
        func rotl(_ x: UInt8, _ n: UInt8) -> UInt8 { x << n | x >> (8 - n) }
        repeat {
            // p × 3 and q ÷ 3 in GF(2^8), so q is p's inverse.
            p = p ^ (p << 1) ^ (p & 0x80 != 0 ? 0x1B : 0)
            q ^= q << 1
            q ^= q << 2
            q ^= q << 4
            if q & 0x80 != 0 { q ^= 0x09 }
            let s = q ^ rotl(q, 1) ^ rotl(q, 2) ^ rotl(q, 3) ^ rotl(q, 4) ^ 0x63
            sbox[Int(p)] = s
            inverse[Int(s)] = p
        } while p != 1
        sbox[0] = 0x63
        inverse[0x63] = 0
        return (sbox, inverse)
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        var a = a
        var b = b
        var out: UInt8 = 0
        while b != 0 {
            if b & 1 != 0 { out ^= a }
            a = (a << 1) ^ (a & 0x80 != 0 ? 0x1B : 0)
            b >>= 1
        }
        return out
    }

    /// Multiplication tables for InvMixColumns (× 9, 11, 13, 14).
    static let mixing: [[UInt8]] = [9, 11, 13, 14].map { m in (0..<256).map { multiply(UInt8($0), m) } }

    /// The 11 round keys (176 bytes) of a 16-byte key.
    static func expand(_ key: [UInt8]) -> [UInt8] {
        let sbox = tables.sbox
        var w = key
        w.reserveCapacity(176)
        var rcon: UInt8 = 1
        var i = 16
        while i < 176 {
            var t = [w[i - 4], w[i - 3], w[i - 2], w[i - 1]]
            if i % 16 == 0 {
                t = [sbox[Int(t[1])] ^ rcon, sbox[Int(t[2])], sbox[Int(t[3])], sbox[Int(t[0])]]
                rcon = (rcon << 1) ^ (rcon & 0x80 != 0 ? 0x1B : 0)
            }
            for j in 0..<4 { w.append(w[i - 16 + j] ^ t[j]) }
            i += 4
        }
        return w
    }

    /// Decrypts one 16-byte block in place (`block` holds exactly 16 bytes).
    static func decryptBlock(_ block: inout [UInt8], roundKeys w: [UInt8]) {
        let inverse = tables.inverse
        let m9 = mixing[0]
        let m11 = mixing[1]
        let m13 = mixing[2]
        let m14 = mixing[3]
        for i in 0..<16 { block[i] ^= w[160 + i] }
        var round = 9
        while true {
            // InvShiftRows and InvSubBytes.
            var t = block
            for r in 0..<4 {
                for c in 0..<4 { t[r + 4 * ((c + r) % 4)] = inverse[Int(block[r + 4 * c])] }
            }
            for i in 0..<16 { t[i] ^= w[16 * round + i] }
            if round == 0 {
                block = t
                return
            }
            for c in 0..<4 {
                let a0 = Int(t[4 * c])
                let a1 = Int(t[4 * c + 1])
                let a2 = Int(t[4 * c + 2])
                let a3 = Int(t[4 * c + 3])
                block[4 * c] = m14[a0] ^ m11[a1] ^ m13[a2] ^ m9[a3]
                block[4 * c + 1] = m9[a0] ^ m14[a1] ^ m11[a2] ^ m13[a3]
                block[4 * c + 2] = m13[a0] ^ m9[a1] ^ m14[a2] ^ m11[a3]
                block[4 * c + 3] = m11[a0] ^ m13[a1] ^ m9[a2] ^ m14[a3]
            }
            round -= 1
        }
    }

    /// AES-128-CBC decryption; with `unpad`, PKCS#7 padding is checked and removed. Nil for a key or IV that is not
    /// 16 bytes, a length that is not a multiple of 16, or bad padding.
    static func decryptCBC(_ data: [UInt8], key: [UInt8], iv: [UInt8], unpad: Bool = true) -> [UInt8]? {
        guard key.count == 16, iv.count == 16, data.count % 16 == 0, !data.isEmpty else { return nil }
        let w = expand(key)
        var out: [UInt8] = []
        out.reserveCapacity(data.count)
        var previous = iv
        var block = [UInt8](repeating: 0, count: 16)
        var offset = 0
        while offset < data.count {
            for i in 0..<16 { block[i] = data[offset + i] }
            let cipher = block
            decryptBlock(&block, roundKeys: w)
            for i in 0..<16 { out.append(block[i] ^ previous[i]) }
            previous = cipher
            offset += 16
        }
        guard unpad else { return out }
        guard let last = out.last, (1...16).contains(last), out.suffix(Int(last)).allSatisfy({ $0 == last }) else {
            return nil
        }
        out.removeLast(Int(last))
        return out
    }
}
