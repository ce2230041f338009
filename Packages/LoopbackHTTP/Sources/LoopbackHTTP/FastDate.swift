import FileRange
/// IMF-fixdate formatting into bytes (RFC 9110 §5.6.7), for the hot path; FileRange's `HTTPDate` parses.
import HTTPWire

enum FastDate {
    private static let days: StaticString = "ThuFriSatSunMonTueWed"
    private static let months: StaticString = "JanFebMarAprMayJunJulAugSepOctNovDec"

    static func imfFixdate(_ seconds: Int64) -> String {
        let dayNumber = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - dayNumber * 86_400
        let (year, month, day) = HTTPDate.civil(fromDays: dayNumber)
        let weekday = Int(((dayNumber % 7) + 7) % 7)
        var out = [UInt8](repeating: 0x20, count: 29)
        out.withUnsafeMutableBufferPointer { b in
            for i in 0..<3 { b[i] = days.utf8Start[weekday * 3 + i] }
            b[3] = UInt8(ascii: ",")
            b[5] = 0x30 + UInt8(day / 10)
            b[6] = 0x30 + UInt8(day % 10)
            for i in 0..<3 { b[8 + i] = months.utf8Start[Int(month - 1) * 3 + i] }
            let y = Int(max(0, min(9999, year)))
            b[12] = 0x30 + UInt8(y / 1000)
            b[13] = 0x30 + UInt8(y / 100 % 10)
            b[14] = 0x30 + UInt8(y / 10 % 10)
            b[15] = 0x30 + UInt8(y % 10)
            let h = Int(secondOfDay / 3600)
            let m = Int(secondOfDay / 60 % 60)
            let s = Int(secondOfDay % 60)
            b[17] = 0x30 + UInt8(h / 10)
            b[18] = 0x30 + UInt8(h % 10)
            b[19] = UInt8(ascii: ":")
            b[20] = 0x30 + UInt8(m / 10)
            b[21] = 0x30 + UInt8(m % 10)
            b[22] = UInt8(ascii: ":")
            b[23] = 0x30 + UInt8(s / 10)
            b[24] = 0x30 + UInt8(s % 10)
            b[26] = UInt8(ascii: "G")
            b[27] = UInt8(ascii: "M")
            b[28] = UInt8(ascii: "T")
        }
        return String(decoding: out, as: UTF8.self)
    }
}
