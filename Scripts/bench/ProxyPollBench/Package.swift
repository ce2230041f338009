// swift-tools-version: 6.1
// The in-process proxy poll benchmark: times what AdStrippingProxy does per poll of a live media playlist (parse,
// filter, rewrite into proxy routes, output bytes), without the network. Scripts/bench/proxy.sh builds it in release
// mode and prints its figure beside the end-to-end poll times.
import PackageDescription

let package = Package(
    name: "ProxyPollBench",
    platforms: [.macOS(.v13)],
    dependencies: [.package(path: "../../../Packages/HLSProxy")],
    targets: [
        .executableTarget(
            name: "proxy-poll-bench",
            dependencies: [.product(name: "HLSProxy", package: "HLSProxy")]
        )
    ]
)
