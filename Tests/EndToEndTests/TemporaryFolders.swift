import FileRange
// Clean-up of what the end-to-end tests make in the temporary directory: a folder owned by one test goes when that
// test ends (also when it fails or throws); fixtures made once per test process go when the process exits.
import Foundation
import Testing

/// The folders one test made in the temporary directory, removed when that test ends (also when it fails or throws).
///
/// A suite marked `.temporaryFolders` gets one of these per test (and per argument of a parameterized test) through a
/// task local, so tests running in parallel never remove each other's folders.
final class TemporaryFolders: Sendable {
    @TaskLocal static var current: TemporaryFolders?

    private let urls = LockedValue<[URL]>([])

    /// A new, empty folder `<temporary directory>/<prefix><UUID>` owned by the running test.
    static func make(prefix: String, sourceLocation: SourceLocation = #_sourceLocation) -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(prefix + UUID().uuidString)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        if let current {
            current.urls.withLock { $0.append(url) }
        } else {
            Issue.record(
                "\(url.path) was made outside a .temporaryFolders test, so nothing will remove it",
                sourceLocation: sourceLocation)
        }
        return url
    }

    fileprivate func removeAll() {
        for url in urls.withLock({ $0 }) { try? FileManager.default.removeItem(at: url) }
    }

    /// Removes `url` (a fixture folder this process made and shares between its tests) when the process exits.
    static func removeAtExit(_ url: URL) {
        let first = atExit.withLock { list in
            list.append(url)
            return list.count == 1
        }
        if first {
            atexit {
                for url in TemporaryFolders.atExit.withLock({ $0 }) { try? FileManager.default.removeItem(at: url) }
            }
        }
    }

    private static let atExit = LockedValue<[URL]>([])
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
