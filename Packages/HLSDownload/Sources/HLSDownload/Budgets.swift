import FileRange

/// Counters a running task shares between its requests (bytes on disk, which the task's budget is checked against).
final class TaskCounters: Sendable {
    struct Values: Sendable {
        var bytesDone: UInt64 = 0
        /// Known sizes of jobs (from ranges, finished files, or Content-Length).
        var knownSizes: [Int: UInt64] = [:]
        var jobsDone = 0
        var jobsTotal = 0
        var lastReport: Double = -1_000_000
    }
    let values = LockedValue(Values())

    /// Counts `count` more bytes unless that passes `limit`; whether it did.
    func reserve(_ count: UInt64, within limit: UInt64) -> Bool {
        values.withLock { v in
            guard v.bytesDone + count <= limit else { return false }
            v.bytesDone += count
            return true
        }
    }

    func add(_ delta: Int64) {
        values.withLock { v in
            if delta >= 0 {
                v.bytesDone += UInt64(delta)
            } else {
                v.bytesDone -= min(v.bytesDone, UInt64(-delta))
            }
        }
    }

    /// The estimated total: known sizes plus the average known size for each job of unknown size.
    var estimate: (total: UInt64?, exact: Bool) {
        values.withLock { v in
            guard v.jobsTotal > 0 else { return (nil, false) }
            let known = v.knownSizes.values.reduce(0, +)
            let unknown = v.jobsTotal - v.knownSizes.count
            if unknown <= 0 { return (known, true) }
            guard !v.knownSizes.isEmpty else { return (nil, false) }
            let average = known / UInt64(v.knownSizes.count)
            return (known + average * UInt64(unknown), false)
        }
    }
}

/// The budgets on disk of a task's fetches (issue 31): one resource's limit, and the task's byte budget.
extension Fetcher {
    /// The fetcher with a byte budget for the task's writes.
    func budgeted(_ budget: UInt64?) -> Fetcher {
        var copy = self
        copy.budget = budget
        return copy
    }

    /// The error for a resource past ``maxResourceBytes``.
    func tooLarge(_ job: Job, _ what: String) -> DownloadError {
        DownloadError(
            .tooLarge, "the resource \(what) (the limit is \(maxResourceBytes) bytes per resource)",
            url: job.url)
    }
}
