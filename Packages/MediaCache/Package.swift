// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "MediaCache",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "MediaCache", targets: ["MediaCache"])
    ],
    dependencies: [
        .package(path: "../FileRange"),
        .package(path: "../HTTPClient"),
        .package(path: "../LoopbackHTTP"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "MediaCache",
            dependencies: [
                .product(name: "FileRange", package: "FileRange"),
                .product(name: "HTTPClient", package: "HTTPClient"),
                .product(name: "LoopbackHTTP", package: "LoopbackHTTP"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "MediaCacheTests",
            dependencies: [
                "MediaCache", .product(name: "HTTPClient", package: "HTTPClient"),
                .product(name: "TestSupport", package: "TestSupport"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
