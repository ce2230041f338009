// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "TSPlayerKit",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "TSPlayerKit", targets: ["TSPlayerKit"])
    ],
    dependencies: [
        .package(path: "../FileRange"),
        .package(path: "../MPEGTS"),
        .package(path: "../FragmentedMP4"),
        .package(path: "../HLSPlaylist"),
        .package(path: "../LoopbackHTTP"),
        .package(path: "../HLSAdFilter"),
        .package(path: "../HLSDownload"),
        .package(path: "../HTTPClient"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "TSPlayerKit",
            dependencies: [
                .product(name: "FileRange", package: "FileRange"),
                .product(name: "MPEGTS", package: "MPEGTS"),
                .product(name: "FragmentedMP4", package: "FragmentedMP4"),
                .product(name: "HLSPlaylist", package: "HLSPlaylist"),
                .product(name: "LoopbackHTTP", package: "LoopbackHTTP"),
                .product(name: "HLSAdFilter", package: "HLSAdFilter"),
                .product(name: "HLSDownload", package: "HLSDownload"),
                .product(name: "HTTPClient", package: "HTTPClient"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TSPlayerKitTests",
            dependencies: [
                "TSPlayerKit", .product(name: "HTTPClient", package: "HTTPClient"),
                .product(name: "TestSupport", package: "TestSupport"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
