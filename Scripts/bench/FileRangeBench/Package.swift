// swift-tools-version: 6.1
// The FileStreamer benchmark executable; Scripts/bench/filestreamer.sh builds it in release mode and runs it beside
// cat and dd on the same file.
import PackageDescription

let package = Package(
    name: "FileRangeBench",
    platforms: [.macOS(.v13)],
    dependencies: [.package(path: "../../../Packages/FileRange")],
    targets: [
        .executableTarget(
            name: "filerange-bench",
            dependencies: [.product(name: "FileRange", package: "FileRange")]
        )
    ]
)
