// The few places where the end-to-end tests meet a difference between Linux (Glibc) and Darwin: loopback sockets
// (TestSupport's LoopbackTCP: the socket type constant, SIGPIPE, sockaddr_in's length field), and another process's
// open descriptors (/proc/<pid>/fd on Linux; lsof(8) on Darwin, which has no /proc).
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

enum Platform {
    /// Whether the tests run on an Apple platform, for a test that cannot run there (its trait says why).
    #if canImport(Darwin)
        static let isDarwin = true
    #else
        static let isDarwin = false
    #endif

    /// Turns SIGPIPE off for a socket this process did not make with TestSupport's ``LoopbackTCP`` (an accepted one)
    /// on Darwin; nothing to do on Linux, where ``sendFlags`` does it per call.
    static func noSigPipe(_ fd: Int32) { LoopbackTCP.noSigPipe(fd) }

    /// The send(2) flags that go with ``LoopbackTCP``'s sockets.
    static var sendFlags: Int32 { LoopbackTCP.sendFlags }

    /// Another process's open descriptors as `N -> what`: `socket:...` for a socket, the path for a file or
    /// device, something else for a pipe, an event queue and the like.
    static func descriptors(of pid: Int32) -> [String] {
        #if os(Linux)
            let directory = "/proc/\(pid)/fd"
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            return names.sorted { (Int($0) ?? 0) < (Int($1) ?? 0) }.map { name in
                name + " -> "
                    + ((try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + name)) ?? "?")
            }
        #else
            return lsofDescriptors(of: pid, lsof: URL(fileURLWithPath: "/usr/sbin/lsof"))
        #endif
    }

    /// `lsof -F ftn` (field output: `f` descriptor, `t` type, `n` name, one per line) for one process, numeric
    /// descriptors only (not cwd, txt and the other lsof pseudo-descriptors), in the form of ``descriptors(of:)``.
    /// Darwin's way; built everywhere so that a Linux run can hold it against /proc.
    static func lsofDescriptors(of pid: Int32, lsof: URL) async -> [String] {
        guard
            let listed = try? await EndToEnd.run(lsof, ["-n", "-P", "-a", "-p", String(pid), "-F", "ftn"], timeout: 60)
        else { return [] }
        let data = listed.stdout
        var result: [String] = []
        var descriptor: Int?
        var type = ""
        func flush(_ name: String) {
            guard let descriptor else { return }
            let socketTypes: Set = ["IPv4", "IPv6", "unix", "sock"]
            result.append("\(descriptor) -> " + (socketTypes.contains(type) ? "socket:\(type)" : name))
        }
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let tag = line.first else { continue }
            let value = String(line.dropFirst())
            switch tag {
            case "f":
                descriptor = Int(value)
                type = ""
            case "t": type = value
            case "n":
                flush(value)
                descriptor = nil
            default: break
            }
        }
        return result
    }
}
