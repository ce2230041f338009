// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "TextCodecs",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "TextCodecs", targets: ["TextCodecs"])
    ],
    targets: [
        .target(
            name: "TextCodecs",
            dependencies: [],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TextCodecsTests",
            dependencies: ["TextCodecs"],
            swiftSettings: swiftSettings
        ),
    ]
)
