// Where parsed attribute lists keep the positions of their names and values: one list's spans as a view into a
// chunk that the lists of the same parse share, so parsing a playlist with an attribute list on every line
// allocates a chunk now and then rather than an array per list.

extension AttributeList {
    /// The spans of one list: `count` of them from `start` in a chunk that may hold those of other lists too.
    struct Spans: Sendable, RandomAccessCollection {
        private let chunk: SpanChunk
        // 32-bit so that a list, and every tag and line holding one, stays small (a line of 112 bytes, not 128).
        // They cannot overflow: a chunk holds at most one list of over 4,096 spans, and 2^32 spans of a chunk
        // would take 160 GB.
        private let start: UInt32
        private let storedCount: UInt32

        init(chunk: SpanChunk, start: Int, count: Int) {
            self.chunk = chunk
            self.start = UInt32(truncatingIfNeeded: start)
            self.storedCount = UInt32(truncatingIfNeeded: count)
        }

        var count: Int { Int(storedCount) }
        var startIndex: Int { 0 }
        var endIndex: Int { Int(storedCount) }
        /// The span at `position` (0 to count - 1: a position outside traps, as an array's does).
        subscript(position: Int) -> Span {
            precondition(position >= 0 && position < count, "attribute position out of range")
            // start + count <= the chunk's written spans (see SpanArena.append), so the read is in bounds.
            return chunk.base[Int(start) &+ position]
        }
    }
}

/// Room for the spans of many attribute lists. Each list's spans are written once, into the part of the chunk no
/// list has used yet, before the list exists, and never change after; that is what makes sharing the chunk
/// between lists, and across threads, safe.
final class SpanChunk: @unchecked Sendable {
    let base: UnsafeMutablePointer<AttributeList.Span>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = Swift.max(capacity, 1)
        base = .allocate(capacity: self.capacity)
    }
    // Spans hold only integers: nothing to deinitialize.
    deinit { base.deallocate() }
}

/// Where the attribute lists of one parse keep their spans: in chunks that grow in size as more lists are
/// parsed, so a playlist with an attribute list on every line allocates a chunk now and then, not an array per
/// list. A list's spans are appended one by one and then taken as one view by ``finish()``.
struct SpanArena {
    private var chunk: SpanChunk?
    /// Spans of finished lists at the start of ``chunk``.
    private var used = 0
    /// Spans of the list being read, after those.
    private(set) var pendingCount = 0
    /// The capacity of the next chunk (0: each chunk just fits the list that needs it).
    private var nextCapacity: Int
    /// The name ids of the first eight attributes of the list before and of this one, a byte each (0xFF: none or
    /// an unknown name), so the parser can try the same names first.
    private var previousIDs = UInt64.max
    private var currentIDs = UInt64.max

    init(firstChunk: Int = 0) { nextCapacity = firstChunk }

    /// The name id the list before had at `position` (one of the first eight), or -1.
    @inline(__always)
    func previousID(at position: Int) -> Int {
        guard position >= 0, position < 8 else { return -1 }
        let id = Int(truncatingIfNeeded: (previousIDs >> UInt64(position &* 8)) & 0xFF)
        return id < 0x80 ? id : -1
    }

    /// Adds a span to the list being read.
    @inline(__always)
    mutating func append(_ span: AttributeList.Span) {
        if pendingCount < 8 {
            let shift = UInt64(pendingCount &* 8)
            let id = UInt64(UInt8(truncatingIfNeeded: span.nameID >= 0 && span.nameID < 0x80 ? span.nameID : -1))
            currentIDs = currentIDs & ~(0xFF << shift) | id << shift
        }
        let index = used &+ pendingCount
        guard let c = chunk, index < c.capacity else { return appendToNewChunk(span) }
        // index < capacity, checked just above.
        (c.base + index).initialize(to: span)
        pendingCount &+= 1
    }

    /// Moves the list being read to a new chunk with room for more, then adds `span`.
    @inline(never)
    private mutating func appendToNewChunk(_ span: AttributeList.Span) {
        let capacity = Swift.max(2 &* (pendingCount &+ 1), nextCapacity)
        let next = SpanChunk(capacity: capacity)
        // pendingCount + 1 <= capacity: the spans read so far and the new one fit.
        if let old = chunk, pendingCount > 0 { next.base.initialize(from: old.base + used, count: pendingCount) }
        (next.base + pendingCount).initialize(to: span)
        chunk = next
        used = 0
        pendingCount &+= 1
        if nextCapacity > 0 { nextCapacity = Swift.min(nextCapacity &* 2, 4096) }
    }

    /// The spans of the list being read, as a view that stays valid (they are never written again); the next
    /// ``append(_:)`` starts the next list.
    mutating func finish() -> AttributeList.Spans {
        defer {
            used &+= pendingCount
            pendingCount = 0
            previousIDs = currentIDs
            currentIDs = UInt64.max
        }
        guard let c = chunk else { return AttributeList.Spans(chunk: SpanArena.empty, start: 0, count: 0) }
        return AttributeList.Spans(chunk: c, start: used, count: pendingCount)
    }

    /// The chunk of lists without attributes.
    private static let empty = SpanChunk(capacity: 1)
}
