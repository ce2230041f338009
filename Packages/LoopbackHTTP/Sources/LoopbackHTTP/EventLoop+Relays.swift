import FileRange
import HTTPWire
import Sockets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The event loop: relaying a claimed descriptor to the client through a pipe with splice.
extension EventLoopRunner {

    enum RelayStart {
        /// No relay: iterate the stream.
        case stream
        case relay(Relay)
        /// The source was claimed but cannot be relayed: the response cannot be completed.
        case failed
    }

    /// Claims a streamed body's splice source, when it has one and the system can splice: the bytes the source
    /// already read go out first, then the relay.
    func startRelay(_ body: HTTPResponse.StreamBody, on connection: Connection) -> RelayStart {
        guard let source = body.spliceSource, let length = body.length, Splice.available else { return .stream }
        guard let pipe = sparePipes.popLast() ?? Splice.makePipe() else { return .stream }
        guard let (descriptor, buffered) = source.claim() else {
            recyclePipe(pipe, empty: true)
            return .stream
        }
        guard UInt64(buffered.count) <= length else {
            source.release(complete: false)
            recyclePipe(pipe, empty: true)
            return .failed
        }
        let relay = Relay(
            source: source, descriptor: descriptor, pipe: pipe, length: length - UInt64(buffered.count))
        if !buffered.isEmpty { connection.output.append(.bytes(buffered, sent: 0)) }
        do {
            try poller.addReadable(descriptor, token: UInt64(connection.fd) | Self.relayTokenFlag)
        } catch {
            source.release(complete: false)
            recyclePipe(pipe, empty: true)
            return .failed
        }
        return .relay(relay)
    }

    enum PumpResult { case finished, waiting, failed }

    /// Moves what can be moved now: source → pipe while the pipe has room, pipe → socket while the socket takes
    /// it. Waits when neither moves (the socket's writable edge or the source's readable edge resumes it).
    func pump(_ relay: Relay, _ connection: Connection) -> PumpResult {
        while true {
            var moved = false
            if relay.toRead > 0, relay.inPipe < relay.pipe.capacity {
                let want = Int(min(relay.toRead, UInt64(relay.pipe.capacity - relay.inPipe)))
                do {
                    switch try Splice.move(from: relay.descriptor, to: relay.pipe.write, count: want, more: false) {
                    case .done(0):
                        return .failed  // the upstream ended before the announced length
                    case .done(let count):
                        relay.toRead -= UInt64(count)
                        relay.inPipe += count
                        moved = true
                    case .wouldBlock:
                        break
                    }
                } catch {
                    return .failed
                }
            }
            if relay.inPipe > 0 {
                do {
                    let more = relay.toRead > 0 || connection.output.count > 1
                    switch try Splice.move(from: relay.pipe.read, to: connection.fd, count: relay.inPipe, more: more) {
                    case .done(let count):
                        relay.inPipe -= count
                        connection.exchange?.bytesWritten += UInt64(count)
                        connection.machine.wroteBytes(now: now)
                        moved = moved || count > 0
                    case .wouldBlock:
                        break
                    }
                } catch {
                    return .failed
                }
            }
            if relay.toRead == 0, relay.inPipe == 0 { return .finished }
            if !moved { return .waiting }
        }
    }

    /// Ends a relay: the source stops being watched and is given back; an empty pipe is kept for the next one.
    func endRelay(_ relay: Relay, complete: Bool) {
        poller.remove(relay.descriptor)
        relay.source.release(complete: complete)
        recyclePipe(relay.pipe, empty: relay.inPipe == 0)
    }

    func recyclePipe(_ pipe: (read: Int32, write: Int32, capacity: Int), empty: Bool) {
        if empty, sparePipes.count < Self.maxSparePipes {
            sparePipes.append(pipe)
        } else {
            closeDescriptor(pipe.read)
            closeDescriptor(pipe.write)
        }
    }

}
