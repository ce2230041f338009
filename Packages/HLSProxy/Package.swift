// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "HLSProxy",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "HLSProxy", targets: ["HLSProxy"])
    ],
    dependencies: [
        .package(path: "../TextCodecs"),
        .package(path: "../FileRange"),
        .package(path: "../MPEGTS"),
        .package(path: "../FragmentedMP4"),
        .package(path: "../HLSPlaylist"),
        .package(path: "../HLSAdFilter"),
        .package(path: "../HTTPClient"),
        .package(path: "../LoopbackHTTP"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "HLSProxy",
            dependencies: [
                .product(name: "FileRange", package: "FileRange"),
                .product(name: "MPEGTS", package: "MPEGTS"),
                .product(name: "FragmentedMP4", package: "FragmentedMP4"),
                .product(name: "HLSPlaylist", package: "HLSPlaylist"),
                .product(name: "HLSAdFilter", package: "HLSAdFilter"),
                .product(name: "HTTPClient", package: "HTTPClient"),
                .product(name: "LoopbackHTTP", package: "LoopbackHTTP"),
                .product(name: "TextCodecs", package: "TextCodecs"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HLSProxyTests",
            dependencies: [
                "HLSProxy", .product(name: "HTTPClient", package: "HTTPClient"),
                .product(name: "TestSupport", package: "TestSupport"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
