import FileRange
import Sockets

/// A connection's pending writes: the pieces of the responses not yet handed to the socket, in order (bytes, file
/// regions sent with `sendfile` or copied through memory, relays), and the rules for writing them: partial writes
/// resume where they stopped, "would block" keeps everything for the next writable event, a file region that
/// `sendfile` refuses is copied in blocks from then on, a file that shrank fails the response.
///
/// A value type whose ``write(send:sendFile:read:wrote:)`` takes the actual calls as closures, so that partial
/// writes, `EAGAIN` and failures are tested with no socket (STYLE.md item 27), as the HTTPWire state machines are.
/// `File` is the event loop's `FileStreamer`, `Relay` its relay; tests use plain values.
struct PendingWrites<File, Relay> {
    /// One outgoing piece of a response.
    enum Item {
        /// Bytes, of which the first `sent` are already written.
        case bytes([UInt8], sent: Int)
        /// `remaining` bytes of a file from `offset`.
        case file(File, offset: UInt64, remaining: UInt64)
        /// A body the event loop moves itself (splice): ``write(send:sendFile:read:wrote:)`` stops in front of it.
        case relay(Relay)
    }

    /// Why ``write(send:sendFile:read:wrote:)`` stopped.
    enum Stop {
        /// Everything was written.
        case drained
        /// The socket takes no more now: write again on the next writable event.
        case wouldBlock
        /// A relay is first: the caller moves it, then calls ``removeFirst()`` once it finished.
        case relay(Relay)
        /// The socket failed (the peer left): the connection is over.
        case socketFailed(Errno)
        /// A file region could not be read or sent, or the file shrank: the response cannot be completed.
        case fileFailed
    }

    /// The largest block a file region is sent in with `sendfile`, and copied in through memory.
    static var sendFileChunk: Int { 1 << 30 }
    static var copyChunk: Int { 256 * 1024 }

    private(set) var items: [Item] = []
    /// Whether file regions are copied through memory (pread, then send), because `sendfile` refused this file or
    /// socket once (``SendFile/isUnsupported(_:)``).
    private(set) var copiesFiles = false

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    var first: Item? { items.first }

    /// Bytes queued and not yet written, not counting files and relays.
    var waitingBytes: Int {
        var waiting = 0
        for case .bytes(let bytes, let sent) in items { waiting += bytes.count - sent }
        return waiting
    }

    mutating func append(_ item: Item) { items.append(item) }
    mutating func removeFirst() { items.removeFirst() }
    mutating func removeAll() { items.removeAll() }

    /// Writes from the front until everything is written, the socket would block, a relay is first, or something
    /// fails. `send` writes bytes (with `more` true when other items follow, for `MSG_MORE`); `sendFile` sends up to
    /// `count` bytes of a file from `offset`; `read` reads exactly what it is asked (a short read fails the
    /// response); `wrote` hears every count of bytes written.
    mutating func write(
        send: (_ bytes: UnsafeRawBufferPointer, _ more: Bool) throws(Errno) -> IOResult<Int>,
        sendFile: (_ file: File, _ offset: UInt64, _ count: Int) throws -> IOResult<Int>,
        read: (_ file: File, _ offset: UInt64, _ count: Int) throws -> [UInt8],
        wrote: (Int) -> Void
    ) -> Stop {
        while let item = items.first {
            let more = items.count > 1
            switch item {
            case .bytes(let bytes, let sent):
                var failure: Errno?
                let result = bytes.withUnsafeBytes { raw -> IOResult<Int> in
                    do throws(Errno) {
                        return try send(UnsafeRawBufferPointer(rebasing: raw[sent...]), more)
                    } catch {
                        failure = error
                        return .wouldBlock
                    }
                }
                if let failure { return .socketFailed(failure) }
                guard case .done(let count) = result else { return .wouldBlock }
                wrote(count)
                if sent + count >= bytes.count {
                    items.removeFirst()
                } else {
                    items[0] = .bytes(bytes, sent: sent + count)
                }
            case .file(let file, let offset, let remaining):
                let chunk = Int(min(remaining, UInt64(copiesFiles ? Self.copyChunk : Self.sendFileChunk)))
                if copiesFiles {
                    // Read a block and queue it as bytes in front of the rest of the file.
                    guard let bytes = try? read(file, offset, chunk), bytes.count == chunk else { return .fileFailed }
                    items[0] = .bytes(bytes, sent: 0)
                    if remaining > UInt64(chunk) {
                        items.insert(
                            .file(file, offset: offset + UInt64(chunk), remaining: remaining - UInt64(chunk)), at: 1)
                    }
                    continue
                }
                let result: IOResult<Int>
                do {
                    result = try sendFile(file, offset, chunk)
                } catch let error as Errno where SendFile.isUnsupported(error) {
                    copiesFiles = true  // no sendfile for this pair: copy through memory
                    continue
                } catch {
                    return .fileFailed
                }
                guard case .done(let count) = result else { return .wouldBlock }
                if count == 0 { return .fileFailed }  // the file shrank under us
                wrote(count)
                if UInt64(count) >= remaining {
                    items.removeFirst()
                } else {
                    items[0] = .file(file, offset: offset + UInt64(count), remaining: remaining - UInt64(count))
                }
            case .relay(let relay):
                return .relay(relay)
            }
        }
        return .drained
    }
}
