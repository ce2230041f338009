// Apple glue: compiled in TSPlayerKit on Apple platforms, and on Linux as the module TSPlayerKitAppleGlue against
// the AVFoundation stand-in in Tests/AppleStandIn (TSPLAYERKIT_APPLE_GLUE is set there). It uses only the public API
// of the packages, so the Linux build proves it would compile as TSPlayerKit's own code too.
#if canImport(AVFoundation) && (canImport(Darwin) || TSPLAYERKIT_APPLE_GLUE)
    public import AVFoundation
    import Foundation
    #if TSPLAYERKIT_APPLE_GLUE
        public import TSPlayerKit
    #endif

    /// An `AVPlayerItem` for a raw `.ts` file, a file of concatenated segments, a folder of `.ts` files or an HLS
    /// folder: a thin layer over `TSPlayback.TSPlaybackSession`, `TSPlayback.TSFolderSession`,
    /// `TSPlayback.HLSFolderSession` and the shared `LoopbackHTTP.PlaybackServer`, where all the logic lives and is
    /// tested on every platform.
    ///
    /// ```swift
    /// let item = try TSPlayerItem(tsFileURL: movieURL)
    /// let player = AVPlayer(playerItem: item.playerItem)   // keep `item` alive while it plays
    /// ```
    ///
    /// The initialisers are synchronous and safe on the main thread and inside a task: they register the session
    /// with the server on the calling thread (a few milliseconds the first time, to bind the loopback port) and never
    /// wait on Swift's cooperative pool. They throw ``FileStreamerError/cannotOpenFile(_:)`` when the file or folder
    /// cannot be opened, ``FileStreamerError/offsetOutOfRange(offset:fileSize:)`` when a given segment lies outside
    /// its file, ``TSPlayerItemError`` for bad arguments and for anything else (``TSPlayerItemError/playback(_:)``
    /// with the session's `LoopbackHTTP.PlaybackError`). The session's routes disappear when the item is released.
    public final class TSPlayerItem {
        /// The item to give to `AVPlayer`.
        public let playerItem: AVPlayerItem
        /// The loopback URL of the playlist the item plays.
        public let url: URL
        /// The session that serves the item.
        public let source: any PlaybackSource
        private let server: PlaybackServer

        /// Plays a `.ts` file; its duration comes from the file itself.
        public convenience init(tsFileURL: URL) throws {
            try self.init(
                source: Self.open { () throws(PlaybackError) in try TSPlaybackSession(tsFile: tsFileURL.path) })
        }

        /// Plays a `.ts` file served as `container`: `TSPlayback.PlaybackContainer.auto` serves fragmented MP4 when the
        /// file has HEVC or several audio tracks (offered as audio renditions), TS byte ranges otherwise. In a file of
        /// several programs, `program` (the PAT's program_number) is played; nil: the first with video, else audio.
        public convenience init(tsFileURL: URL, container: PlaybackContainer, program: UInt16? = nil) throws {
            try self.init(
                source: Self.open { () throws(PlaybackError) in
                    try TSPlaybackSession(
                        tsFile: tsFileURL.path, options: .init(container: container, program: program))
                })
        }

        /// Plays a `.ts` file. The duration is measured from the file; `totalDuration` is accepted for compatibility.
        public convenience init(tsFileURL: URL, totalDuration: Double) throws {
            try self.init(tsFileURL: tsFileURL)
        }

        /// Plays a file of concatenated segments whose byte ranges and durations are given.
        public convenience init(tsFileURL: URL, segments: [SegmentInfo]) throws {
            guard !segments.isEmpty else { throw TSPlayerItemError.emptySegments }
            try self.init(
                source: Self.open { () throws(PlaybackError) in
                    try TSPlaybackSession(tsFile: tsFileURL.path, segments: segments)
                })
        }

        /// Plays a folder of `.ts` files: the given segments (each naming its `file`), or every `.ts` file in name
        /// order when `segments` is nil.
        public convenience init(tsFilesDirectory: URL, segments: [SegmentInfo]? = nil) throws {
            if let segments {
                guard !segments.isEmpty else { throw TSPlayerItemError.emptySegments }
                guard segments.allSatisfy({ $0.file != nil }) else { throw TSPlayerItemError.missingFileField }
            }
            try self.init(
                source: Self.open { () throws(PlaybackError) in
                    try TSFolderSession(folder: tsFilesDirectory.path, segments: segments)
                })
        }

        /// Plays a folder holding an HLS presentation (fMP4 or TS), served as it is.
        public convenience init(fmp4Directory: URL) throws {
            let session = try Self.open { () throws(PlaybackError) in
                try HLSFolderSession(folder: fmp4Directory.path)
            }
            try self.init(source: session, entry: session.entryPlaylist)
        }

        /// Plays any playback source from `server`, starting at its playlist `entry`.
        public init(source: any PlaybackSource, entry: String = "master.m3u8", server: PlaybackServer = .shared)
            throws
        {
            let base: String
            do {
                base = try server.register(source)
            } catch {
                throw TSPlayerItemError.playback(error)
            }
            guard let url = URL(string: base + entry) else {
                server.removeWithoutWaiting(source)
                throw TSPlayerItemError.playback(PlaybackError(.serverFailed, detail: "bad URL \(base + entry)"))
            }
            self.source = source
            self.server = server
            self.url = url
            self.playerItem = AVPlayerItem(url: url)
        }

        deinit {
            server.removeWithoutWaiting(source)
        }

        /// Opens a session, turning its error into the seed library's.
        private static func open<S>(_ body: () throws(PlaybackError) -> S) throws -> S {
            do {
                return try body()
            } catch {
                throw seedError(for: error)
            }
        }

        /// The seed library's error for a session's: a file that cannot be opened or a segment outside its file are
        /// ``FileStreamerError``s, as they were there; the rest are ``TSPlayerItemError``s.
        static func seedError(for error: PlaybackError) -> any Error {
            switch error.code {
            case .cannotOpen:
                guard let path = error.path else { return TSPlayerItemError.playback(error) }
                return FileStreamerError.cannotOpenFile(URL(fileURLWithPath: path))
            case .invalidSegment:
                guard let offset = error.offset, let size = error.fileSize else {
                    return TSPlayerItemError.playback(error)
                }
                return FileStreamerError.offsetOutOfRange(offset: offset, fileSize: size)
            case .emptySegments: return TSPlayerItemError.emptySegments
            case .missingFileField: return TSPlayerItemError.missingFileField
            default: return TSPlayerItemError.playback(error)
            }
        }
    }

    /// Errors of ``TSPlayerItem``'s initialisers, as in the seed library, plus the session's own.
    public enum TSPlayerItemError: Error, LocalizedError, Equatable, Sendable {
        /// `segments` was empty.
        case emptySegments
        /// A folder segment had no `file`.
        case missingFileField
        /// The session could not be opened or served.
        case playback(PlaybackError)

        public var errorDescription: String? {
            switch self {
            case .emptySegments: "The list of segments is empty."
            case .missingFileField: "A segment of a folder of .ts files names no file."
            case .playback(let error): "\(error)"
            }
        }
    }

    /// The seed library's file errors, thrown by ``TSPlayerItem``'s initialisers for the same causes.
    public enum FileStreamerError: Error, LocalizedError {
        /// Kept for source compatibility: the toolkit's readers are never released mid-read, so it is never thrown.
        case deinitialized
        /// A segment starts past, or runs past, the end of its file of `fileSize` bytes.
        case offsetOutOfRange(offset: UInt64, fileSize: UInt64)
        /// The file or folder does not exist or cannot be read.
        case cannotOpenFile(URL)
        /// Kept for source compatibility: system errors underneath are reported as
        /// ``TSPlayerItemError/playback(_:)``, with the session's `LoopbackHTTP.PlaybackError`.
        case systemError(any Error)

        public var errorDescription: String? {
            switch self {
            case .deinitialized: "The file reader was released before the read finished."
            case .offsetOutOfRange(let offset, let size): "Offset \(offset) is outside the file of \(size) bytes."
            case .cannotOpenFile(let url): "Cannot open \(url.path) for reading."
            case .systemError(let error): "\(error)"
            }
        }
    }
#endif
