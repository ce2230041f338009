// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "HLSAdFilter",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "HLSAdFilter", targets: ["HLSAdFilter"])
    ],
    dependencies: [
        .package(path: "../TextCodecs"),
        .package(path: "../HLSPlaylist"),
        .package(path: "../MPEGTS"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "HLSAdFilter",
            dependencies: [
                .product(name: "HLSPlaylist", package: "HLSPlaylist"),
                .product(name: "MPEGTS", package: "MPEGTS"),
                .product(name: "TextCodecs", package: "TextCodecs"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HLSAdFilterTests",
            dependencies: ["HLSAdFilter", .product(name: "TestSupport", package: "TestSupport")],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
    ]
)
