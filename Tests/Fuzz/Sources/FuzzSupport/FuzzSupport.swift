// The entry point every fuzzer shares. Built with -DFUZZING (Scripts/fuzz.sh): libFuzzer's driver runs the
// fuzzer's function on generated inputs. Built without it: the files named on the command line are replayed (the
// crashers kept as regression inputs).
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The function under fuzzing, set once by `runFuzzer` before any input arrives.
nonisolated(unsafe) private var fuzzTarget: ((UnsafeRawBufferPointer) -> Void)?

#if FUZZING
    @_cdecl("LLVMFuzzerTestOneInput")
    public func testOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        fuzzTarget?(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }

    @_silgen_name("LLVMFuzzerRunDriver")
    func runDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
    ) -> CInt
#endif

/// Runs `body` on every input and exits: under libFuzzer when built with `-DFUZZING`, else on the files named on
/// the command line.
public func runFuzzer(_ body: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
    fuzzTarget = body
    #if FUZZING
        // SwiftPM renames an executable's entry point, so libFuzzer's own main never runs: start its driver here.
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runDriver(&argc, &argv, testOneInput))
    #else
        for path in CommandLine.arguments.dropFirst() {
            guard let file = fopen(path, "rb") else {
                print("cannot open \(path)")
                exit(2)
            }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = fread(&buffer, 1, buffer.count, file)
                if count <= 0 { break }
                bytes += buffer[..<count]
            }
            fclose(file)
            bytes.withUnsafeBytes { body($0) }
            print("replayed \(path)")
        }
        exit(0)
    #endif
}

/// Reports a broken property on stderr and aborts, which libFuzzer records as a crash (and a replay as a failure).
public func fail(_ message: String) -> Never {
    let line = Array((message + "\n").utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    abort()
}
