/// A run of bytes: a first offset and a length. Empty ranges are allowed; the end never overflows `UInt64`.
public struct ByteRange: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The offset of the first byte.
    public let offset: UInt64
    /// The number of bytes.
    public let length: UInt64

    /// A range of `length` bytes from `offset`, or nil when `offset + length` does not fit in `UInt64`.
    public init?(offset: UInt64, length: UInt64) {
        guard !offset.addingReportingOverflow(length).overflow else { return nil }
        self.offset = offset
        self.length = length
    }

    /// A range from any integer values, or nil when either is negative or the end does not fit in `UInt64`.
    public init?(offset: some BinaryInteger, length: some BinaryInteger) {
        guard let offset = UInt64(exactly: offset), let length = UInt64(exactly: length) else { return nil }
        self.init(offset: offset, length: length)
    }

    /// The range from `first` to `last` inclusive, or nil when `last < first` or the range is all of `UInt64`.
    public init?(first: UInt64, last: UInt64) {
        guard last >= first, last < UInt64.max else { return nil }
        self.offset = first
        self.length = last - first + 1
    }

    /// The range `lowerBound ..< upperBound`, or nil when `upperBound < lowerBound`.
    public init?(lowerBound: UInt64, upperBound: UInt64) {
        guard upperBound >= lowerBound else { return nil }
        self.offset = lowerBound
        self.length = upperBound - lowerBound
    }

    /// One past the last byte.
    public var upperBound: UInt64 { offset + length }

    /// The last byte's offset, or nil for an empty range.
    public var last: UInt64? { length == 0 ? nil : offset + length - 1 }

    /// Whether the range holds no byte.
    public var isEmpty: Bool { length == 0 }

    /// Whether `position` lies inside the range.
    public func contains(_ position: UInt64) -> Bool {
        position >= offset && position < upperBound
    }

    /// Whether every byte of `other` lies inside this range (an empty range is inside any range).
    public func contains(_ other: ByteRange) -> Bool {
        other.isEmpty || (other.offset >= offset && other.upperBound <= upperBound)
    }

    /// Whether the two ranges share at least one byte.
    public func overlaps(_ other: ByteRange) -> Bool {
        !isEmpty && !other.isEmpty && offset < other.upperBound && other.offset < upperBound
    }

    /// The bytes both ranges hold, or nil when they share none.
    public func intersection(_ other: ByteRange) -> ByteRange? {
        let low = Swift.max(offset, other.offset)
        let high = Swift.min(upperBound, other.upperBound)
        guard high > low else { return nil }
        return ByteRange(lowerBound: low, upperBound: high)
    }

    /// This range cut to fit inside `bound`, or nil when nothing is left.
    public func clamped(to bound: ByteRange) -> ByteRange? {
        intersection(bound)
    }

    public static func < (lhs: ByteRange, rhs: ByteRange) -> Bool {
        (lhs.offset, lhs.length) < (rhs.offset, rhs.length)
    }

    /// `first-last` inclusive as in HTTP, or `offset+0` for an empty range.
    public var description: String {
        guard let last else { return "\(offset)+0" }
        return "\(offset)-\(last)"
    }
}

/// A set of bytes kept as a normalised list of ranges: sorted, each non-empty, none overlapping or touching another.
public struct ByteRangeSet: Hashable, Sendable, Sequence, CustomStringConvertible {
    /// The normalised ranges, in ascending order.
    public private(set) var ranges: [ByteRange] = []

    /// The empty set.
    public init() {}

    /// The union of `ranges`.
    public init(_ ranges: some Sequence<ByteRange>) {
        for range in ranges {
            insert(range)
        }
    }

    public func makeIterator() -> IndexingIterator<[ByteRange]> {
        ranges.makeIterator()
    }

    /// Whether the set holds no byte.
    public var isEmpty: Bool { ranges.isEmpty }

    /// The number of bytes in the set.
    public var totalLength: UInt64 {
        ranges.reduce(0) { $0 + $1.length }
    }

