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
        .package(path: "../LoopbackHTTP"),
        .package(path: "../TSPlayback"),
        .package(path: "../HLSProxy"),
        .package(path: "../MediaCache"),
        .package(path: "../HLSDownload"),
        .package(path: "../HTTPClient"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "TSPlayerKit",
            dependencies: [
                .product(name: "FileRange", package: "FileRange"),
                .product(name: "HTTPClient", package: "HTTPClient"),
                .product(name: "LoopbackHTTP", package: "LoopbackHTTP"),
                .product(name: "TSPlayback", package: "TSPlayback"),
                .product(name: "HLSProxy", package: "HLSProxy"),
                .product(name: "MediaCache", package: "MediaCache"),
                .product(name: "HLSDownload", package: "HLSDownload"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TSPlayerKitTests",
            dependencies: [
                "TSPlayerKit",
                .product(name: "HTTPClient", package: "HTTPClient"),
                .product(name: "TestSupport", package: "TestSupport"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
