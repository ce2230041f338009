// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Sockets",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "Sockets", targets: ["Sockets"])
    ],
    dependencies: [
        .package(path: "../FileRange"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "Sockets",
            dependencies: [
                .product(name: "FileRange", package: "FileRange")
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SocketsTests",
            dependencies: ["Sockets", .product(name: "TestSupport", package: "TestSupport")],
            swiftSettings: swiftSettings
        ),
    ]
)
