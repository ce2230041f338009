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
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .visionOS(.v2)],
    products: [
        .library(name: "HLSDownload", targets: ["HLSDownload"])
    ],
    dependencies: [
        .package(path: "../HLSPlaylist"),
        .package(path: "../FileRange"),
    ],
    targets: [
        .target(
            name: "HLSDownload",
            dependencies: [
                .product(name: "HLSPlaylist", package: "HLSPlaylist"),
                .product(name: "FileRange", package: "FileRange"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HLSDownloadTests",
            dependencies: ["HLSDownload"],
            swiftSettings: swiftSettings
        ),
    ]
)
