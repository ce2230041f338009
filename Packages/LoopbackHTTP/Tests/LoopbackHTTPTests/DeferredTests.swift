import Dispatch
import FileRange
import Testing

@testable import LoopbackHTTP

/// Deferred handlers: called on the event loop, answered later from any thread through an `HTTPResponder`.
extension SocketTests {
    /// The routes of the deferred tests: answered from a dispatch queue, at once on the loop, twice (the second
    /// answer ignored), never (the dropped responder answers 500); `/now` notes whether it was called in a task.
    static func deferredApplication(calledInTask: TaskNotes = TaskNotes()) -> HTTPApplication {
        var router = Router()
        router.getDeferred("/later/:name") { request, responder in
            let name = request.parameters["name"] ?? "?"
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) {
                responder.respond(.text("later \(name)"))
            }
        }
        router.getDeferred("/now") { _, responder in
            let inTask = withUnsafeCurrentTask { $0 != nil }
            calledInTask.notes.withLock { $0.append(inTask) }
            responder.respond(.bytes(hundredBytes, contentType: "text/plain"))
        }
        router.getDeferred("/later-bytes") { _, responder in
            BlockingPool.shared.submit { responder.respond(.bytes(hundredBytes, contentType: "text/plain")) }
        }
        router.getDeferred("/twice") { _, responder in
            responder.respond(.text("first"))
            responder.respond(.text("second", status: .internalServerError))
        }
        router.getDeferred("/dropped") { _, _ in }
        return HTTPApplication(router: router)
    }

    @Test func deferredHandlersAnswerFromAnyThreadExactlyOnce() async throws {
        let calledInTask = TaskNotes()
        try await withServer(Self.deferredApplication(calledInTask: calledInTask)) { port, server in
            let client = try RawClient(port: port)
            // Answered 20 ms later from a dispatch queue, on a kept-alive connection, in order.
            client.send(request("/later/a") + request("/later/b"))
            #expect(await client.readResponse()?.bodyText == "later a")
            #expect(await client.readResponse()?.bodyText == "later b")
            // Answered at once, on the loop: Range and the server's framing still apply.
            client.send(request("/now", "Range: bytes=10-19\r\n"))
            let ranged = try #require(await client.readResponse())
            #expect(ranged.status == 206)
            #expect(ranged.bodyText == "0123456789")
            #expect(ranged.header("Content-Range") == "bytes 10-19/100")
            // Only the first answer counts.
            client.send(request("/twice"))
            let twice = try #require(await client.readResponse())
            #expect(twice.status == 200)
            #expect(twice.bodyText == "first")
            // A handler that drops its responder without answering: 500, and the connection goes on.
            client.send(request("/dropped"))
            let dropped = try #require(await client.readResponse())
            #expect(dropped.status == 500)
            #expect(dropped.bodyText.contains("did not answer"))
            client.send(request("/now"))
            #expect(await client.readResponse()?.body == hundredBytes)
            #expect(server.openConnections == 1)
        }
        // The handler was called on the event loop's thread, not in a task.
        #expect(calledInTask.notes.withLock { $0 } == [false, false])
    }

    /// A body in memory answered later, from another thread, gets the same content ETag as one answered at once (the
    /// tag is computed on the answering thread, not on the loop), and conditional requests use it: 304 for a
    /// matching If-None-Match, the range for a matching If-Range, the whole body for one that does not match.
    @Test func aLaterAnswerInMemoryGetsTheContentETag() async throws {
        try await withServer(Self.deferredApplication()) { port, _ in
            let client = try RawClient(port: port)
            let tag = HTTPApplication.contentEntityTag(hundredBytes)
            client.send(request("/later-bytes"))
            let whole = try #require(await client.readResponse())
            #expect(whole.status == 200 && whole.body == hundredBytes)
            #expect(whole.header("ETag") == tag)
            client.send(request("/now"))
            #expect(await client.readResponse()?.header("ETag") == tag)
            client.send(request("/later-bytes", "If-None-Match: \(tag)\r\n"))
            let notModified = try #require(await client.readResponse())
            #expect(notModified.status == 304 && notModified.body.isEmpty)
            client.send(request("/later-bytes", "Range: bytes=0-4\r\nIf-Range: \(tag)\r\n"))
            let ranged = try #require(await client.readResponse())
            #expect(ranged.status == 206 && ranged.bodyText == "01234")
            client.send(request("/later-bytes", "Range: bytes=0-4\r\nIf-Range: \"other\"\r\n"))
            let changed = try #require(await client.readResponse())
            #expect(changed.status == 200 && changed.body == hundredBytes)
            client.send(request("/later-bytes", method: "HEAD"))
            let head = try #require(await client.readResponse(head: true))
            #expect(head.status == 200 && head.header("ETag") == tag)
        }
    }

    /// A client that leaves before a deferred answer: the late answer is dropped, the server stays healthy.
    @Test func aDeferredAnswerAfterTheClientLeftIsDropped() async throws {
        try await withServer(Self.deferredApplication()) { port, server in
            let gone = try RawClient(port: port)
            gone.send(request("/later/gone"))
            gone.reset()
            try await Task.sleep(for: .milliseconds(60))
            let client = try RawClient(port: port)
            client.send(request("/later/here"))
            #expect(await client.readResponse()?.bodyText == "later here")
            #expect(server.openConnections == 1)
        }
    }
}

@Suite("Deferred handlers in process")
struct DeferredInProcessTests {
    @Test func inProcessDeferredHandlersGiveTheSameAnswers() async {
        let app = SocketTests.deferredApplication()
        #expect(await app.respond(to: get("/later/x")).bodyText == "later x")
        let ranged = await app.respond(to: get("/now", [("Range", "bytes=0-4")]))
        #expect(ranged.status.code == 206)
        #expect(ranged.bodyText == "01234")
        #expect(await app.respond(to: get("/twice")).bodyText == "first")
        let dropped = await app.respond(to: get("/dropped"))
        #expect(dropped.status.code == 500)
    }
}

/// Whether each call of a handler was made inside a task.
final class TaskNotes: Sendable {
    let notes = LockedValue<[Bool]>([])
}
