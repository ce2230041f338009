// swift-tools-version: 6.1
// This manifest is mirrored by the root Package.swift; Scripts/check-manifests.sh keeps the two in step.
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "FragmentedMP4",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .visionOS(.v1)],
    products: [
        .library(name: "FragmentedMP4", targets: ["FragmentedMP4"])
    ],
    dependencies: [
        .package(path: "../TextCodecs"),
        .package(path: "../MPEGTS"),
        .package(path: "../TestSupport"),
    ],
    targets: [
        .target(
            name: "FragmentedMP4",
            dependencies: [
                .product(name: "MPEGTS", package: "MPEGTS"),
                .product(name: "TextCodecs", package: "TextCodecs"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FragmentedMP4Tests",
            dependencies: [
                "FragmentedMP4",
                .product(name: "MPEGTS", package: "MPEGTS"),
                .product(name: "TestSupport", package: "TestSupport"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
