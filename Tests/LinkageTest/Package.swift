// swift-tools-version: 6.1
// Proves the pure cores stay light: Scripts/check-linkage.sh builds these executables and reads what they link.
// LinkageCore (FileRange + MPEGTS + FragmentedMP4 + HTTPWire) must link no Foundation library; LinkagePlaylist (HLSPlaylist) at most
// FoundationEssentials. LinkageCanary imports Foundation on purpose, so the check proves it can see a Foundation link.
import PackageDescription

let package = Package(
    name: "LinkageTest",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: "../../Packages/FileRange"),
        .package(path: "../../Packages/MPEGTS"),
        .package(path: "../../Packages/FragmentedMP4"),
        .package(path: "../../Packages/HTTPWire"),
        .package(path: "../../Packages/HLSPlaylist"),
    ],
    targets: [
        .executableTarget(
            name: "LinkageCore",
            dependencies: [
                .product(name: "FileRange", package: "FileRange"),
                .product(name: "MPEGTS", package: "MPEGTS"),
                .product(name: "FragmentedMP4", package: "FragmentedMP4"),
                .product(name: "HTTPWire", package: "HTTPWire"),
            ]
        ),
        .executableTarget(
            name: "LinkagePlaylist",
            dependencies: [.product(name: "HLSPlaylist", package: "HLSPlaylist")]
        ),
        .executableTarget(name: "LinkageCanary"),
    ]
)
