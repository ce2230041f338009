// Fuzzes HLSDownload's task store: the input is written as a store's tasks.json (as a crash, a full disk or a hand
// edit may leave it), and a manager opens the store. Nothing may trap or hang: opening either fails with a typed
// DownloadError or loads tasks whose folders stay inside the store.
import FileRange
import FuzzSupport
import HLSDownload

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let root: String = {
    var template = Array("/tmp/task-store-fuzz-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { fail("mkdtemp failed") }
    return String(cString: made)
}()

func fuzzOne(_ raw: UnsafeRawBufferPointer) {
    guard (try? writeFileAtomically([UInt8](raw), to: root + "/tasks.json", durable: false)) != nil else {
        fail("cannot write the store")
    }
    var configuration = DownloadManagerConfiguration()
    configuration.resumeInterruptedTasks = false
    guard let manager = try? DownloadManager(storeRoot: root, configuration: configuration) else { return }
    let done = LockedValue(false)
    Task {
        for task in await manager.allTasks() where !task.folder.hasPrefix(root + "/") || task.folder.contains("/../") {
            fail("task \(task.id) has a folder outside the store: \(task.folder)")
        }
        done.withLock { $0 = true }
    }
    var waited = 0
    while !done.withLock({ $0 }) {
        usleep(1000)
        waited += 1
        if waited > 5000 { fail("listing the tasks took more than 5 s") }
    }
}

runFuzzer(fuzzOne)
