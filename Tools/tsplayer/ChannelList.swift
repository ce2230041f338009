// `--channel`: the stream is one channel of an IPTV channel list (a file or an http(s) URL), and the request headers
// the list gives that channel (#EXTVLCOPT, #EXTHTTP, a Kodi `|Name=value` suffix on its URL) go on every request.
import CLIToolkit
import Foundation
import HLSPlaylist
import HTTPClient

enum ChannelList {
    /// The largest list read whole (lists of tens of thousands of channels run to a few MB).
    static let maxBytes = 64 << 20

    /// A list that could not be read: the message names the file or URL and what failed.
    struct Failure: Error {
        var message: String
    }

    /// The list at `source`: a file path, or an http(s) URL fetched with `headers` (the caller's own -H and
    /// User-Agent) under the address policy.
    static func load(_ source: String, headers: HTTPHeaders, allowPrivate: Bool) async throws(Failure) -> IPTVPlaylist {
        let bytes: [UInt8]
        let scheme = source.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
        if scheme == "http" || scheme == "https" {
            var configuration = HTTPClientConfiguration()
            configuration.addressPolicy = allowPrivate ? .any : .publicOnly
            do {
                bytes = try await HTTPClient(configuration: configuration).get(
                    source, headers: headers, maxBytes: maxBytes, onRetry: ErrorText.showRetry
                ).body
            } catch let error as HTTPClientError {
                var message = "channel list: \(error)"
                if error.code == .addressRefused {
                    message += "; pass --allow-private to allow upstreams on loopback and private addresses"
                }
                throw Failure(message: message)
            } catch {
                throw Failure(message: "channel list \(source): \(error)")
            }
        } else {
            let handle = FileHandle(forReadingAtPath: source)
            guard let handle else {
                let reason = FileManager.default.fileExists(atPath: source) ? "cannot be read" : "no such file"
                throw Failure(message: "channel list \(source): \(reason)")
            }
            defer { try? handle.close() }
            let data: Data?
            do {
                data = try handle.read(upToCount: maxBytes + 1)
            } catch {
                throw Failure(message: "channel list \(source): \(ErrorText.file(error))")
            }
            bytes = Array(data ?? Data())
            guard bytes.count <= maxBytes else {
                throw Failure(message: "channel list \(source): larger than \(maxBytes >> 20) MiB")
            }
        }
        do {
            let list = try IPTVPlaylist(bytes: bytes)
            guard !list.channels.isEmpty else { throw Failure(message: "channel list \(source): no channels in it") }
            return list
        } catch let error as Failure {
            throw error
        } catch {
            throw Failure(message: "channel list \(source): \(error)")
        }
    }

    /// The channel `choice` names: a number is a `tvg-chno` or else a 1-based position in the list; other text is
    /// a title, `tvg-name` or `tvg-id` (case-insensitive). Nil with a usage message when no channel or several match.
    static func choose(_ choice: String, in list: IPTVPlaylist) -> (channel: IPTVChannel?, error: String?) {
        let channels = Array(list.channels.enumerated())
        let wanted = choice.trimmingCharacters(in: .whitespaces)
        var matches: [(offset: Int, element: IPTVChannel)]
        if !wanted.isEmpty, wanted.allSatisfy(\.isASCII), let number = Int(wanted) {
            matches = channels.filter { $0.element["tvg-chno"]?.trimmingCharacters(in: .whitespaces) == wanted }
            if matches.isEmpty, number >= 1, number <= channels.count { matches = [channels[number - 1]] }
        } else {
            let folded = wanted.lowercased()
            matches = channels.filter { names($0.element).contains(folded) }
        }
        if matches.count == 1 { return (matches[0].element, nil) }
        if matches.count > 1 {
            let listed = matches.prefix(8).map { describe($0.offset, $0.element) }.joined(separator: ", ")
            return (
                nil,
                "channel '\(choice)' is ambiguous: \(matches.count) channels match (\(listed)); "
                    + "pick one by its number, e.g. --channel \(matches[0].offset + 1)"
            )
        }
        let near = nearMatches(wanted, channels)
        let hint =
            near.isEmpty
            ? "the list has \(channels.count) channel\(channels.count == 1 ? "" : "s"), numbered 1 to \(channels.count)"
            : "near matches: " + near.map { describe($0.offset, $0.element) }.joined(separator: ", ")
        return (nil, "no channel '\(choice)' in the list; \(hint)")
    }