    /// The index of the first range whose upper bound is at or after `position`.
    private func firstIndex(endingAtOrAfter position: UInt64) -> Int {
        var low = 0
        var high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].upperBound < position {
                low = mid + 1
            } else {
                high = mid
            }
        }
        return low
    }

    /// Adds every byte of `range`, merging with ranges it overlaps or touches.
    public mutating func insert(_ range: ByteRange) {
        guard !range.isEmpty else { return }
        let start = firstIndex(endingAtOrAfter: range.offset)
        var end = start
        var low = range.offset
        var high = range.upperBound
        while end < ranges.count, ranges[end].offset <= high {
            low = Swift.min(low, ranges[end].offset)
            high = Swift.max(high, ranges[end].upperBound)
            end += 1
        }
        guard let merged = ByteRange(lowerBound: low, upperBound: high) else { return }
        ranges.replaceSubrange(start..<end, with: [merged])
    }

    /// Removes every byte of `range`.
    public mutating func remove(_ range: ByteRange) {
        guard !range.isEmpty else { return }
        var start = firstIndex(endingAtOrAfter: range.offset)
        if start < ranges.count, ranges[start].upperBound == range.offset {
            start += 1
        }
        var end = start
        var replacement: [ByteRange] = []
        while end < ranges.count, ranges[end].offset < range.upperBound {
            let existing = ranges[end]
            if existing.offset < range.offset,
                let left = ByteRange(lowerBound: existing.offset, upperBound: range.offset)
            {
                replacement.append(left)
            }
            if existing.upperBound > range.upperBound,
                let right = ByteRange(lowerBound: range.upperBound, upperBound: existing.upperBound)
            {
                replacement.append(right)
            }
            end += 1
        }
        ranges.replaceSubrange(start..<end, with: replacement)
    }

    /// Whether every byte of `range` is in the set.
    public func contains(_ range: ByteRange) -> Bool {
        guard !range.isEmpty else { return true }
        let index = firstIndex(endingAtOrAfter: range.offset + 1)
        guard index < ranges.count else { return false }
        return ranges[index].contains(range)
    }

    /// Whether the byte at `position` is in the set.
    public func contains(_ position: UInt64) -> Bool {
        guard let single = ByteRange(offset: position, length: 1) else { return false }
        return contains(single)
    }

    /// The bytes in either set.
    public func union(_ other: ByteRangeSet) -> ByteRangeSet {
        var result = self
        for range in other.ranges {
            result.insert(range)
        }
        return result
    }

    /// The bytes in both sets.
    public func intersection(_ other: ByteRangeSet) -> ByteRangeSet {
        var result = ByteRangeSet()
        var i = 0
        var j = 0
        while i < ranges.count, j < other.ranges.count {
            if let common = ranges[i].intersection(other.ranges[j]) {
                result.ranges.append(common)
            }
            if ranges[i].upperBound < other.ranges[j].upperBound {
                i += 1
            } else {
                j += 1
            }
        }
        return result
    }

    /// The bytes of this set that are not in `other`.
    public func subtracting(_ other: ByteRangeSet) -> ByteRangeSet {
        var result = self
        for range in other.ranges {
            result.remove(range)
        }
        return result
    }

    /// The parts of `bound` that the set does not hold, in ascending order.
    public func gaps(within bound: ByteRange) -> [ByteRange] {
        guard !bound.isEmpty else { return [] }
        var gaps: [ByteRange] = []
        var cursor = bound.offset
        var index = firstIndex(endingAtOrAfter: bound.offset + 1)
        while cursor < bound.upperBound {
            guard index < ranges.count, ranges[index].offset < bound.upperBound else {
                if let tail = ByteRange(lowerBound: cursor, upperBound: bound.upperBound) { gaps.append(tail) }
                break
            }
            let range = ranges[index]
            if range.offset > cursor, let gap = ByteRange(lowerBound: cursor, upperBound: range.offset) {
                gaps.append(gap)
            }
            cursor = Swift.max(cursor, range.upperBound)
            index += 1
        }
        return gaps
    }

    public var description: String {
        "[" + ranges.map(\.description).joined(separator: ", ") + "]"
    }
}
