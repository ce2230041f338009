import FileRange
public import HLSDownload
public import LoopbackHTTP
import TSPlayback

/// The playback sessions of downloaded tasks, one per store, task and server, so that asking again for the same
/// task reuses the session (and its URL) while it is served.
private let downloadSessions = LockedValue<[String: HLSFolderSession]>([:])

extension DownloadManager {
    /// The local URL of a completed task's playlist, served offline through `server`: the first call starts a
    /// session over the task's folder (and the server, when it is not running); later calls reuse that session as
    /// long as it is served. Throws `LoopbackHTTP.PlaybackError.Code.cannotOpen` when the task is not completed.
    public func playURL(forTask id: String, server: PlaybackServer = .shared) async throws(PlaybackError) -> String {
        guard let playlist = playlistPath(forTask: id) else {
            throw PlaybackError(.cannotOpen, path: folder(forTask: id), detail: "task '\(id)' is not a completed task")
        }
        let slash = playlist.lastIndex(of: "/") ?? playlist.startIndex
        let folder = String(playlist[..<slash])
        let entry = String(playlist[playlist.index(after: slash)...])
        let key = Self.sessionKey(store: storeRoot, task: id, server: server)
        if let session = downloadSessions.withLock({ $0[key] }), session.entryPlaylist == entry,
            let base = server.baseURL(for: session)
        {
            return base + session.entryPlaylist
        }
        // Opening the session lists and reads the task's folder: a blocking call, made on the manager's own thread
        // (its `BlockingSerialExecutor`, since this method is the actor's), never on a cooperative thread.
        let session = try HLSFolderSession(folder: folder, entry: entry)
        let base = try await server.add(session)
        // Another call may have started a session for the same task meanwhile: keep one.
        let winner = downloadSessions.withLock { table -> HLSFolderSession in
            if let other = table[key], other !== session { return other }
            table[key] = session
            return session
        }
        if winner !== session, let otherBase = server.baseURL(for: winner) {
            await server.remove(session)
            return otherBase + winner.entryPlaylist
        }
        downloadSessions.withLock { $0[key] = session }
        return base + session.entryPlaylist
    }

    /// Stops serving a task started with ``playURL(forTask:server:)``; the server stops when it serves nothing else.
    public func stopPlayback(forTask id: String, server: PlaybackServer = .shared) async {
        let key = Self.sessionKey(store: storeRoot, task: id, server: server)
        guard let session = downloadSessions.withLock({ $0.removeValue(forKey: key) }) else { return }
        await server.remove(session)
    }

    private static func sessionKey(store: String, task: String, server: PlaybackServer) -> String {
        store + "\n" + task + "\n" + String(describing: ObjectIdentifier(server))
    }
}
