// swift-tools-version: 6.1
// The root package: every library, test and tool target of the repository, declared by path and with no package
// dependencies, so `swift test` here runs every test. Each Packages/<X>/Package.swift declares the same targets for
// that package alone; Scripts/check-manifests.sh fails when the two drift apart.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// One package under Packages/: its library module, the sibling modules it depends on (the DAG in DESIGN.md),
/// and any extra targets the package declares beside its library and its test target.
struct Module {
    var name: String
    var dependencies: [String]
    var testDependencies: [String] = []
    /// Files in the test target that are fixtures read through #filePath, not sources or resources.
    var testExclude: [String] = []
    var linkerSettings: [LinkerSetting] = []
    var extraTargets: [Target] = []
}

let modules: [Module] = [
    // The leaf of small pure codecs (RFC 3986 references, percent coding, hex, civil dates, byte search).
    Module(name: "TextCodecs", dependencies: []),
    Module(
        name: "FileRange",
        dependencies: ["TextCodecs"],
        testDependencies: ["TestSupport"],
        extraTargets: [
            .executableTarget(
                name: "SparseCacheCrashWriter",
                dependencies: ["FileRange"],
                path: "Packages/FileRange/Sources/SparseCacheCrashWriter",
                swiftSettings: swiftSettings
            ),
            .executableTarget(
                name: "DurableFileCrashWriter",
                dependencies: ["FileRange"],
                path: "Packages/FileRange/Sources/DurableFileCrashWriter",
                swiftSettings: swiftSettings
            ),
        ]
    ),
    // Floating-point rounding calls libm, which a program that imports no C library does not link otherwise.
    Module(
        name: "HLSPlaylist", dependencies: ["TextCodecs"], testDependencies: ["TestSupport"], testExclude: ["Fixtures"],
        linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]
    ),
    Module(name: "MPEGTS", dependencies: ["FileRange"], testDependencies: ["TestSupport"]),
    Module(
        name: "FragmentedMP4", dependencies: ["MPEGTS", "TextCodecs"], testDependencies: ["MPEGTS", "TestSupport"]),
    Module(name: "HTTPWire", dependencies: ["TextCodecs"], testDependencies: ["TestSupport"]),
    Module(name: "Sockets", dependencies: ["FileRange"], testDependencies: ["TestSupport"]),
    Module(
        name: "LoopbackHTTP",
        dependencies: ["HTTPWire", "Sockets", "FileRange", "TextCodecs"],
        testDependencies: ["Sockets", "TestSupport"],
        extraTargets: [
            .executableTarget(
                name: "loopback-http-testserver",
                dependencies: ["LoopbackHTTP", "FileRange"],
                path: "Packages/LoopbackHTTP/Sources/loopback-http-testserver",
                swiftSettings: swiftSettings
            )
        ]
    ),
    Module(
        name: "HTTPClient", dependencies: ["HTTPWire", "Sockets", "FileRange", "TextCodecs"],
        testDependencies: ["TestSupport"]),
    Module(
        name: "HLSAdFilter", dependencies: ["HLSPlaylist", "MPEGTS", "TextCodecs"], testDependencies: ["TestSupport"],
        testExclude: ["Fixtures"]),
    Module(
        name: "HLSDownload", dependencies: ["HLSPlaylist", "MPEGTS", "HTTPClient", "FileRange"],
        testDependencies: ["HTTPClient", "TestSupport"]),
    Module(
        name: "TSPlayback",
        dependencies: ["FileRange", "MPEGTS", "FragmentedMP4", "HLSPlaylist", "LoopbackHTTP", "TextCodecs"],
        testDependencies: ["TestSupport"]
    ),
    Module(
        name: "HLSProxy",
        dependencies: [
            "FileRange", "MPEGTS", "FragmentedMP4", "HLSPlaylist", "HLSAdFilter", "HTTPClient", "LoopbackHTTP",
            "TextCodecs",
        ],
        testDependencies: ["HTTPClient", "TestSupport"]
    ),
    // The caching proxy fetches through HTTPClient's RemotePlaylistFetcher (retries, caps, the upstream policy), the
    // origin-fetching layer it shares with HLSProxy; it does not link the ad-stripping proxy.
    Module(
        name: "MediaCache", dependencies: ["FileRange", "HTTPClient", "LoopbackHTTP"],
        testDependencies: ["HTTPClient", "TestSupport"]),
    // The umbrella: re-exports of the modules an app needs, the seed library's API and the Apple glue.
    Module(
        name: "TSPlayerKit",
        dependencies: [
            "FileRange", "HTTPClient", "LoopbackHTTP", "TSPlayback", "HLSProxy", "MediaCache", "HLSDownload",
        ],
        testDependencies: ["HTTPClient", "TestSupport"]
    ),
]