    /// The names a channel answers to, folded: its title, `tvg-name` and `tvg-id`.
    static func names(_ channel: IPTVChannel) -> [String] {
        [channel.name, channel["tvg-name"], channel["tvg-id"]].compactMap {
            let name = $0?.trimmingCharacters(in: .whitespaces).lowercased()
            return name?.isEmpty == false ? name : nil
        }
    }

    /// Up to five channels whose names contain `word` or are a likely typo of it.
    static func nearMatches(_ word: String, _ channels: [(offset: Int, element: IPTVChannel)]) -> [(
        offset: Int, element: IPTVChannel
    )] {
        let folded = word.lowercased()
        guard !folded.isEmpty else { return [] }
        let limit = min(3, max(1, folded.count / 3))
        var scored: [(score: Int, offset: Int, element: IPTVChannel)] = []
        for (offset, channel) in channels {
            var best = Int.max
            for name in names(channel) {
                if name.contains(folded) || (folded.count >= 3 && folded.contains(name) && name.count >= 3) {
                    best = 0
                } else if abs(name.count - folded.count) <= limit {
                    let distance = Suggestion.editDistance(folded, name)
                    if distance <= limit { best = min(best, distance) }
                }
            }
            if best != Int.max { scored.append((best, offset, channel)) }
        }
        scored.sort { ($0.score, $0.offset) < ($1.score, $1.offset) }
        return scored.prefix(5).map { ($0.offset, $0.element) }
    }

    /// `#3 'BBC One' (tvg-id bbc1.uk)`: how a channel is named in messages.
    static func describe(_ offset: Int, _ channel: IPTVChannel) -> String {
        var text = "#\(offset + 1) '\(channel.name)'"
        if let id = channel["tvg-id"], !id.isEmpty { text += " (tvg-id \(id))" }
        return text
    }
}

extension ParsedArguments {
    /// The headers the user gave (`-H`, `--user-agent` and, where the command has it, `--referer`): those a channel
    /// list is read with, and those that win over the list's own.
    func userHeaders(_ command: Command) -> HTTPHeaders {
        var headers = HTTPHeaders(self.headers(command).map { ($0.name, $0.value) })
        if let agent = value("--user-agent") { headers.replaceOrAdd(name: "User-Agent", value: agent) }
        if let referer = value("--referer") { headers.add(name: "Referer", value: referer) }
        return headers
    }

    /// The stream of `download` and `proxy`: with `--channel`, the chosen channel of the list that `<url>` names
    /// (a file or an http(s) URL, read with `listHeaders`) and its headers; otherwise the `<url>` argument with
    /// its Kodi suffix headers. A channel that cannot be chosen is a usage error; a list that cannot be read
    /// prints its error and exits 2.
    func streamInput(_ command: Command, listHeaders: HTTPHeaders, allowPrivate: Bool) async -> (
        url: String, headers: [(name: String, value: String)]
    ) {
        guard let choice = value("--channel") else { return httpURLWithHeaders(command) }
        guard positionals.count == 1, let source = positionals.first else {
            command.usageError(positionals.isEmpty ? "missing <url>: the channel list" : "expected one <url>")
        }
        let list: IPTVPlaylist
        do {
            list = try await ChannelList.load(source, headers: listHeaders, allowPrivate: allowPrivate)
        } catch {
            Output.error(error.message)
            exit(ExitCode.unreadable)
        }
        let (chosen, problem) = ChannelList.choose(choice, in: list)
        guard let channel = chosen else { command.usageError(problem ?? "no channel '\(choice)'") }
        let scheme = channel.url.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
        guard scheme == "http" || scheme == "https", URL(string: channel.url)?.host != nil else {
            Output.error(
                "channel list \(source): channel '\(channel.name)' (line \(channel.lineNumber)) has no absolute "
                    + "http or https URL: '\(channel.url)'")
            exit(ExitCode.unreadable)
        }
        return (channel.url, channel.requestHeaders)
    }
}
