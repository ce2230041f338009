// swift-tools-version: 6.1
// libFuzzer targets, one executable per parser (STYLE.md item 18). Not part of the root package: build and run
// them with Scripts/fuzz.sh NAME SECONDS, which passes -sanitize=fuzzer,address and -DFUZZING.
//
// To add a fuzzer: put Sources/<Name>/main.swift (a function over the input's bytes, then `runFuzzer(thatFunction)`
// from FuzzSupport, which starts libFuzzer or replays files; see FuzzDemuxer) and add one entry below with the
// modules it needs; each module comes from Packages/<Module>. A libFuzzer dictionary (a `.dict` file) beside
// main.swift is passed to the fuzzer by Scripts/fuzz.sh; list it under the entry's `dictionaries` so that SwiftPM
// does not take it for a source file.
import PackageDescription

let fuzzers: [(name: String, dependencies: [String], dictionaries: [String])] = [
    ("FuzzDemuxer", ["MPEGTS"], []),
    ("FuzzSCTE35", ["MPEGTS"], []),
    ("PlaylistFuzzer", ["HLSPlaylist"], []),
    ("HTTPRequestFuzzer", ["LoopbackHTTP", "FileRange"], ["http.dict"]),
    ("RangeHeaderFuzzer", ["FileRange"], []),
    ("SparseCacheMapFuzzer", ["FileRange"], []),
    ("AdFilterFuzzer", ["HLSAdFilter", "HLSPlaylist"], []),
    ("TaskStoreFuzzer", ["HLSDownload", "FileRange"], []),
    ("FuzzBoxReader", ["FragmentedMP4"], []),
    ("FuzzTSBridge", ["FragmentedMP4", "MPEGTS"], []),
    ("HTTPResponseFuzzer", ["HTTPWire"], []),
    ("DownloadPlannerFuzzer", ["HLSDownload"], []),
    ("FuzzLATM", ["MPEGTS", "FragmentedMP4"], []),
]

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let modules = Set(fuzzers.flatMap(\.dependencies)).sorted()

let package = Package(
    name: "Fuzz",
    platforms: [.macOS(.v13)],
    products: fuzzers.map { .executable(name: $0.name, targets: [$0.name]) },
    dependencies: modules.map { .package(path: "../../Packages/\($0)") },
    targets: [.target(name: "FuzzSupport", swiftSettings: swiftSettings)]
        + fuzzers.map { fuzzer in
            .executableTarget(
                name: fuzzer.name,
                dependencies: ["FuzzSupport"] + fuzzer.dependencies.map { .product(name: $0, package: $0) },
                exclude: fuzzer.dictionaries,
                swiftSettings: swiftSettings
            )
        }
)