/// Command-line tools under Tools/<name>, with the modules each one uses.
let tools: [(name: String, dependencies: [String])] = [
    ("m3u8lint", ["HLSPlaylist", "HTTPClient", "FileRange", "CLIToolkit"]),
    ("tsinspect", ["MPEGTS", "HLSPlaylist", "FileRange", "CLIToolkit"]),
]

// The command-line toolkit the tools share (argument declarations, help, usage errors and exit codes, JSON, TTY
// progress, signals): internal to the repository, not a product, and importing only the standard library, the C
// library, Dispatch and FileRange (its one system-call helper).
var targets: [Target] = [
    .target(name: "CLIToolkit", dependencies: ["FileRange"], path: "Tools/CLIToolkit", swiftSettings: swiftSettings),
    .testTarget(
        name: "CLIToolkitTests", dependencies: ["CLIToolkit"], path: "Tests/CLIToolkitTests",
        swiftSettings: swiftSettings),
    // The test support every test target may share (temporary folders, the nginx origin, outside programs):
    // Packages/TestSupport, a package of its own, depending on FileRange alone (its blocking pool, where the test
    // clients wait); a target here, never a product.
    .target(
        name: "TestSupport", dependencies: ["FileRange"], path: "Packages/TestSupport/Sources/TestSupport",
        swiftSettings: swiftSettings),
    .testTarget(
        name: "TestSupportTests", dependencies: ["TestSupport", "FileRange"],
        path: "Packages/TestSupport/Tests/TestSupportTests",
        swiftSettings: swiftSettings),
]
for module in modules {
    targets.append(
        .target(
            name: module.name,
            dependencies: module.dependencies.map { .target(name: $0) },
            path: "Packages/\(module.name)/Sources/\(module.name)",
            swiftSettings: swiftSettings,
            linkerSettings: module.linkerSettings
        )
    )
    targets.append(
        .testTarget(
            name: "\(module.name)Tests",
            dependencies: ([module.name] + module.testDependencies).map { .target(name: $0) },
            path: "Packages/\(module.name)/Tests/\(module.name)Tests",
            exclude: module.testExclude,
            swiftSettings: swiftSettings
        )
    )
    targets += module.extraTargets
}
for tool in tools {
    targets.append(
        .executableTarget(
            name: tool.name,
            dependencies: tool.dependencies.map { .target(name: $0) },
            path: "Tools/\(tool.name)",
            swiftSettings: swiftSettings
        )
    )
}
targets.append(
    .executableTarget(
        name: "tsplayer",
        dependencies: [
            "TSPlayerKit", "TSPlayback", "HLSProxy", "MediaCache", "LoopbackHTTP", "MPEGTS", "HLSDownload",
            "HLSPlaylist", "HTTPClient", "FileRange", "FragmentedMP4", "CLIToolkit",
        ],
        path: "Tools/tsplayer",
        resources: [.copy("Resources/sample.ts")],
        swiftSettings: swiftSettings
    )
)
targets.append(
    .testTarget(
        name: "EndToEndTests",
        dependencies: ["TSPlayerKit", "TSPlayback", "LoopbackHTTP", "FragmentedMP4", "TestSupport"],
        path: "Tests/EndToEndTests",
        swiftSettings: swiftSettings
    )
)

// The Apple glue (Packages/TSPlayerKit/Sources/TSPlayerKit/Apple), compiled on Linux as a module of its own against
// test-only stand-ins of the part of AVFoundation and UniformTypeIdentifiers it uses, and tested there. On Apple
// platforms the glue is part of TSPlayerKit and these targets do not exist. Tests/AppleGlue/README.md says what this
// proves and what it cannot.
#if os(Linux)
    let standIns = ["AVFoundation", "UniformTypeIdentifiers"]
    for name in standIns {
        targets.append(.target(name: name, path: "Tests/AppleStandIn/\(name)", swiftSettings: swiftSettings))
    }
    targets.append(
        .target(
            name: "TSPlayerKitAppleGlue",
            dependencies: ["TSPlayerKit", "FileRange"] + standIns.map { .target(name: $0) },
            path: "Tests/AppleGlue/Glue",
            swiftSettings: swiftSettings + [.define("TSPLAYERKIT_APPLE_GLUE")]
        )
    )
    targets.append(
        .testTarget(
            name: "AppleGlueTests",
            dependencies: ["TSPlayerKitAppleGlue", "TSPlayerKit", "LoopbackHTTP", "FileRange", "TestSupport"]
                + standIns.map { .target(name: $0) },
            path: "Tests/AppleGlue/Tests",
            swiftSettings: swiftSettings
        )
    )
#endif

let package = Package(
    name: "TSPlayerKit",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: modules.map { .library(name: $0.name, targets: [$0.name]) }
        + tools.map { .executable(name: $0.name, targets: [$0.name]) }
        + [.executable(name: "tsplayer", targets: ["tsplayer"])],
    targets: targets
)
