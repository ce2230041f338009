// File and standard input reading with a size cap, through FileRange (URLs: Fetch.swift; output, time, JSON and
// resource figures: the CLI toolkit).
import FileRange

enum InputError: Error {
    case unreadable(String)
}

enum IO {
    /// The largest input accepted (matches PlaylistLimits.default.maxBytes).
    static let maxBytes = 64 << 20

    /// The whole of `path` (`-`: standard input), at most `maxBytes` bytes.
    static func readFile(_ path: String, maxBytes: Int = IO.maxBytes) throws(InputError) -> [UInt8] {
        do {
            return try SequentialFileReader(path: path).readAll(limit: maxBytes)
        } catch {
            throw unreadable(error)
        }
    }

    /// The message for a failed read: the file and the system's words, or the cap.
    static func unreadable(_ error: FileSystemError, maxBytes: Int = IO.maxBytes) -> InputError {
        if error.errno == .fileTooLarge { return .unreadable("\(error.path): larger than \(maxBytes) bytes") }
        return .unreadable("\(error.path): \(error.errno.message)")
    }
}
