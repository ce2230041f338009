// Number formats of tsinspect's reports (output and JSON come from the CLI toolkit).

/// "0x0100"
func hexPID(_ pid: UInt16) -> String {
    let digits = String(pid, radix: 16)
    return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}

func hexByte(_ value: UInt8) -> String {
    let digits = String(value, radix: 16)
    return "0x" + (digits.count < 2 ? "0" : "") + digits
}

/// Seconds with three decimals, e.g. "5.005".
func formatSeconds(_ seconds: Double) -> String {
    let millis = Int64((seconds * 1000).rounded())
    let sign = millis < 0 ? "-" : ""
    let magnitude = abs(millis)
    let fraction = String(magnitude % 1000)
    return sign + "\(magnitude / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}
