// Fixture loading for the HLSPlaylist tests: files under Fixtures/, found from this file's path.
import Foundation
import HLSPlaylist
import Testing

enum Fixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func files(_ folder: String, suffix: String = ".m3u8") -> [URL] {
        let dir = root.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { $0.hasSuffix(suffix) }.sorted().map { dir.appendingPathComponent($0) }
    }

    static func bytes(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }

    static func bytes(_ relative: String) throws -> [UInt8] { try bytes(root.appendingPathComponent(relative)) }
}
