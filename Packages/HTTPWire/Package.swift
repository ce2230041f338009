// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "HTTPWire",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "HTTPWire", targets: ["HTTPWire"])
    ],
    dependencies: [
        .package(path: "../TextCodecs"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "HTTPWire",
            dependencies: [.product(name: "TextCodecs", package: "TextCodecs")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HTTPWireTests",
            dependencies: ["HTTPWire", .product(name: "TestSupport", package: "TestSupport")],
            swiftSettings: swiftSettings
        ),
    ]
)
