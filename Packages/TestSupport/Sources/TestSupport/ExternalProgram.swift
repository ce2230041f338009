// The outside programs the tests use as real peers (nginx, ffmpeg, curl, ...): found on PATH or in the sbin
// folders; a missing one is a failure, never a skip, since Scripts/deps.sh installs every one of them.
public import Foundation
public import Testing

public enum ExternalProgram {
    /// The path of `name` on PATH (or /usr/sbin, /sbin); records a failure when it is missing.
    public static func find(_ name: String, sourceLocation: SourceLocation = #_sourceLocation) -> URL? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin") + ":/usr/sbin:/sbin"
        for dir in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(dir)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        Issue.record("\(name) is not installed; run Scripts/deps.sh", sourceLocation: sourceLocation)
        return nil
    }
}
