// A child process for the crash test of DurableFile: it replaces a file through the durable writer, in chunks, and
// either stops at one step of the write and waits to be killed, or rewrites the file over and over until it is.
//
// Usage: DurableFileCrashWriter TARGET STEP
//   STEP is opened, wrote (half the chunks written), synced, renamed or folderSynced: the writer replaces TARGET
//   with version 1, prints "stopped at STEP" once that step is done, and waits (the test kills it with SIGKILL).
//   STEP loop: versions 1, 2, 3, … one after another, printing "ready" once version 1 is in place.
//
// Version g of the file: its number (8 bytes, little-endian), then DurableFileCrashPattern.byte(g, offset) for
// DurableFileCrashPattern.length(g) bytes. The test checks the file against the same formula.
import FileRange

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The bytes of version `generation`, as the test computes them too.
func version(_ generation: UInt64) -> [UInt8] {
    let length = 8 + Int(64 << 10) * Int(1 + generation % 5) + Int(generation % 7)
    var bytes = [UInt8](repeating: 0, count: length)
    for index in 0..<8 { bytes[index] = UInt8(truncatingIfNeeded: generation >> (8 * UInt64(index))) }
    for index in 8..<length {
        bytes[index] = UInt8(truncatingIfNeeded: (UInt64(index) &* 0x9E37_79B1 &+ generation &* 0x85EB_CA6B) >> 11)
    }
    return bytes
}

func say(_ text: String) {
    let line = Array((text + "\n").utf8)
    _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// Waits forever for the test's SIGKILL.
func hang() -> Never {
    while true { sleep(60) }
}

// From argc/argv, which every standard library declares read-only (see SparseCacheCrashWriter).
let arguments = (0..<Int(CommandLine.argc)).map { CommandLine.unsafeArgv[$0].map { String(cString: $0) } ?? "" }
let steps = ["opened", "wrote", "synced", "renamed", "folderSynced"]
guard arguments.count == 3, steps.contains(arguments[2]) || arguments[2] == "loop" else {
    print("usage: DurableFileCrashWriter TARGET opened|wrote|synced|renamed|folderSynced|loop")
    exit(64)
}
let target = arguments[1]
let stop = arguments[2]

/// Writes `bytes` over `target` in 16 KiB chunks, telling `observer` each step.
func replace(_ target: String, with bytes: [UInt8], observer: @escaping (String) -> Void) throws(DurableFileError) {
    let half = UInt64(bytes.count / 2)
    var toldHalf = false
    let file = try DurableFile(
        replacing: target,
        observer: { step in
            switch step {
            case .opened: observer("opened")
            case .wrote(let total):
                if !toldHalf && total >= half {
                    toldHalf = true
                    observer("wrote")
                }
            case .synced: observer("synced")
            case .renamed: observer("renamed")
            case .folderSynced: observer("folderSynced")
            }
        })
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + (16 << 10))
        try file.write(bytes[offset..<end])
        offset = end
    }
    try file.commit()
}

do throws(DurableFileError) {
    if stop == "loop" {
        var generation: UInt64 = 1
        while true {
            try replace(target, with: version(generation)) { _ in }
            if generation == 1 { say("ready") }
            generation += 1
        }
    } else {
        try replace(target, with: version(1)) { step in
            if step == stop {
                say("stopped at \(step)")
                hang()
            }
        }
        say("done")
    }
} catch {
    print("error: \(error)")
    exit(1)
}
