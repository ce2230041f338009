// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "HLSDownload",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "HLSDownload", targets: ["HLSDownload"])
    ],
    dependencies: [
        .package(path: "../HLSPlaylist"),
        .package(path: "../MPEGTS"),
        .package(path: "../HTTPClient"),
        .package(path: "../FileRange"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "HLSDownload",
            dependencies: [
                .product(name: "HLSPlaylist", package: "HLSPlaylist"),
                .product(name: "MPEGTS", package: "MPEGTS"),
                .product(name: "HTTPClient", package: "HTTPClient"),
                .product(name: "FileRange", package: "FileRange"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HLSDownloadTests",
            dependencies: [
                "HLSDownload", .product(name: "HTTPClient", package: "HTTPClient"),
                .product(name: "TestSupport", package: "TestSupport"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
