// tsplayer: serve .ts files as HLS on loopback, and (as they arrive) proxy, download and cache streams.
// Each subcommand lives in its own file, declares its command line there, and registers itself in `subcommands`.
import CLIToolkit
import Foundation
import HLSPlaylist

/// A subcommand of tsplayer: its declared command line and what runs it.
struct Subcommand: Sendable {
    var command: Command
    var abstract: String
    var run: @Sendable ([String]) async -> Int32

    var name: String { String(command.name.split(separator: " ").last ?? "") }
}

@main
enum TSPlayerTool {
    static let subcommands: [Subcommand] = [
        ServeCommand.subcommand,
        DownloadCommand.subcommand,
        TasksCommand.subcommand,
        AdFilterCommand.subcommand,
        ProxyCommand.subcommand,
        CacheProxyCommand.subcommand,
        RemuxCommand.subcommand,
    ]

    static let command = Command(
        name: "tsplayer", overview: "Play MPEG-TS and HLS through a loopback HTTP server.",
        synopsis: ["tsplayer <subcommand> [options]"],
        subcommands: subcommands.map { SubcommandSummary($0.name, abstract: $0.abstract) },
        footer: "  See 'tsplayer help <subcommand>' for detailed help.")

    static func main() async {
        let arguments = Command.processArguments()
        guard let first = arguments.first else { command.usageError("missing subcommand") }
        if first == "help" {
            let named = arguments.dropFirst().first
            Output.write((subcommands.first { $0.name == named }?.command ?? command).help)
            exit(ExitCode.success)
        }
        if let subcommand = subcommands.first(where: { $0.name == first }) {
            exit(await subcommand.run(Array(arguments.dropFirst())))
        }
        if first.hasPrefix("-") {
            // Only the standard options come before a subcommand.
            _ = command.parseOrExit([first])
            command.usageError("missing subcommand")
        }
        let guess = Suggestion.closest(to: first, among: subcommands.map(\.name))
        command.usageError("unknown subcommand '\(first)'" + (guess.map { "; did you mean '\($0)'?" } ?? ""))
    }
}

/// Checks of option values shared by the subcommands; a bad value is a usage error of `command`.
extension ParsedArguments {
    /// `--port`: a TCP port number.
    func port(_ command: Command) -> UInt16? {
        guard let text = value("--port") else { return nil }
        guard let port = UInt16(text) else {
            command.usageError("invalid port '\(text)': --port expects a number from 0 to 65535, e.g. --port 8080")
        }
        return port
    }

    /// `-H, --header`: `Name: value` fields, in order.
    func headers(_ command: Command) -> [(name: String, value: String)] {
        values("--header").map { header in
            guard let colon = header.firstIndex(of: ":") else {
                command.usageError("header '\(header)' is not 'Name: value'")
            }
            let name = header[..<colon].trimmingCharacters(in: .whitespaces)
            let value = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, !name.contains(" ") else { command.usageError("header '\(header)' has no valid name") }
            return (name: name, value: value)
        }
    }

    /// The options that say where credentials may go: `--secret-header` (repeatable) marks a header name as a
    /// credential, like Authorization, Cookie and Proxy-Authorization; `--send-credentials-to` (repeatable) names a
    /// host that gets them besides the origin's.
    static let credentialOptions: [Option] = [
        .value(
            "--secret-header", value: "name",
            help: "A header that carries a credential (repeatable): sent to <url>'s host only, like Authorization, "
                + "Cookie and Proxy-Authorization.",
            expects: "a header name", example: "X-Api-Key"),
        .value(
            "--send-credentials-to", value: "host",
            help: "Also send the credentials (Authorization, Cookie, Proxy-Authorization, --secret-header) to this "
                + "host (repeatable); by default only <url>'s host gets them.",
            expects: "a host name or address, without scheme or port", example: "cdn.example.com"),
    ]

    /// `--secret-header`: header names (tokens).
    func secretHeaders(_ command: Command) -> [String] {
        values("--secret-header").map { name in
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            // A field name is a token (RFC 9110 §5.1): letters, digits and !#$%&'*+-.^_`|~.
            let token = trimmed.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
            }
            guard !trimmed.isEmpty, token else {
                command.usageError(invalid("--secret-header", name).message)
            }
            return trimmed
        }
    }

    /// `--send-credentials-to`: host names or addresses (`cdn.example.com`, `127.0.0.1`, `[::1]`).
    func credentialHosts(_ command: Command) -> [String] {
        values("--send-credentials-to").map { host in
            let bracketed = host.hasPrefix("[") && host.hasSuffix("]")
            let ok =
                !host.isEmpty
                && host.utf8.allSatisfy { byte in
                    (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                        || (bracketed && (byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]") || byte == 0x3A))
                }
            guard ok else { command.usageError(invalid("--send-credentials-to", host).message) }
            return host
        }
    }

    /// The one `<url>` argument, an absolute http(s) URL.
    func httpURL(_ command: Command) -> String {
        guard positionals.count == 1, let url = positionals.first else {
            command.usageError(positionals.isEmpty ? "missing <url>" : "expected one <url>")
        }
        let scheme = url.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
        guard scheme == "http" || scheme == "https", URL(string: url)?.host != nil else {
            command.usageError("<url> must be an absolute http or https URL")
        }
        return url
    }

    /// The one `<url>` argument with Kodi's header suffix allowed (`http://h/x.m3u8|User-Agent=Foo&Referer=...`,
    /// percent-encoded values): the URL before the `|`, an absolute http(s) URL, and the headers after it.
    func httpURLWithHeaders(_ command: Command) -> (url: String, headers: [(name: String, value: String)]) {
        guard positionals.count == 1, let argument = positionals.first, argument.contains("|") else {
            return (httpURL(command), [])
        }
        // Read as the URL line of a one-channel IPTV list: the list reader splits the suffix as players do.
        let list = try? IPTVPlaylist("#EXTM3U\n#EXTINF:-1,channel\n" + argument + "\n")
        guard let channel = list?.channels.first, !channel.url.contains("|") else {
            command.usageError("the headers after '|' in <url> are not 'Name=value&Name=value'")
        }
        let scheme = channel.url.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
        guard scheme == "http" || scheme == "https", URL(string: channel.url)?.host != nil else {
            command.usageError("<url> must be an absolute http or https URL")
        }
        return (channel.url, channel.requestHeaders)
    }

    /// A value converted by `transform`, or the usage error that names the option's expected form.
    func checked<T>(_ command: Command, _ name: String, _ transform: (String) -> T?) -> T? {
        do {
            return try value(name, transform)
        } catch {
            command.usageError(error.message)
        }
    }

    /// A number (`--segment-duration 6`), or the usage error that names the expected form.
    func number(_ command: Command, _ name: String) -> Double? {
        checked(command, name) { Double($0).flatMap { $0.isFinite ? $0 : nil } }
    }
}
