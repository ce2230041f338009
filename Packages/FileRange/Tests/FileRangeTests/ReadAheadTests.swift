import Dispatch
import FileRange
import Foundation
import Testing

/// `FileStreamer.readAhead`: two threads read (the caller's and a job on the blocking pool), the body gets every byte
/// once, in order, whatever the timing. Each read runs on a thread of its own with a deadline, so that a deadlock
/// between the two fails the test instead of hanging the run.
@Suite(.temporaryFolders) final class ReadAheadTests {
    let folder = URL(fileURLWithPath: TemporaryFolders.make(prefix: "ReadAheadTests-"))
    let chunk = 4096

    func makeFile(_ count: Int, name: String = "file.bin") throws -> (path: String, bytes: [UInt8]) {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }
        let path = folder.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, bytes)
    }

    /// Reads with `readAhead` on another thread and returns the chunks given to the body; fails when the read has
    /// not returned within 30 seconds. (Bytes are compared as `Data`, which a failure prints as a count, not every
    /// byte.)
    func chunks(
        _ file: FileStreamer, from offset: UInt64 = 0, length: UInt64? = nil, chunkSize: Int? = nil,
        stopAfter: Int = .max, pause: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> (chunks: [[UInt8]], returned: UInt64) {
        final class Outcome: @unchecked Sendable {
            var chunks: [[UInt8]] = []
            var result: Result<UInt64, FileStreamerError>?
        }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let chunkSize = chunkSize ?? chunk
        Thread.detachNewThread {
            outcome.result = Result { () throws(FileStreamerError) -> UInt64 in
                try file.readAhead(from: offset, length: length, chunkSize: chunkSize) { bytes in
                    outcome.chunks.append(Array(bytes))
                    pause(outcome.chunks.count - 1)
                    return outcome.chunks.count < stopAfter
                }
            }
            done.signal()
        }
        guard await blocking({ done.wait(timeout: .now() + 30) }) == .success, let result = outcome.result else {
            Issue.record("readAhead did not return within 30 s (a deadlock)")
            return ([], 0)
        }
        return (outcome.chunks, try result.get())
    }

    /// Empty, single-chunk (read on the calling thread alone), chunk edges and many chunks: every byte once, in
    /// order, in full chunks but the last, with or without a length.
    @Test(arguments: [0, 1, 4095, 4096, 4097, 4096 * 6, 4096 * 6 + 1, 4096 * 7, 4096 * 40 + 123])
    func givesEveryByteInOrder(size: Int) async throws {
        let (path, bytes) = try makeFile(size)
        let file = try FileStreamer(path: path)
        for length in [nil, UInt64(size)] {
            let (chunks, returned) = try await chunks(file, length: length)
            #expect(Data(chunks.joined()) == Data(bytes))
            #expect(returned == UInt64(size))
            #expect(chunks.dropLast().allSatisfy { $0.count == chunk })
            #expect(chunks.allSatisfy { !$0.isEmpty })
        }
    }

    @Test func readsARangeAndStopsAtTheEnd() async throws {
        let (path, bytes) = try makeFile(4096 * 30)
        let file = try FileStreamer(path: path)
        let inside = try await chunks(file, from: 1000, length: 50_000)
        #expect(Data(inside.chunks.joined()) == Data(Array(bytes[1000..<51_000])))
        #expect(inside.returned == 50_000)
        let pastTheEnd = try await chunks(file, from: 100_000, length: 1 << 30)
        #expect(Data(pastTheEnd.chunks.joined()) == Data(Array(bytes[100_000...])))
    }

    /// The body stops the read; repeated many times, at the first chunk and later, with the reader running ahead:
    /// no more chunks, the right count, no hang.
    @Test func stopsWhenTheBodySaysSo() async throws {
        let (path, bytes) = try makeFile(4096 * 40)
        let file = try FileStreamer(path: path)
        for round in 0..<300 {
            let stopAfter = round % 5 + 1
            let (chunks, returned) = try await chunks(file, stopAfter: stopAfter)
            #expect(chunks.count == stopAfter)
            #expect(returned == UInt64(stopAfter * chunk))
            #expect(Data(chunks.joined()) == Data(Array(bytes[..<(stopAfter * chunk)])))
        }
    }

    /// A slow body: the reader fills every slot and waits for one to be given back; a fast one: the caller reads
    /// ahead itself. Random pauses mix the two.
    @Test func keepsOrderWhateverTheTiming() async throws {
        let (path, bytes) = try makeFile(4096 * 64 + 77)
        let file = try FileStreamer(path: path)
        // blocks: readAhead's thread (started by chunks), not the test's
        let slow = try await chunks(file) { _ in usleep(1000) }
        #expect(Data(slow.chunks.joined()) == Data(bytes))
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<40 {
            let size = [4096, 8192, 12_288].randomElement(using: &generator)!
            let pauses = (0..<80).map { _ in UInt32.random(in: 0..<300, using: &generator) }
            // blocks: readAhead's thread (started by chunks), not the test's
            let mixed = try await chunks(file, chunkSize: size) { usleep(pauses[$0 % pauses.count]) }
            #expect(Data(mixed.chunks.joined()) == Data(bytes))
            #expect(mixed.returned == UInt64(bytes.count))
        }
    }

    /// A read that fails is thrown, with what the streamer says about it; the body never sees its chunk.
    @Test func throwsAFailedRead() async throws {
        let (path, _) = try makeFile(10_000)
        let file = try FileStreamer(path: path)
        let error = await #expect(throws: FileStreamerError.self) {
            _ = try await chunks(file, from: 20_000, length: 100_000) { _ in Issue.record("a chunk was given") }
        }
        #expect(error?.code == .offsetOutOfRange)
        #expect(error?.offset == 20_000 && error?.path == path)
        // Near the largest offset, where the chunks after the first would overflow it: an error, not a trap.
        let far = await #expect(throws: FileStreamerError.self) {
            _ = try await chunks(file, from: UInt64.max - 10) { _ in Issue.record("a chunk was given") }
        }
        #expect(far?.code == .offsetOutOfRange)
    }

    /// The file shrinks during the read (another process truncates it): the read ends where the file now ends,
    /// without an error. The chunks in the ring when it shrank (at most the slots after the first) were read before.
    @Test func endsWhereAShrunkenFileEnds() async throws {
        let (path, bytes) = try makeFile(4096 * 40)
        let file = try FileStreamer(path: path)
        let newSize = 4096 * 10 + 2048
        let (chunks, returned) = try await chunks(file) { index in
            if index == 0 { truncate(path, off_t(newSize)) }
        }
        #expect(returned == UInt64(newSize))
        #expect(Data(chunks.joined()) == Data(Array(bytes[..<newSize])))
    }

    /// The pool is busy (its one thread blocked): the reader job does not start, and the caller reads every chunk
    /// alone and returns without waiting for it; freed later, the job starts, finds the read over and ends.
    @Test func readsAloneWhenThePoolIsBusy() async throws {
        let (path, bytes) = try makeFile(4096 * 20 + 5)
        let file = try FileStreamer(path: path)
        let pool = BlockingPool(maximumThreads: 1)
        let release = DispatchSemaphore(value: 0)
        let blocked = DispatchSemaphore(value: 0)
        pool.submit {
            blocked.signal()
            release.wait()
        }
        // blocks: a pool thread until the pool's own thread is taken
        await blocking { blocked.wait() }
        let outcome = await blocking { () -> Result<(chunks: [[UInt8]], returned: UInt64), FileStreamerError> in
            var chunks: [[UInt8]] = []
            return Result { () throws(FileStreamerError) in
                let returned = try file.readAhead(chunkSize: 4096, on: pool) { bytes in
                    chunks.append(Array(bytes))
                    return true
                }
                return (chunks, returned)
            }
        }
        let (chunks, returned) = try outcome.get()
        #expect(Data(chunks.joined()) == Data(bytes))
        #expect(returned == UInt64(bytes.count))
        release.signal()
        // The late job runs and ends; the pool takes more work afterwards.
        let after = await withCheckedContinuation { continuation in pool.submit { continuation.resume(returning: 1) } }
        #expect(after == 1)
    }
}
