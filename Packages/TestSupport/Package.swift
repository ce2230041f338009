// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
// Test-only: other packages list it as a dependency of their test targets alone (the manifests check refuses a
// library that depends on it), and the root declares it as a target, not a product.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "TestSupport",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "TestSupport", targets: ["TestSupport"])
    ],
    dependencies: [
        .package(path: "../FileRange")
    ],
    targets: [
        .target(
            name: "TestSupport",
            dependencies: [.product(name: "FileRange", package: "FileRange")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TestSupportTests",
            dependencies: ["TestSupport", .product(name: "FileRange", package: "FileRange")],
            swiftSettings: swiftSettings
        ),
    ]
)
