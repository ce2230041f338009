import FileRange
import Foundation
import Testing

/// The folders one test made in the temporary directory, removed when that test ends (also when it fails or throws).
///
/// A suite marked `.temporaryFolders` gets one of these per test (and per argument of a parameterized test) through a
/// task local, so tests running in parallel never remove each other's folders.
final class TemporaryFolders: Sendable {
    @TaskLocal static var current: TemporaryFolders?

    private let paths = LockedValue<[String]>([])

    /// A new, empty folder `<temporary directory>/<prefix><UUID>` owned by the running test.
    static func make(prefix: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        let path = NSTemporaryDirectory() + prefix + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        if let current {
            current.paths.withLock { $0.append(path) }
        } else {
            Issue.record(
                "\(path) was made outside a .temporaryFolders test, so nothing will remove it",
                sourceLocation: sourceLocation)
        }
        return path
    }

    fileprivate func removeAll() {
        for path in paths.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}

struct TemporaryFoldersTrait: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard !test.isSuite else { return try await function() }
        let folders = TemporaryFolders()
        defer { folders.removeAll() }
        try await TemporaryFolders.$current.withValue(folders) { try await function() }
    }
}

extension Trait where Self == TemporaryFoldersTrait {
    /// Each test of the suite removes the folders it made with `TemporaryFolders.make(prefix:)` when it ends.
    static var temporaryFolders: Self { TemporaryFoldersTrait() }
}
