import Dispatch
import FileRange

/// Reads a file from start to end on a second thread, one buffer ahead of the scan: the kernel's copy of the next
/// chunk into memory overlaps the scan of this one. On a file in the page cache the copy costs about as much as the
/// scan itself, so the two together take about the time of the longer one instead of their sum.
enum PrefetchReader {
    /// Calls `body` with consecutive chunks of `file` until its end (a short read), or until `body` returns false.
    /// Returns the number of bytes handed to `body`.
    @discardableResult
    static func read(_ file: FileStreamer, bufferSize: Int, _ body: (UnsafeRawBufferPointer) -> Bool)
        throws(FileStreamerError) -> UInt64
    {
        let shared = Shared(bufferSize: max(bufferSize, 4096))
        defer { shared.deallocate() }
        DispatchQueue.global(qos: .userInitiated).async { shared.produce(file) }
        var slot = 0
        var total: UInt64 = 0
        while true {
            shared.filled[slot].wait()
            let count = shared.counts[slot]
            if count > 0 {
                total += UInt64(count)
                if !body(UnsafeRawBufferPointer(rebasing: shared.buffers[slot][..<count])) { break }
            }
            if count < shared.bufferSize { break }
            shared.free[slot].signal()
            slot ^= 1
        }
        shared.finish()
        if let error = shared.error { throw error }
        return total
    }

    /// The two buffers and the hand-over between the reading thread and the scan. Each buffer is owned by one side
    /// at a time (the semaphores hand it over), so the unchecked sendability is safe.
    private final class Shared: @unchecked Sendable {
        let bufferSize: Int
        let buffers: [UnsafeMutableRawBufferPointer]
        var counts = [0, 0]
        let filled = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
        let free = [DispatchSemaphore(value: 1), DispatchSemaphore(value: 1)]
        let done = DispatchSemaphore(value: 0)
        /// Set by the scan (then both buffers are released to the reader) to make the reader stop.
        var stopped = false
        var error: FileStreamerError?

        init(bufferSize: Int) {
            self.bufferSize = bufferSize
            buffers = (0..<2).map { _ in .allocate(byteCount: bufferSize, alignment: 64) }
        }

        /// The reading thread: fills the buffers in turn until a short read, an error, or a stop.
        func produce(_ file: FileStreamer) {
            var slot = 0
            var position: UInt64 = 0
            while true {
                free[slot].wait()
                if stopped { break }
                var count = 0
                do {
                    count = try file.read(into: buffers[slot], at: position)
                } catch {
                    self.error = error
                }
                counts[slot] = count
                position += UInt64(count)
                filled[slot].signal()
                if count < bufferSize { break }
                slot ^= 1
            }
            done.signal()
        }

        /// Stops the reader (if it is still going) and waits for it to leave the buffers.
        func finish() {
            stopped = true
            free[0].signal()
            free[1].signal()
            done.wait()
        }

        func deallocate() {
            for buffer in buffers { buffer.deallocate() }
        }
    }
}
