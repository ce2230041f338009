// nginx as the reference origin of the tests: started per test on loopback with its own temporary config and access
// log, stopped with it; its temporary folder is removed when the origin goes. The one nginx configuration of the
// tests is written here.
public import Foundation
public import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An nginx serving a folder on a loopback port at `/`, and again at `/slow/` limited to `slowRate` per connection.
/// With `requiredAuthorization`, every request without exactly that `Authorization` value gets 403.
public final class NginxOrigin {
    /// One access-log row.
    public struct Request: Sendable {
        public var uri: String
        public var status: Int
        public var bytes: Int
        public var agent: String
        public var test: String
        public var authorization: String
        public var range: String
    }

    public let port: UInt16
    public let directory: URL
    public var accessLog: URL { directory.appendingPathComponent("access.log") }
    private var process: ChildProcess?

    public init?(
        root: URL, slowRate: String = "1m", requiredAuthorization: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        guard let nginx = ExternalProgram.find("nginx", sourceLocation: sourceLocation) else { return nil }
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("nginx-\(UUID().uuidString)")
        directory = folder
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        // Until nginx runs, a failure (thrown or nil) leaves no folder behind; once it runs, deinit removes it.
        var running = false
        defer { if !running { try? FileManager.default.removeItem(at: folder) } }
        let guardLine = requiredAuthorization.map { "if ($http_authorization != \"\($0)\") { return 403; }" } ?? ""
        var chosen: UInt16 = 0
        for _ in 0..<20 {
            let port = UInt16.random(in: 20_000...60_000)
            let d = directory.path
            let config = """
                worker_processes 1;
                daemon off;
                master_process off;
                error_log \(d)/error.log;
                pid \(d)/nginx.pid;
                events { worker_connections 512; }
                http {
                  log_format e2e '$request_uri $status $body_bytes_sent "$http_user_agent" "$http_x_test" '
                                 '"$http_authorization" "$http_range"';
                  access_log \(d)/access.log e2e;
                  client_body_temp_path \(d)/tmp;
                  proxy_temp_path \(d)/tmp;
                  fastcgi_temp_path \(d)/tmp;
                  uwsgi_temp_path \(d)/tmp;
                  scgi_temp_path \(d)/tmp;
                  types {
                    application/vnd.apple.mpegurl m3u8; video/mp2t ts; video/mp4 mp4 m4s; audio/mpeg mp3;
                  }
                  server {
                    listen 127.0.0.1:\(port);
                    root \(root.path);
                    \(guardLine)
                    location /slow/ { alias \(root.path)/; limit_rate \(slowRate); sendfile off; output_buffers 1 8k; }
                  }
                }

                """
            let configURL = directory.appendingPathComponent("nginx.conf")
            try Data(config.utf8).write(to: configURL)
            // Single-process nginx started from a test thread inherits a signal mask that blocks SIGTERM: SIGKILL it.
            let process = try await ChildProcess(
                nginx, ["-c", configURL.path, "-e", directory.appendingPathComponent("error.log").path],
                stopSignal: SIGKILL)
            // Ready when it answers; a port in use makes it exit.
            for _ in 0..<100 {
                if !process.isRunning { break }
                if Self.connects(port) {
                    chosen = port
                    break
                }
                await suspend(0.02)
            }
            if chosen != 0 {
                self.process = process
                running = true
                break
            }
            await process.stop()
        }
        port = chosen
        if chosen == 0 {
            Issue.record("nginx did not start", sourceLocation: sourceLocation)
            return nil
        }
    }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    /// Stops nginx and returns once it has ended.
    public func stop() async {
        await process?.stop()
    }

    /// Stops nginx from where a task cannot wait (a `defer`): see ``ChildProcess/stop(grace:)``.
    public func stop() {
        process?.stop()
    }

    /// nginx is stopped before its folder (config, logs, temp files) is removed.
    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// The access log's rows, oldest first. nginx writes a row after its response has gone out, so a client that has
    /// read a whole body can look before the row is there: this waits until the log holds at least `atLeast` rows
    /// (at most 10 s) and then until it has stayed the same for 100 ms (at most 2 s more).
    public func requests(atLeast: Int = 0) async -> [Request] {
        let start = Date()
        var rows = readRequests()
        while rows.count < atLeast, Date().timeIntervalSince(start) < 10 {
            await suspend(0.02)
            rows = readRequests()
        }
        let settle = Date()
        while Date().timeIntervalSince(settle) < 2 {
            await suspend(0.1)
            let again = readRequests()
            if again.count == rows.count { break }
            rows = again
        }
        return rows
    }

    private func readRequests() -> [Request] {
        let text = (try? String(contentsOf: accessLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let quoted = line.split(separator: "\"", omittingEmptySubsequences: false)
            let head = quoted.first?.split(separator: " ") ?? []
            guard head.count >= 3, let status = Int(head[1]), let bytes = Int(head[2]) else { return nil }
            func field(_ index: Int) -> String { quoted.count > index ? String(quoted[index]) : "" }
            return Request(
                uri: String(head[0]), status: status, bytes: bytes, agent: field(1), test: field(3),
                authorization: field(5), range: field(7))
        }
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    public static func connects(_ port: UInt16) -> Bool { LoopbackTCP.accepts(port) }
}
