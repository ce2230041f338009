#if canImport(Darwin)
    import Foundation
#endif

/// Apple platforms: task folders are excluded from iCloud and iTunes backups, since the media can be downloaded
/// again. Downloads run in the foreground process (URLSession's background sessions are not used): an app that
/// is suspended pauses its tasks by calling ``DownloadManager/pauseAll()``, and they resume where they stopped.
enum BackupExclusion {
    static func exclude(_ path: String) {
        #if canImport(Darwin)
            var url = URL(fileURLWithPath: path, isDirectory: true)
            var values = URLResourceValues()
            values.isExcludedFromBackup = true
            try? url.setResourceValues(values)
        #endif
    }
}
