// DownloadManager's export: a completed TS task concatenated into one file, streamed off the actor.
import FileRange
import HLSPlaylist

extension DownloadManager {
    /// Concatenates a completed, unencrypted, TS-only task into one `.ts` file at `destination`, through FileRange's
    /// durable writer (a crash leaves whatever was at `destination` before, or the whole export). The segments are
    /// streamed a megabyte at a time off the actor, on FileRange's `BlockingPool`.
    public func export(_ id: String, to destination: String) async throws(DownloadError) {
        guard let record = records[id] else { throw Self.noSuchTask(id) }
        guard record.state == .completed, let sources = record.sources, let variant = sources.media.first else {
            throw DownloadError(
                .unsupported, "only completed tasks can be exported; this one is \(record.state.rawValue)")
        }
        let folder = storeRoot + "/" + record.folder
        try await BlockingPool.shared.run { () throws(DownloadError) -> Void in
            try Self.export(folder: folder, variantFolder: variant.folder, to: destination)
        }
    }

    /// The body of ``export(_:to:)``, on a file thread: reads the task's playlist, then appends each segment.
    nonisolated static func export(
        folder: String, variantFolder: String, to destination: String
    ) throws(DownloadError) {
        let playlist = try Planner.parse(
            SourcePlaylist(
                url: "file:///local/index.m3u8",
                text: String(decoding: try Files.read(folder + "/index.m3u8"), as: UTF8.self),
                folder: variantFolder))
        let media = playlist.media(url: "file:///local/index.m3u8")
        guard media.segments.allSatisfy({ $0.keys.isEmpty && $0.map == nil }) else {
            throw DownloadError(.unsupported, "only unencrypted TS tasks can be exported")
        }
        let writer = try DurableWriter(replacing: destination)
        for segment in media.segments where !segment.gap {
            let name = String(segment.uri.dropFirst("file:///local/".count))
            let range = segment.byteRange.map { (offset: $0.offset, length: $0.length) }
            try Fetcher.append(folder + "/" + name, range: range, to: writer)
        }
        try writer.commit()
    }
}
