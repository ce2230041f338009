// Fuzzes the SCTE-35 decoder: raw sections, and the same bytes as base64 and hex text.
import MPEGTS

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func fuzzOne(_ bytes: UnsafeRawBufferPointer) {
    let array = Array(bytes)
    _ = try? SpliceInfoSection(bytes: array)
    // With a valid CRC appended, the decoder gets past the CRC check and reads the body.
    if array.count >= 3 {
        var section = array
        let length = section.count + 1
        section[0] = 0xFC
        section[1] = 0x30 | UInt8(truncatingIfNeeded: length >> 8) & 0x0F
        section[2] = UInt8(truncatingIfNeeded: length)
        let crc = CRC32MPEG2.checksum(section)
        section += [
            UInt8(truncatingIfNeeded: crc >> 24), UInt8(truncatingIfNeeded: crc >> 16),
            UInt8(truncatingIfNeeded: crc >> 8), UInt8(truncatingIfNeeded: crc),
        ]
        _ = try? SpliceInfoSection(bytes: section)
    }
    let text = String(decoding: array, as: UTF8.self)
    _ = try? SpliceInfoSection(base64: text)
    _ = try? SpliceInfoSection(hex: text)
}

#if FUZZING
    @_cdecl("LLVMFuzzerTestOneInput")
    public func testOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }

    @_silgen_name("LLVMFuzzerRunDriver")
    func runDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
    ) -> CInt

    // SwiftPM renames an executable's entry point, so libFuzzer's own main never runs: start its driver here.
    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(runDriver(&argc, &argv, testOneInput))
#else
    // Without the fuzzer: replay the files named on the command line (crashers kept as regression inputs).
    for path in CommandLine.arguments.dropFirst() {
        guard let file = fopen(path, "rb") else { continue }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        fclose(file)
        bytes.withUnsafeBytes { fuzzOne($0) }
        print("replayed \(path)")
    }
#endif
