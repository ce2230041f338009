import Dispatch

extension FileStreamer {
    /// Reads the file in order from `offset`, `length` bytes or to its end (a short read ends it), and calls `body`
    /// with each chunk of at most `chunkSize` bytes, in order, while a reader job on ``BlockingPool/shared`` reads the
    /// chunks ahead. Whenever the next chunk is not ready, the calling thread reads one ahead itself instead of
    /// waiting, so on a file in the page cache the two threads share the copying and the scan costs about half of
    /// copying plus `body`'s work, rather than the sum (two cores: less than `cat` takes to copy the file once).
    /// `body` returns false to stop; the chunk it is given is valid only during the call. Returns the number of bytes
    /// given to `body`.
    ///
    /// The reader job holds one pool thread for as long as this call runs (a whole file's index, a long scan): it
    /// ends when this returns, whether the data ended, `body` stopped or a read failed. When the pool is busy and the
    /// job has not started, the calling thread reads every chunk alone and does not wait for the job; the job then
    /// starts later, finds the read over and ends at once. A read of at most one chunk reads on the calling thread
    /// only. A read error is thrown after the chunks before it were given to `body`. The reader has stopped and left
    /// the buffers when this returns.
    @discardableResult
    public func readAhead(
        from offset: UInt64 = 0, length: UInt64? = nil, chunkSize: Int = 2 << 20,
        _ body: (UnsafeRawBufferPointer) -> Bool
    ) throws(FileStreamerError) -> UInt64 {
        try readAhead(from: offset, length: length, chunkSize: chunkSize, on: .shared, body)
    }

    /// ``readAhead(from:length:chunkSize:_:)`` with its reader job on `pool` (tests give a busy one).
    @discardableResult
    package func readAhead(
        from offset: UInt64 = 0, length: UInt64? = nil, chunkSize: Int = 2 << 20, on pool: BlockingPool,
        _ body: (UnsafeRawBufferPointer) -> Bool
    ) throws(FileStreamerError) -> UInt64 {
        let chunkSize = max(chunkSize, 4096)
        let ring = ReadAheadRing(file: self, from: offset, length: length ?? UInt64.max, chunkSize: chunkSize)
        if ring.chunkCount < 2 {
            ring.readerStopped()
        } else {
            // The job keeps the ring (and its buffers) alive until it has run, however late the pool starts it.
            pool.submit { [ring] in ring.readerJob() }
        }
        return try ring.drain(body)
    }
}

/// The chunks a ``FileStreamer/readAhead(from:length:chunkSize:_:)`` shares between its reader job (on a pool thread)
/// and its caller. Chunk `i` covers `chunkSize` bytes from `start + i * chunkSize` and lives in slot `i % slotCount`;
/// it may be claimed (by either thread) once chunk `i - slotCount` was consumed, so each slot belongs to one chunk and
/// one thread at a time. The state is under one lock; a thread that must wait says so under the lock and sleeps on its
/// semaphore, and whoever changes what it waits for wakes it.
private final class ReadAheadRing: @unchecked Sendable {
    enum SlotState {
        case empty
        case reading
        case filled(count: Int, error: FileStreamerError?)
    }

    /// The caller's next move: give its chunk to the body, read a chunk (its own, or one ahead while its own is being
    /// read), or sleep until a read finishes.
    enum Step {
        case give(count: Int, error: FileStreamerError?)
        case read(Int)
        case wait
    }

    struct State {
        /// The first chunk nobody has claimed.
        var nextClaim = 0
        /// The chunks the caller is done with.
        var consumed = 0
        /// Chunks from here on are not read: the file ended (a short read) or a read failed.
        var endChunk: Int
        var stopped = false
        var reader = Reader.pending
        var readerWaits = false
        var callerWaits = false
    }

    /// The reader job: submitted and not started, reading, or gone (ended, or never to read: the caller stopped
    /// first, or the read has one chunk).
    enum Reader {
        case pending
        case running
        case gone
    }

    static let maximumSlots = 6

    let file: FileStreamer
    let start: UInt64
    let length: UInt64
    let chunkSize: Int
    /// The number of chunks `length` makes (`Int.max` for "to the end of the file").
    let chunkCount: Int
    /// Slots in the ring: six, or fewer when the read has fewer chunks.
    let slotCount: Int
    let buffers: UnsafeMutableRawBufferPointer
    let slots: UnsafeMutablePointer<SlotState>
    let state: LockedValue<State>
    /// The thread that calls ``drain(_:)``: a pool that cannot start a thread runs a job on the submitting thread
    /// at once, and the reader job must not run there (it would fill the ring and wait for a caller that has not
    /// begun to drain).
    let caller = ThreadIdentity.current
    let readerWake = DispatchSemaphore(value: 0)
    let callerWake = DispatchSemaphore(value: 0)

    init(file: FileStreamer, from start: UInt64, length: UInt64, chunkSize: Int) {
        self.file = file
        self.start = start
        self.length = length
        self.chunkSize = chunkSize
        let chunks = length / UInt64(chunkSize) + (length % UInt64(chunkSize) == 0 ? 0 : 1)
        chunkCount = Int(clamping: chunks)
        slotCount = min(Self.maximumSlots, max(chunkCount, 1))
        buffers = .allocate(byteCount: chunkSize * slotCount, alignment: 4096)
        slots = .allocate(capacity: slotCount)
        slots.initialize(repeating: .empty, count: slotCount)
        state = LockedValue(State(endChunk: chunkCount))
    }

