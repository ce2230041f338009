// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "FileRange",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "FileRange", targets: ["FileRange"])
    ],
    dependencies: [
        .package(path: "../TextCodecs"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "FileRange",
            dependencies: [.product(name: "TextCodecs", package: "TextCodecs")],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "SparseCacheCrashWriter",
            dependencies: ["FileRange"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "DurableFileCrashWriter",
            dependencies: ["FileRange"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FileRangeTests",
            dependencies: ["FileRange", .product(name: "TestSupport", package: "TestSupport")],
            swiftSettings: swiftSettings
        ),
    ]
)
