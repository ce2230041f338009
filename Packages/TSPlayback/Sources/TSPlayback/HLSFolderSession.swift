import FileRange
public import LoopbackHTTP

/// Serves a folder that already holds an HLS presentation (TS or fMP4 segments, keys, playlists; for example a
/// finished download) as it is, confined to that folder: `..`, encoded separators and symbolic links that leave the
/// folder are refused by LoopbackHTTP's static-file handler.
public final class HLSFolderSession: PlaybackSource {
    /// The folder.
    public let folder: String
    /// The playlist players should open, relative to the folder (`master.m3u8` or `index.m3u8` when present).
    public let entryPlaylist: String
    /// The token the folder's routes sit under.
    public let token: SessionToken
    private let files: StaticFileHandler

    /// Opens `folder`. The entry playlist is `entry` when given, else the first of `master.m3u8`, `index.m3u8` and
    /// `playlist.m3u8` that exists, else the only `.m3u8` file in the folder.
    public init(folder: String, entry: String? = nil) throws(PlaybackError) {
        self.folder = folder
        self.token = SessionToken.random()
        self.files = StaticFileHandler(root: folder)
        guard let names = FileSystem.entries(in: folder) else {
            throw PlaybackError(.cannotOpen, path: folder, detail: "not a readable folder")
        }
        if let entry {
            guard names.contains(entry) else {
                throw PlaybackError(.cannotOpen, path: folder, detail: "no playlist named \(entry)")
            }
            entryPlaylist = entry
        } else if let known = ["master.m3u8", "index.m3u8", "playlist.m3u8"].first(where: names.contains) {
            entryPlaylist = known
        } else {
            let playlists = names.filter { $0.hasSuffix(".m3u8") }
            guard playlists.count == 1, let only = playlists.first else {
                throw PlaybackError(
                    .emptySegments, path: folder,
                    detail: playlists.isEmpty ? "no .m3u8 playlist" : "several playlists; name the entry")
            }
            entryPlaylist = only
        }
    }

    public func prepare() {}

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        files.respond(to: request)
    }
}
