import TextCodecs

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP date (RFC 9110 §5.6.7): whole seconds since the Unix epoch, in UTC, parsed and formatted without
/// Foundation.
public struct HTTPDate: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Seconds since 1970-01-01T00:00:00Z.
    public var secondsSince1970: Int64

    /// The date `secondsSince1970` seconds after the epoch.
    public init(secondsSince1970: Int64) {
        self.secondsSince1970 = secondsSince1970
    }

    /// The current time, truncated to whole seconds.
    public static func now() -> HTTPDate {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return HTTPDate(secondsSince1970: Int64(spec.tv_sec))
    }

    public static func < (lhs: HTTPDate, rhs: HTTPDate) -> Bool {
        lhs.secondsSince1970 < rhs.secondsSince1970
    }

    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let monthNames: StaticString = "JanFebMarAprMayJunJulAugSepOctNovDec"
    private static let dayLetters: StaticString = "SunMonTueWedThuFriSat"

    /// The preferred IMF-fixdate form, such as `Sun, 06 Nov 1994 08:49:37 GMT`, written byte by byte (the server
    /// sends one with every response). Years outside 0 to 9999 are clamped to them.
    public var imfFixdate: String {
        let (days, secondOfDay) = CivilDate.split(secondsSince1970: secondsSince1970)
        let (year, month, day) = CivilDate.date(fromDays: days)
        let weekday = CivilDate.weekday(fromDays: days)
        var out = [UInt8](repeating: 0x20, count: 29)
        out.withUnsafeMutableBufferPointer { b in
            func two(_ value: Int64, at index: Int) {
                b[index] = 0x30 + UInt8(value / 10)
                b[index + 1] = 0x30 + UInt8(value % 10)
            }
            for i in 0..<3 { b[i] = Self.dayLetters.utf8Start[weekday * 3 + i] }
            b[3] = UInt8(ascii: ",")
            two(day, at: 5)
            for i in 0..<3 { b[8 + i] = Self.monthNames.utf8Start[Int(month - 1) * 3 + i] }
            let y = max(0, min(9999, year))
            two(y / 100, at: 12)
            two(y % 100, at: 14)
            two(secondOfDay / 3600, at: 17)
            b[19] = UInt8(ascii: ":")
            two(secondOfDay / 60 % 60, at: 20)
            b[22] = UInt8(ascii: ":")
            two(secondOfDay % 60, at: 23)
            b[26] = UInt8(ascii: "G")
            b[27] = UInt8(ascii: "M")
            b[28] = UInt8(ascii: "T")
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { imfFixdate }

    /// Parses any of the three forms a recipient must accept: IMF-fixdate, the obsolete RFC 850 form and ANSI C's
    /// asctime form. Returns nil for anything else. A two-digit RFC 850 year that would lie more than 50 years in
    /// the future is read as the most recent past year with those digits.
    public static func parse(_ value: String) -> HTTPDate? {
        var scanner = DateScanner(Array(value.utf8))
        scanner.skipWhitespace()
        guard let dayName = scanner.letters() else { return nil }
        if scanner.take(UInt8(ascii: ",")) {
            guard scanner.take(UInt8(ascii: " ")) else { return nil }
            if dayNames.contains(dayName) {
                // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
                guard let day = scanner.digits(count: 2), scanner.take(UInt8(ascii: " ")),
                    let month = scanner.month(), scanner.take(UInt8(ascii: " ")),
                    let year = scanner.digits(count: 4), scanner.take(UInt8(ascii: " ")),
                    let time = scanner.time(), scanner.take(UInt8(ascii: " ")), scanner.literal("GMT"),
                    scanner.atEndIgnoringWhitespace()
                else { return nil }
                return make(year: year, month: month, day: day, time: time)
            }
            guard longDayNames.contains(dayName) else { return nil }
            // rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT
            guard let day = scanner.digits(count: 2), scanner.take(UInt8(ascii: "-")),
                let month = scanner.month(), scanner.take(UInt8(ascii: "-")),
                let shortYear = scanner.digits(count: 2), scanner.take(UInt8(ascii: " ")),
                let time = scanner.time(), scanner.take(UInt8(ascii: " ")), scanner.literal("GMT"),
                scanner.atEndIgnoringWhitespace()
            else { return nil }
            let currentYear = CivilDate.date(fromDays: CivilDate.split(secondsSince1970: now().secondsSince1970).days)
                .year
            var year = currentYear - currentYear % 100 + shortYear
            if year > currentYear + 50 { year -= 100 }
            return make(year: year, month: month, day: day, time: time)
        }
        // asctime-date: Sun Nov  6 08:49:37 1994
        guard dayNames.contains(dayName), scanner.take(UInt8(ascii: " ")), let month = scanner.month(),
            scanner.take(UInt8(ascii: " "))
        else { return nil }
        let day: Int64
        if scanner.take(UInt8(ascii: " ")) {
            guard let single = scanner.digits(count: 1) else { return nil }
            day = single
        } else {
            guard let double = scanner.digits(count: 2) else { return nil }
            day = double
        }
        guard scanner.take(UInt8(ascii: " ")), let time = scanner.time(), scanner.take(UInt8(ascii: " ")),
            let year = scanner.digits(count: 4), scanner.atEndIgnoringWhitespace()
        else { return nil }
        return make(year: year, month: month, day: day, time: time)
    }

    private static func make(year: Int64, month: Int64, day: Int64, time: (Int64, Int64, Int64)) -> HTTPDate? {
        let monthLengths: [Int64] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        let maxDay = month == 2 && CivilDate.isLeapYear(year) ? 29 : monthLengths[Int(month - 1)]
        guard day >= 1, day <= maxDay, time.0 < 24, time.1 < 60, time.2 < 61 else { return nil }
        let days = CivilDate.days(year: year, month: month, day: day)
        return HTTPDate(secondsSince1970: days * 86_400 + time.0 * 3600 + time.1 * 60 + min(time.2, 59))
    }
}

/// A cursor over the bytes of a date string.
private struct DateScanner {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
    }

    mutating func atEndIgnoringWhitespace() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }

    mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    mutating func letters() -> String? {
        let start = index
        while index < bytes.count,
            (bytes[index] >= UInt8(ascii: "A") && bytes[index] <= UInt8(ascii: "Z"))
                || (bytes[index] >= UInt8(ascii: "a") && bytes[index] <= UInt8(ascii: "z"))
        {
            index += 1
        }
        guard index > start else { return nil }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    mutating func literal(_ text: String) -> Bool {
        for byte in text.utf8 {
            guard take(byte) else { return false }
        }
        return true
    }

    mutating func digits(count: Int) -> Int64? {
        guard bytes.count - index >= count else { return nil }
        var value: Int64 = 0
        for _ in 0..<count {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            index += 1
        }
        return value
    }

    mutating func month() -> Int64? {
        guard let name = letters(),
            let position = [
                "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
                "Oct", "Nov", "Dec",
            ].firstIndex(of: name)
        else { return nil }
        return Int64(position + 1)
    }

    mutating func time() -> (Int64, Int64, Int64)? {
        guard let hour = digits(count: 2), take(UInt8(ascii: ":")), let minute = digits(count: 2),
            take(UInt8(ascii: ":")), let second = digits(count: 2)
        else { return nil }
        return (hour, minute, second)
    }
}
