// Clean-up of what tests make in the temporary directory: a folder owned by one test goes when that test ends (also
// when it fails or throws); fixtures made once per test process go when the process exits.
public import Foundation
public import Testing

/// The folders one test made in the temporary directory, removed when that test ends (also when it fails or throws).
///
/// A suite marked `.temporaryFolders` gets one of these per test (and per argument of a parameterized test) through a
/// task local, so tests running in parallel never remove each other's folders. Each test target picks the flavour
/// it names `TemporaryFolders` (a one-line typealias in its `TestSupport.swift`): ``TemporaryFolderPaths`` hands out
/// paths, ``TemporaryFolderURLs`` file URLs.
public final class TemporaryFolderRegistry: Sendable {
    @TaskLocal public static var current: TemporaryFolderRegistry?

    private let urls = Locked<[URL]>([])

    init() {}

    /// A new, empty folder `<temporary directory>/<prefix><UUID>` owned by the running test.
    public static func make(prefix: String, sourceLocation: SourceLocation = #_sourceLocation) -> URL {
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

    /// A new, empty folder `<temporary directory>/<prefix><UUID>` for fixtures this process makes once and shares
    /// between its tests, removed when the process exits.
    public static func makeShared(prefix: String) -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(prefix + UUID().uuidString)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        removeAtExit(url)
        return url
    }

    fileprivate func removeAll() {
        for url in urls.withLock({ $0 }) { try? FileManager.default.removeItem(at: url) }
    }

    /// Removes `url` (a fixture folder this process made and shares between its tests) when the process exits.
    public static func removeAtExit(_ url: URL) {
        let first = atExit.withLock { list in
            list.append(url)
            return list.count == 1
        }
        if first {
            atexit {
                for url in TemporaryFolderRegistry.atExit.withLock({ $0 }) {
                    try? FileManager.default.removeItem(at: url)
                }
            }
        }
    }

    private static let atExit = Locked<[URL]>([])
}

/// ``TemporaryFolderRegistry`` for tests that work with paths.
public enum TemporaryFolderPaths {
    /// A new, empty folder `<temporary directory>/<prefix><UUID>` owned by the running test, as a path.
    public static func make(prefix: String, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        TemporaryFolderRegistry.make(prefix: prefix, sourceLocation: sourceLocation).path
    }

    /// A new, empty folder for fixtures shared by this process's tests, removed when the process exits, as a path.
    public static func makeShared(prefix: String) -> String { TemporaryFolderRegistry.makeShared(prefix: prefix).path }

    /// Removes `path` when the process exits.
    public static func removeAtExit(_ path: String) {
        TemporaryFolderRegistry.removeAtExit(URL(fileURLWithPath: path))
    }
}

/// ``TemporaryFolderRegistry`` for tests that work with file URLs.
public enum TemporaryFolderURLs {
    /// A new, empty folder `<temporary directory>/<prefix><UUID>` owned by the running test.
    public static func make(prefix: String, sourceLocation: SourceLocation = #_sourceLocation) -> URL {
        TemporaryFolderRegistry.make(prefix: prefix, sourceLocation: sourceLocation)
    }

    /// A new, empty folder for fixtures shared by this process's tests, removed when the process exits.
    public static func makeShared(prefix: String) -> URL { TemporaryFolderRegistry.makeShared(prefix: prefix) }

    /// Removes `url` (a fixture folder this process made and shares between its tests) when the process exits.
    public static func removeAtExit(_ url: URL) { TemporaryFolderRegistry.removeAtExit(url) }
}

public struct TemporaryFoldersTrait: SuiteTrait, TestTrait, TestScoping {
    public init() {}

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard !test.isSuite else { return try await function() }
        let folders = TemporaryFolderRegistry()
        // Removing a test's folders can take seconds (many files, a slow disk): on a thread of its own, never on the
        // cooperative threads that the tests running beside this one need.
        do {
            try await TemporaryFolderRegistry.$current.withValue(folders) { try await function() }
        } catch {
            await blocking { folders.removeAll() }
            throw error
        }
        await blocking { folders.removeAll() }
    }
}

extension Trait where Self == TemporaryFoldersTrait {
    /// Each test of the suite removes the folders it made with `TemporaryFolders.make(prefix:)` when it ends.
    public static var temporaryFolders: Self { TemporaryFoldersTrait() }
}
