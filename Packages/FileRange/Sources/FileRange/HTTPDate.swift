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

    private static let dayNames = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
    private static let longDayNames = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// The preferred IMF-fixdate form, such as `Sun, 06 Nov 1994 08:49:37 GMT`.
    public var imfFixdate: String {
        let days = secondsSince1970 >= 0 ? secondsSince1970 / 86_400 : (secondsSince1970 - 86_399) / 86_400
        let secondOfDay = secondsSince1970 - days * 86_400
        let (year, month, day) = Self.civil(fromDays: days)
        let weekday = Self.dayNames[Int(((days % 7) + 7) % 7)]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var yearText = "\(year)"
        while yearText.count < 4 { yearText = "0" + yearText }
        return "\(weekday), \(two(day)) \(Self.monthNames[Int(month - 1)]) \(yearText) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
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
            let currentYear = civil(fromDays: now().secondsSince1970 / 86_400).year
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
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let maxDay = month == 2 && leap ? 29 : monthLengths[Int(month - 1)]
        guard day >= 1, day <= maxDay, time.0 < 24, time.1 < 60, time.2 < 61 else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return HTTPDate(secondsSince1970: days * 86_400 + time.0 * 3600 + time.1 * 60 + min(time.2, 59))
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (the civil-days algorithm).
    public static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01: the toolkit's one civil-date routine above the
    /// pure packages (HLSPlaylist, which imports nothing, keeps its own for EXT-X-PROGRAM-DATE-TIME).
    public static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
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
