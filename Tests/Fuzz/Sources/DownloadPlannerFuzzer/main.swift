import FuzzSupport
// Fuzzes HLSDownload's planner, which turns fetched playlists into the files a task writes: the input up to its
// first NUL byte is the playlist at the task's URL (a media or multivariant playlist, an IPTV list, anything), the
// rest is the answer for every playlist it names (variant and renditions). Nothing may trap or hang: planning
// either fails with a typed DownloadError or gives paths that stay inside the task folder (relative, no `..` step,
// no empty step), one file per job.
@_spi(Fuzzing) import HLSDownload

func checkInside(_ path: String, _ what: String) {
    if path.isEmpty || path.hasPrefix("/") { fail("\(what) path '\(path)' is not relative") }
    for step in path.split(separator: "/", omittingEmptySubsequences: false) {
        if step.isEmpty || step == ".." || step == "." { fail("\(what) path '\(path)' leaves the task folder") }
    }
}

func fuzzOne(_ raw: UnsafeRawBufferPointer) {
    let bytes = [UInt8](raw)
    let cut = bytes.firstIndex(of: 0) ?? bytes.endIndex
    let top = String(decoding: bytes[..<cut], as: UTF8.self)
    let media = cut < bytes.endIndex ? String(decoding: bytes[(cut + 1)...], as: UTF8.self) : top
    var options = DownloadOptions()
    if bytes.first.map({ $0 & 1 == 1 }) == true {
        options.audio = .all
        options.subtitles = .all
    }
    let planned: (jobPaths: [String], playlistPaths: [String])
    do {
        planned = try PlannerProbe.plan(
            top: top, media: media, url: "http://origin.test/a/b/index.m3u8", options: options)
    } catch {
        if error.message.isEmpty { fail("an error without a message") }
        return
    }
    for path in planned.jobPaths { checkInside(path, "job") }
    for path in planned.playlistPaths { checkInside(path, "playlist") }
}

runFuzzer(fuzzOne)
