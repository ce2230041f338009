import TextCodecs

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An error from ``SparseRangeCache``: an opaque ``Code`` plus context.
public struct SparseRangeCacheError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. New codes may be added; switch over them with a default.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case cannotOpen, systemError, rangeOutOfBounds, closed
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The cache's data file could not be opened or created.
        public static let cannotOpen = Code(.cannotOpen)
        /// A system call failed; ``SparseRangeCacheError/errno`` says why (`ENOSPC` when the disk is full).
        public static let systemError = Code(.systemError)
        /// A write or read whose range does not fit in `UInt64` or the platform's file offsets.
        public static let rangeOutOfBounds = Code(.rangeOutOfBounds)
        /// The cache was closed.
        public static let closed = Code(.closed)

        public var description: String {
            switch value {
            case .cannotOpen: "cannot open range cache"
            case .systemError: "system error"
            case .rangeOutOfBounds: "range out of bounds"
            case .closed: "range cache closed"
            }
        }
    }

    /// What went wrong.
    public var code: Code
    /// The file involved.
    public var path: String
    /// The system error, when a system call failed.
    public var errno: Errno?
    /// The range involved.
    public var range: ByteRange?
    /// Where in the toolkit the error was raised.
    public var sourceLocation: String

    /// An error with context.
    public init(
        _ code: Code, path: String, errno: Errno? = nil, range: ByteRange? = nil, file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.path = path
        self.errno = errno
        self.range = range
        self.sourceLocation = "\(file):\(line)"
    }

    public var description: String {
        var text = "\(code) '\(path)'"
        if let range { text += " range \(range)" }
        if let errno { text += ": \(errno)" }
        return text
    }
}

/// A sparse on-disk cache of one remote resource: a data file written at the resource's own offsets, and a map file
/// that says which byte ranges the data file really holds, plus string metadata (length, type, validators).
///
/// Crash safety: ``commit()`` flushes the data file before it writes the map, and writes the map to a temporary file
/// that is flushed, renamed over the old map, and whose folder is flushed. So after a crash at any moment the map on
/// disk names only bytes that reached the disk; bytes written after the last commit are simply not claimed. A map
/// whose checksum does not match is treated as empty, never trusted.
public final class SparseRangeCache: Sendable {
    /// The data file.
    public let dataPath: String
    /// The map file.
    public let mapPath: String
    /// The permissions of the files the cache creates (data and map), whatever the umask.
    public let mode: UInt16

    private struct State {
        var fd: Int32
        /// Ranges written to the data file (not necessarily flushed yet).
        var written: ByteRangeSet
        var metadata: [String: String]
        var dirty: Bool
    }

    private let state: LockedValue<State>
    private let commitLock = LockedValue<Void>(())

