// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "HLSPlaylist",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "HLSPlaylist", targets: ["HLSPlaylist"])
    ],
    dependencies: [
        .package(path: "../TextCodecs"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "HLSPlaylist",
            dependencies: [.product(name: "TextCodecs", package: "TextCodecs")],
            swiftSettings: swiftSettings,
            // Floating-point rounding calls libm, which a program that imports no C library does not link otherwise.
            linkerSettings: [.linkedLibrary("m", .when(platforms: [.linux]))]
        ),
        .testTarget(
            name: "HLSPlaylistTests",
            dependencies: ["HLSPlaylist", .product(name: "TestSupport", package: "TestSupport")],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
    ]
)