    deinit {
        buffers.deallocate()
        slots.deinitialize(count: slotCount)
        slots.deallocate()
    }

    /// Claims the next chunk if its slot is free and the data goes on; nil otherwise.
    private func claim(_ state: inout State) -> Int? {
        let chunk = state.nextClaim
        guard !state.stopped, chunk < state.endChunk, chunk < state.consumed + slotCount else { return nil }
        state.nextClaim += 1
        slots[chunk % slotCount] = .reading
        return chunk
    }

    /// Reads `chunk` into its slot (no lock held: the slot is this thread's) and records the result.
    private func read(_ chunk: Int) {
        let offset = UInt64(chunk) * UInt64(chunkSize)
        let want = Int(min(UInt64(chunkSize), length - offset))
        let slot = chunk % slotCount
        let buffer = UnsafeMutableRawBufferPointer(rebasing: buffers[slot * chunkSize..<slot * chunkSize + want])
        var result = SlotState.filled(count: 0, error: nil)
        do throws(FileStreamerError) {
            let (position, overflow) = start.addingReportingOverflow(offset)
            if overflow { throw FileStreamerError(.offsetOutOfRange, path: file.path, offset: start) }
            result = .filled(count: try file.read(into: buffer, at: position), error: nil)
        } catch {
            result = .filled(count: 0, error: error)
        }
        let wakeCaller = state.withLock { state -> Bool in
            slots[slot] = result
            if case .filled(let count, let error) = result, error != nil || count < want {
                state.endChunk = min(state.endChunk, chunk + 1)
            }
            defer { state.callerWaits = false }
            return state.callerWaits
        }
        if wakeCaller { callerWake.signal() }
    }

    /// The reader job: claims and reads chunks until the data ends or the caller stops, sleeping while every slot
    /// is taken. A job the pool starts after the caller stopped, or runs on the caller's own thread (a pool that could
    /// not start a thread), ends at once, touching no buffer; the caller then reads every chunk alone.
    func readerJob() {
        let start = state.withLock { state -> Bool in
            guard !state.stopped, state.reader == .pending, !caller.isCurrent else { return false }
            state.reader = .running
            return true
        }
        guard start else { return }
        while true {
            let next = state.withLock { state -> (chunk: Int?, done: Bool) in
                if let chunk = claim(&state) { return (chunk, false) }
                if state.stopped || state.nextClaim >= state.endChunk { return (nil, true) }
                state.readerWaits = true
                return (nil, false)
            }
            if let chunk = next.chunk {
                read(chunk)
            } else if next.done {
                break
            } else {
                readerWake.wait()
            }
        }
        readerStopped()
    }

    /// Marks the reader as gone (it ended, or is not to start), waking a caller that waits for it.
    func readerStopped() {
        let wakeCaller = state.withLock { state -> Bool in
            state.reader = .gone
            defer { state.callerWaits = false }
            return state.callerWaits
        }
        if wakeCaller { callerWake.signal() }
    }

    /// The caller's side: gives each chunk to `body` in order, reading ahead itself while the next one is being
    /// read, then stops the reader and waits until it has left the buffers (a job not started yet is not waited for:
    /// it will find the read stopped).
    func drain(_ body: (UnsafeRawBufferPointer) -> Bool) throws(FileStreamerError) -> UInt64 {
        var given: UInt64 = 0
        var failure: FileStreamerError?
        var chunk = 0
        consuming: while chunk < chunkCount {
            let slot = chunk % slotCount
            let step = state.withLock { state -> Step in
                switch slots[slot] {
                case .filled(let count, let error): return .give(count: count, error: error)
                case .empty, .reading:
                    if let claimed = claim(&state) { return .read(claimed) }
                    state.callerWaits = true
                    return .wait
                }
            }
            switch step {
            case .read(let claimed):
                read(claimed)
            case .wait:
                callerWake.wait()
            case .give(let count, let error):
                if let error {
                    failure = error
                    break consuming
                }
                let want = Int(min(UInt64(chunkSize), length - UInt64(chunk) * UInt64(chunkSize)))
                if count > 0 {
                    given += UInt64(count)
                    let base = buffers.baseAddress! + slot * chunkSize
                    guard body(UnsafeRawBufferPointer(start: base, count: count)) else { break consuming }
                }
                if count < want { break consuming }
                let wakeReader = state.withLock { state -> Bool in
                    slots[slot] = .empty
                    state.consumed = chunk + 1
                    defer { state.readerWaits = false }
                    return state.readerWaits
                }
                if wakeReader { readerWake.signal() }
                chunk += 1
            }
        }
        while true {
            let running = state.withLock { state -> Bool in
                state.stopped = true
                guard state.reader == .running else { return false }
                state.callerWaits = true
                return true
            }
            guard running else { break }
            // The reader finishes the read it is in (if any), sees the stop and leaves; wake it if it sleeps.
            readerWake.signal()
            callerWake.wait()
        }
        if let failure { throw failure }
        return given
    }
}
