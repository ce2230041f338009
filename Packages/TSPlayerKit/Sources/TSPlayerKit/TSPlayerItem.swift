#if canImport(AVFoundation)
    import AVFoundation
    import Foundation
    import FileRange

    /// Errors of the seed library's API, kept so its users can switch.
    public enum TSPlayerItemError: Error, Sendable {
        /// `segments` was empty.
        case emptySegments
        /// A folder segment had no `file`.
        case missingFileField
        /// The session could not be opened or served.
        case playback(PlaybackError)
    }

    /// An `AVPlayerItem` for a raw `.ts` file, a file of concatenated segments, a folder of `.ts` files or an fMP4 HLS
    /// folder: a thin layer over ``TSPlaybackSession``, ``TSFolderSession``, ``HLSFolderSession`` and the shared
    /// ``PlaybackServer``, where all the logic lives and is tested on every platform.
    ///
    /// The initialisers wait for the loopback server to bind (a few milliseconds on first use). Keep the item alive
    /// while it plays: its session's routes disappear when it is released.
    public final class TSPlayerItem: Sendable {
        /// The item to give to `AVPlayer`.
        public let playerItem: AVPlayerItem
        /// The loopback URL of the playlist the item plays.
        public let url: URL
        private let source: any PlaybackSource

        /// Plays a `.ts` file; its duration comes from the file itself.
        public convenience init(tsFileURL: URL) throws(TSPlayerItemError) {
            try self.init(
                source: Self.open { () throws(PlaybackError) in try TSPlaybackSession(tsFile: tsFileURL.path) },
                entry: "master.m3u8")
        }

        /// Plays a `.ts` file. The duration is measured from the file; `totalDuration` is accepted for compatibility.
        public convenience init(tsFileURL: URL, totalDuration: Double) throws(TSPlayerItemError) {
            try self.init(tsFileURL: tsFileURL)
        }

        /// Plays a file of concatenated segments whose byte ranges and durations are given.
        public convenience init(tsFileURL: URL, segments: [SegmentInfo]) throws(TSPlayerItemError) {
            guard !segments.isEmpty else { throw .emptySegments }
            try self.init(
                source: Self.open { () throws(PlaybackError) in
                    try TSPlaybackSession(tsFile: tsFileURL.path, segments: segments)
                }, entry: "master.m3u8")
        }

        /// Plays a folder of `.ts` files: the given segments (each naming its `file`), or every `.ts` file in name order.
        public convenience init(tsFilesDirectory: URL, segments: [SegmentInfo]? = nil) throws(TSPlayerItemError) {
            if let segments {
                guard !segments.isEmpty else { throw .emptySegments }
                guard segments.allSatisfy({ $0.file != nil }) else { throw .missingFileField }
            }
            try self.init(
                source: Self.open { () throws(PlaybackError) in
                    try TSFolderSession(folder: tsFilesDirectory.path, segments: segments)
                }, entry: "master.m3u8")
        }

        /// Plays a folder holding an HLS presentation (fMP4 or TS), served as it is.
        public convenience init(fmp4Directory: URL) throws(TSPlayerItemError) {
            let session = try Self.open { () throws(PlaybackError) in try HLSFolderSession(folder: fmp4Directory.path) }
            try self.init(source: session, entry: session.entryPlaylist)
        }

        private init(source: any PlaybackSource, entry: String) throws(TSPlayerItemError) {
            let base = try Self.register(source)
            guard let url = URL(string: base + entry) else {
                throw .playback(PlaybackError(.serverFailed, detail: base))
            }
            self.source = source
            self.url = url
            self.playerItem = AVPlayerItem(url: url)
        }

        deinit {
            let source = self.source
            Task { await PlaybackServer.shared.remove(source) }
        }

        private static func open<S>(_ body: () throws(PlaybackError) -> S) throws(TSPlayerItemError) -> S {
            do {
                return try body()
            } catch {
                throw .playback(error)
            }
        }

        /// Adds the source to the shared server, waiting for it to bind.
        private static func register(_ source: any PlaybackSource) throws(TSPlayerItemError) -> String {
            let box = RegistrationBox()
            let done = DispatchSemaphore(value: 0)
            Task {
                do {
                    let base = try await PlaybackServer.shared.add(source)
                    box.value.withLock { $0 = .success(base) }
                } catch {
                    box.value.withLock { $0 = .failure(error) }
                }
                done.signal()
            }
            done.wait()
            switch box.value.withLock({ $0 }) {
            case .success(let base): return base
            case .failure(let error): throw .playback(error)
            case nil: throw .playback(PlaybackError(.serverFailed, detail: "no answer"))
            }
        }
    }
    /// Carries the registration result out of the task.
    private final class RegistrationBox: Sendable {
        let value = LockedValue<Result<String, PlaybackError>?>(nil)
    }
#endif