    /// Opens or creates the cache whose data lives at `dataPath` and whose map lives at `mapPath` (by default the
    /// data path plus `.ranges`). Ranges the map claims beyond the data file's end are dropped. Files it creates get
    /// permissions `mode` (`0o600` for a cache whose metadata holds URLs with tokens); a data file that exists is
    /// narrowed to them too.
    public init(dataPath: String, mapPath: String? = nil, mode: UInt16 = 0o644) throws(SparseRangeCacheError) {
        self.dataPath = dataPath
        self.mapPath = mapPath ?? dataPath + ".ranges"
        self.mode = mode & 0o777
        let fd: Int32
        do {
            fd = try retryingOnInterrupt { open(dataPath, O_RDWR | O_CREAT | O_CLOEXEC, mode_t(mode & 0o777)) }
        } catch {
            throw SparseRangeCacheError(.cannotOpen, path: dataPath, errno: error)
        }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            _ = systemClose(fd)
            throw SparseRangeCacheError(.cannotOpen, path: dataPath, errno: .current)
        }
        if mode & 0o777 != 0o644 {
            // Best effort (a file system without permissions refuses, and has nothing to protect with them).
            _ = fchmod(fd, mode_t(mode & 0o777))
        }
        var (ranges, metadata) = RangeMapFile.load(path: self.mapPath) ?? (ByteRangeSet(), [:])
        let dataSize = UInt64(max(0, info.st_size))
        if let beyond = ByteRange(lowerBound: dataSize, upperBound: UInt64.max) {
            ranges.remove(beyond)
        }
        state = LockedValue(State(fd: fd, written: ranges, metadata: metadata, dirty: false))
    }

    deinit {
        close()
    }

    /// The byte ranges the cache holds (including bytes written but not yet committed).
    public var available: ByteRangeSet {
        state.withLock { $0.written }
    }

    /// Whether every byte of `range` is held.
    public func contains(_ range: ByteRange) -> Bool {
        state.withLock { $0.written.contains(range) }
    }

    /// The parts of `range` the cache does not hold, in ascending order.
    public func missing(in range: ByteRange) -> [ByteRange] {
        state.withLock { $0.written.gaps(within: range) }
    }

    /// The metadata stored with the cache.
    public var metadata: [String: String] {
        state.withLock { $0.metadata }
    }

    /// Replaces the metadata; it is persisted by the next ``commit()``.
    public func setMetadata(_ metadata: [String: String]) {
        state.withLock {
            $0.metadata = metadata
            $0.dirty = true
        }
    }

    private func descriptor() throws(SparseRangeCacheError) -> Int32 {
        let fd = state.withLock { $0.fd }
        guard fd >= 0 else { throw SparseRangeCacheError(.closed, path: dataPath) }
        return fd
    }

    /// Writes `bytes` at `offset` in the data file and records the range as held. With `commit` (the default) the
    /// range is also made durable at once; pass false to batch several writes before one ``commit()``.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64, commit: Bool = true)
        throws(SparseRangeCacheError)
    {
        guard let range = ByteRange(offset: offset, length: UInt64(bytes.count)),
            off_t(exactly: range.upperBound) != nil
        else {
            throw SparseRangeCacheError(.rangeOutOfBounds, path: dataPath)
        }
        let fd = try descriptor()
        if let base = bytes.baseAddress {
            var done = 0
            while done < bytes.count {
                let count: Int
                do {
                    count = try retryingOnInterrupt {
                        pwrite(fd, base + done, bytes.count - done, off_t(offset) + off_t(done))
                    }
                } catch {
                    throw SparseRangeCacheError(.systemError, path: dataPath, errno: error, range: range)
                }
                done += count
            }
        }
        state.withLock {
            $0.written.insert(range)
            $0.dirty = true
        }
        if commit {
            try self.commit()
        }
    }

    /// Writes `bytes` at `offset`; see ``write(_:at:commit:)-(UnsafeRawBufferPointer,_,_)``.
    public func write(_ bytes: [UInt8], at offset: UInt64, commit: Bool = true) throws(SparseRangeCacheError) {
        var failure: SparseRangeCacheError?
        bytes.withUnsafeBytes { buffer in
            do throws(SparseRangeCacheError) {
                try write(buffer, at: offset, commit: commit)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// Reads `range` into `buffer` (which must hold `range.length` bytes) when the cache holds all of it; returns
    /// false, reading nothing, when any byte is missing.
    public func read(_ range: ByteRange, into buffer: UnsafeMutableRawBufferPointer) throws(SparseRangeCacheError)
        -> Bool
    {
        guard contains(range) else { return false }
        guard UInt64(buffer.count) >= range.length, off_t(exactly: range.upperBound) != nil else {
            throw SparseRangeCacheError(.rangeOutOfBounds, path: dataPath, range: range)
        }
        let fd = try descriptor()
        guard let base = buffer.baseAddress else { return true }
        var done = 0
        let total = Int(range.length)
        while done < total {
            let count: Int
            do {
                count = try retryingOnInterrupt {
                    pread(fd, base + done, total - done, off_t(range.offset) + off_t(done))
                }
            } catch {
                throw SparseRangeCacheError(.systemError, path: dataPath, errno: error, range: range)
            }
            guard count > 0 else {
                throw SparseRangeCacheError(.systemError, path: dataPath, errno: .ioError, range: range)
            }
            done += count
        }
        return true
    }

    /// The bytes of `range` when the cache holds all of them, else nil.
    public func read(_ range: ByteRange) throws(SparseRangeCacheError) -> [UInt8]? {
        guard contains(range), let count = Int(exactly: range.length) else { return nil }
        var failure: SparseRangeCacheError?
        var complete = false
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            do throws(SparseRangeCacheError) {
                complete = try read(range, into: UnsafeMutableRawBufferPointer(buffer))
                initialized = complete ? count : 0
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return complete ? bytes : nil
    }

    /// Makes every write so far durable: flushes the data file, then atomically replaces the map.
    public func commit() throws(SparseRangeCacheError) {
        var failure: SparseRangeCacheError?
        commitLock.withLock { _ in
            do throws(SparseRangeCacheError) {
                let fd = try descriptor()
                let snapshot = state.withLock { state -> (ByteRangeSet, [String: String])? in
                    guard state.dirty else { return nil }
                    state.dirty = false
                    return (state.written, state.metadata)
                }
                guard let (ranges, metadata) = snapshot else { return }
                do throws(Errno) {
                    // Every range in the snapshot was written before it was recorded, so this flush covers it.
                    try syncToStorage(fd)
                    try RangeMapFile.save(path: mapPath, ranges: ranges, metadata: metadata, mode: mode)
                } catch {
                    state.withLock { $0.dirty = true }
                    throw SparseRangeCacheError(.systemError, path: mapPath, errno: error)
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// Forgets every range and the metadata, truncating the data file (used when the remote resource changed).
    public func removeAll() throws(SparseRangeCacheError) {
        let fd = try descriptor()
        state.withLock {
            $0.written = ByteRangeSet()
            $0.metadata = [:]
            $0.dirty = true
        }
        try commit()
        guard ftruncate(fd, 0) == 0 else {
            throw SparseRangeCacheError(.systemError, path: dataPath, errno: .current)
        }
    }

    /// Closes the data file without committing. Later calls throw `closed`.
    public func close() {
        let fd = state.withLock { state -> Int32 in
            let fd = state.fd
            state.fd = -1
            return fd
        }
        if fd >= 0 {
            _ = systemClose(fd)
        }
    }
}

/// The map file: a small text format, versioned, with a checksum over everything before the last line.
///
/// ```
/// TSPK-RANGES 1
/// meta <percent-encoded key> <percent-encoded value>
/// range <offset> <length>
/// sum <FNV-1a 64 of the lines above, hex>
/// ```
enum RangeMapFile {
    static let header = "TSPK-RANGES 1"

    static func encode(ranges: ByteRangeSet, metadata: [String: String]) -> [UInt8] {
        var text = header + "\n"
        for key in metadata.keys.sorted() {
            text += "meta \(percentEncode(key)) \(percentEncode(metadata[key] ?? ""))\n"
        }
        for range in ranges {
            text += "range \(range.offset) \(range.length)\n"
        }
        var bytes = Array(text.utf8)
        bytes += Array("sum \(String(checksum(bytes), radix: 16))\n".utf8)
        return bytes
    }

    static func decode(_ bytes: [UInt8]) -> (ByteRangeSet, [String: String])? {
        guard bytes.last == UInt8(ascii: "\n") else { return nil }
        let body = bytes.dropLast()
        guard let lastNewline = body.lastIndex(of: UInt8(ascii: "\n")) else { return nil }
        let content = Array(bytes[..<(lastNewline + 1)])
        let sumLine = String(decoding: body[(lastNewline + 1)...], as: UTF8.self)
        guard sumLine == "sum \(String(checksum(content), radix: 16))" else { return nil }
        let lines = String(decoding: content, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.first == Substring(header) else { return nil }
        var ranges = ByteRangeSet()
        var metadata: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            switch fields.first {
            case "meta" where fields.count == 3:
                guard let key = percentDecode(fields[1]), let value = percentDecode(fields[2]) else { return nil }
                metadata[key] = value
            case "range" where fields.count == 3:
                guard let offset = UInt64(fields[1]), let length = UInt64(fields[2]),
                    let range = ByteRange(offset: offset, length: length)
                else { return nil }
                ranges.insert(range)
            default:
                return nil
            }
        }
        return (ranges, metadata)
    }

    static func load(path: String) -> (ByteRangeSet, [String: String])? {
        guard let streamer = try? FileStreamer(path: path), let size = try? streamer.size(), size <= 64 << 20,
            let bytes = try? streamer.read(at: 0, length: Int(size))
        else { return nil }
        return decode(bytes)
    }

    static func save(path: String, ranges: ByteRangeSet, metadata: [String: String], mode: UInt16) throws(Errno) {
        try writeFileAtomically(encode(ranges: ranges, metadata: metadata), to: path, mode: mode)
    }

    static func checksum(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// A map field: bytes from `!` to `~` but `%` kept, the rest percent-encoded; `%` alone for the empty text.
    static func percentEncode(_ text: String) -> String {
        text.isEmpty ? "%" : Percent.encode(text) { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "%") }
    }

    static func percentDecode(_ text: Substring) -> String? {
        if text == "%" { return "" }
        return Percent.decode(text.utf8).map { String(decoding: $0, as: UTF8.self) }
    }
}
