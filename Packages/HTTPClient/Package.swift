// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "HTTPClient",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "HTTPClient", targets: ["HTTPClient"])
    ],
    dependencies: [
        .package(path: "../TextCodecs"),
        .package(path: "../HTTPWire"),
        .package(path: "../Sockets"),
        .package(path: "../FileRange"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "HTTPClient",
            dependencies: [
                .product(name: "HTTPWire", package: "HTTPWire"),
                .product(name: "Sockets", package: "Sockets"),
                .product(name: "FileRange", package: "FileRange"),
                .product(name: "TextCodecs", package: "TextCodecs"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HTTPClientTests",
            dependencies: ["HTTPClient", .product(name: "TestSupport", package: "TestSupport")],
            swiftSettings: swiftSettings
        ),
    ]
)
