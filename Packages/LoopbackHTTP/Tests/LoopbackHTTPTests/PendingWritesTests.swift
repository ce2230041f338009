import FileRange
import Testing

@testable import LoopbackHTTP

/// The pending-writes queue driven by scripted calls, with no socket: files are names, relays are strings.
@Suite("Pending writes")
struct PendingWritesTests {
    typealias Queue = PendingWrites<String, String>

    /// Scripted socket and file calls; records what was asked.
    final class Script {
        var sends: [IOResult<Int>]
        var sendFiles: [Result<IOResult<Int>, Errno>]
        var files: [String: [UInt8]]
        var sent: [([UInt8], Bool)] = []
        var fileCalls: [(String, UInt64, Int)] = []
        var reads: [(String, UInt64, Int)] = []
        var written: [Int] = []
        var sendError: Errno?

        init(
            sends: [IOResult<Int>] = [], sendFiles: [Result<IOResult<Int>, Errno>] = [], files: [String: [UInt8]] = [:]
        ) {
            self.sends = sends
            self.sendFiles = sendFiles
            self.files = files
        }

        /// Runs one `write`; a send with no scripted answer takes everything.
        func write(_ queue: inout Queue) -> Queue.Stop {
            queue.write(
                send: { (bytes, more) throws(Errno) in
                    if let error = self.sendError { throw error }
                    self.sent.append((Array(bytes), more))
                    return self.sends.isEmpty ? .done(bytes.count) : self.sends.removeFirst()
                },
                sendFile: { file, offset, count in
                    self.fileCalls.append((file, offset, count))
                    return try (self.sendFiles.isEmpty ? .success(.done(count)) : self.sendFiles.removeFirst()).get()
                },
                read: { file, offset, count in
                    self.reads.append((file, offset, count))
                    let data = self.files[file] ?? []
                    let start = Int(offset)
                    return Array(data[min(start, data.count)..<min(start + count, data.count)])
                },
                wrote: { self.written.append($0) })
        }
    }

    @Test func bytesAreWrittenInOrderWithMoreWhileOthersFollow() {
        var queue = Queue()
        queue.append(.bytes([1, 2, 3], sent: 0))
        queue.append(.bytes([4, 5], sent: 0))
        let script = Script()
        guard case .drained = script.write(&queue) else {
            Issue.record("not drained")
            return
        }
        #expect(script.sent.map(\.0) == [[1, 2, 3], [4, 5]])
        #expect(script.sent.map(\.1) == [true, false])
        #expect(script.written == [3, 2])
        #expect(queue.isEmpty)
    }

    @Test func aPartialWriteResumesWhereItStoppedAndWouldBlockKeepsTheRest() {
        var queue = Queue()
        queue.append(.bytes([1, 2, 3, 4, 5], sent: 0))
        let script = Script(sends: [.done(2), .wouldBlock])
        guard case .wouldBlock = script.write(&queue) else {
            Issue.record("expected wouldBlock")
            return
        }
        #expect(script.sent.map(\.0) == [[1, 2, 3, 4, 5], [3, 4, 5]])
        #expect(script.written == [2])
        #expect(queue.waitingBytes == 3)
        guard case .drained = script.write(&queue) else {
            Issue.record("not drained")
            return
        }
        #expect(script.sent.last?.0 == [3, 4, 5])
        #expect(script.written == [2, 3])
    }

    @Test func aSocketFailureStopsAndKeepsTheItem() {
        var queue = Queue()
        queue.append(.bytes([1], sent: 0))
        let script = Script()
        script.sendError = .brokenPipe
        guard case .socketFailed(let error) = script.write(&queue) else {
            Issue.record("expected socketFailed")
            return
        }
        #expect(error == .brokenPipe)
        #expect(queue.count == 1)
        #expect(script.written.isEmpty)
    }

    @Test func fileRegionsAdvanceBySentBytesAndFailWhenTheFileShrank() {
        var queue = Queue()
        queue.append(.file("a", offset: 100, remaining: 1000))
        let script = Script(sendFiles: [.success(.done(400)), .success(.wouldBlock)])
        guard case .wouldBlock = script.write(&queue) else {
            Issue.record("expected wouldBlock")
            return
        }
        #expect(script.fileCalls.map(\.1) == [100, 500])
        #expect(script.fileCalls.map(\.2) == [1000, 600])
        #expect(script.written == [400])

        script.sendFiles = [.success(.done(0))]
        guard case .fileFailed = script.write(&queue) else {
            Issue.record("a file that ended early must fail the response")
            return
        }
    }

    @Test func aRefusedSendfileCopiesThroughMemoryFromThenOn() {
        let data = (0..<(300 * 1024)).map { UInt8(truncatingIfNeeded: $0) }
        var queue = Queue()
        queue.append(.file("a", offset: 0, remaining: UInt64(data.count)))
        queue.append(.bytes([9], sent: 0))
        let script = Script(sendFiles: [.failure(.invalidArgument)], files: ["a": data])
        guard case .drained = script.write(&queue) else {
            Issue.record("not drained")
            return
        }
        #expect(queue.copiesFiles)
        #expect(script.fileCalls.count == 1)
        #expect(script.reads.map(\.1) == [0, UInt64(Queue.copyChunk)])
        #expect(script.reads.map(\.2) == [Queue.copyChunk, data.count - Queue.copyChunk])
        #expect(script.sent.map(\.0) == [Array(data[..<Queue.copyChunk]), Array(data[Queue.copyChunk...]), [9]])
        #expect(script.sent.map(\.1) == [true, true, false])
        #expect(script.written == [Queue.copyChunk, data.count - Queue.copyChunk, 1])
    }

    @Test func otherSendfileFailuresAndShortReadsFailTheResponse() {
        var queue = Queue()
        queue.append(.file("a", offset: 0, remaining: 10))
        let broken = Script(sendFiles: [.failure(.brokenPipe)])
        guard case .fileFailed = broken.write(&queue) else {
            Issue.record("expected fileFailed for EPIPE from sendfile")
            return
        }

        var copying = Queue()
        copying.append(.file("a", offset: 0, remaining: 10))
        let short = Script(sendFiles: [.failure(.notSupported)], files: ["a": [1, 2, 3]])
        guard case .fileFailed = short.write(&copying) else {
            Issue.record("expected fileFailed for a short read")
            return
        }
        #expect(copying.copiesFiles)
    }

    @Test func aRelayStopsTheWriterUntilItIsRemoved() {
        var queue = Queue()
        queue.append(.bytes([1], sent: 0))
        queue.append(.relay("upstream"))
        queue.append(.bytes([2], sent: 0))
        #expect(queue.waitingBytes == 2)
        let script = Script()
        guard case .relay(let relay) = script.write(&queue) else {
            Issue.record("expected the relay")
            return
        }
        #expect(relay == "upstream")
        #expect(script.sent.map(\.1) == [true])
        queue.removeFirst()
        guard case .drained = script.write(&queue) else {
            Issue.record("not drained")
            return
        }
        #expect(script.sent.map(\.0) == [[1], [2]])
    }
}
