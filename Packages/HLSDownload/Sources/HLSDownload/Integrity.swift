import FileRange
import MPEGTS

/// Integrity checks for downloaded media: TS sync bytes (MPEGTS's packet-size detection and sync check) and the fake
/// image headers some hosts prepend.
public enum TSIntegrity {
    /// The outcome of checking a body that should be MPEG-TS.
    public enum Verdict: Hashable, Sendable {
        /// Sync bytes at every 188 bytes from `offset`; `offset` > 0 means a fake header of that many bytes.
        case valid(headerLength: Int)
        /// The first offset (from the start of the body) where a sync byte is missing, or the body length when
        /// the packets do not end on a packet boundary.
        case invalid(offset: UInt64)
        /// The body does not look like TS at all (no sync byte at the start, no known fake header).
        case notTS
    }

    /// HLS segments are plain 188-byte packets.
    static let packetSize = PacketSize.standard

    /// Whether `bytes` start with an image signature (PNG, JPEG, GIF, BMP) that hides a TS body.
    public static func startsWithImageSignature(_ bytes: ArraySlice<UInt8>) -> Bool {
        let b = Array(bytes.prefix(8))
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return true }
        if b.starts(with: [0xFF, 0xD8, 0xFF]) { return true }
        if b.starts(with: [0x47, 0x49, 0x46, 0x38]) { return true }  // GIF8
        if b.starts(with: [0x42, 0x4D]) { return true }  // BM
        return false
    }

    /// The length of a fake image header in front of TS packets: the first offset within the first 64 KiB where
    /// MPEGTS's detection finds 188-byte packets (`MPEGTS.PacketSize.detect(in:)`), such that the
    /// rest is whole packets; nil when there is none.
    public static func fakeHeaderLength(_ head: ArraySlice<UInt8>, totalLength: UInt64) -> Int? {
        guard startsWithImageSignature(head) else { return nil }
        let limit = min(head.count, 65_536)
        return head.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Int? in
            var from = 1
            while from < limit {
                let rest = UnsafeRawBufferPointer(rebasing: raw[from...])
                guard let (size, offset) = PacketSize.detect(in: rest) else { return nil }
                let start = from + offset
                guard start < limit else { return nil }
                if size == packetSize, UInt64(start) <= totalLength,
                    (totalLength - UInt64(start)) % UInt64(packetSize.length) == 0
                {
                    return start
                }
                from = start + 1
            }
            return nil
        }
    }

    /// Checks the file at `path`: sync bytes every 188 bytes, after a fake header when one is found.
    static func check(path: String) throws(DownloadError) -> Verdict {
        let streamer: FileStreamer
        do {
            streamer = try FileStreamer(path: path)
        } catch {
            throw DownloadError(.fileSystem, "cannot open for checking: \(error)", path: path)
        }
        defer { streamer.close() }
        do {
            let size = try streamer.size()
            guard size > 0 else { return .notTS }
            let head = try streamer.read(at: 0, length: Int(min(size, 65_536 + 3 * 188)))
            var start = 0
            if head.first != PacketSize.syncByte {
                guard let skip = fakeHeaderLength(head[...], totalLength: size) else { return .notTS }
                start = skip
            }
            var offset = UInt64(start)
            let chunk = packetSize.length * 5_577  // about 1 MiB of whole packets
            while offset < size {
                let want = Int(min(UInt64(chunk), size - offset))
                let buffer = try streamer.read(at: offset, length: want)
                guard !buffer.isEmpty else { break }
                if let missing = buffer.withUnsafeBytes({ packetSize.firstMissingSyncByte(in: $0) }) {
                    return .invalid(offset: offset + UInt64(missing))
                }
                offset += UInt64(buffer.count)
            }
            if (size - UInt64(start)) % UInt64(packetSize.length) != 0 { return .invalid(offset: size) }
            return .valid(headerLength: start)
        } catch {
            throw DownloadError(.fileSystem, "cannot read for checking: \(error)", path: path)
        }
    }
}
