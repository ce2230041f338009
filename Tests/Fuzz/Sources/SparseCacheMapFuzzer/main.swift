// Fuzzes FileRange's SparseRangeCache map file (what a crash, a full disk or another program may leave beside the
// data): the input is written as the map, the cache is opened over a data file of a length the first byte chooses.
// Nothing may trap; opening either fails with a typed error or gives a cache whose answers agree with each other:
// a range it contains has nothing missing and reads back its own length; what is missing is not contained.
import FileRange
import FuzzSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let folder: String = {
    var template = Array("/tmp/sparse-map-fuzz-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { fail("mkdtemp failed") }
    return String(cString: made)
}()

func fuzzOne(_ raw: UnsafeRawBufferPointer) {
    let bytes = [UInt8](raw)
    let dataPath = folder + "/data"
    let mapPath = folder + "/data.map"
    FileSystem.removeFile(dataPath)
    guard (try? writeFileAtomically(bytes, to: mapPath, durable: false)) != nil else { fail("cannot write the map") }
    let dataLength = Int(bytes.first ?? 0) * 16
    guard (try? writeFileAtomically([UInt8](repeating: 0x5A, count: dataLength), to: dataPath, durable: false)) != nil
    else { fail("cannot write the data") }
    guard let cache = try? SparseRangeCache(dataPath: dataPath, mapPath: mapPath) else { return }
    for offset in stride(from: UInt64(0), to: 4096, by: 61) {
        guard let range = ByteRange(offset: offset, length: 97) else { continue }
        let missing = cache.missing(in: range)
        if cache.contains(range) {
            if !missing.isEmpty { fail("a contained range has missing parts") }
            guard let read = try? cache.read(range) else { continue }
            if UInt64(read.count) != range.length { fail("a contained range read \(read.count) bytes") }
        } else if missing.isEmpty {
            fail("a range not contained has nothing missing")
        }
        for gap in missing where cache.contains(gap) { fail("a missing range is contained") }
    }
}

runFuzzer(fuzzOne)
