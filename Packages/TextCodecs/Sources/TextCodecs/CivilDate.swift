/// Proleptic Gregorian dates as day counts since 1970-01-01 (the civil-days algorithm): the one calendar routine of
/// the toolkit, under HTTP dates and EXT-X-PROGRAM-DATE-TIME alike.
public enum CivilDate {
    /// Days since 1970-01-01 of `year`-`month`-`day` (month 1 to 12; days past the month's end count on).
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date of a day count since 1970-01-01.
    public static func date(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
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

    /// The day of the week of a day count since 1970-01-01: 0 for Sunday to 6 for Saturday.
    public static func weekday(fromDays days: Int64) -> Int {
        Int(((days + 4) % 7 + 7) % 7)
    }

    /// The day count and the second of that day of a time `seconds` after 1970-01-01T00:00:00Z (floored, so times
    /// before the epoch fall on the day they belong to).
    public static func split(secondsSince1970 seconds: Int64) -> (days: Int64, secondOfDay: Int64) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        return (days, seconds - days * 86_400)
    }

    /// Whether `year` has 29 February.
    public static func isLeapYear(_ year: Int64) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }
}
