// How tsplayer words the libraries' errors for a user: what failed, on which URL or file, and what to try; never a
// Swift type name or an error code's identifier. Also which exit status each error means.
import CLIToolkit
import FileRange
import Foundation
import HLSDownload
import HLSProxy
import HTTPClient
import LoopbackHTTP
import MediaCache

enum ErrorText {
    /// The message for any error a subcommand reports.
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as DownloadError: describe(error)
        case let error as ProxyError: describe(error)
        case let error as CachingProxyError: describe(error)
        case let error as PlaybackError: error.description
        default: "\(error)"
        }
    }

    /// A retry about to happen, one line for stderr: `retrying in 2 s (3/8): connection reset (URL)`.
    static func retry(_ event: RetryEvent) -> String {
        let reason =
            switch event.reason {
            case let error as DownloadError: error.message
            case let error as ProxyError: error.detail
            default: event.reasonText
            }
        let delay =
            event.delay >= 10 || event.delay == event.delay.rounded()
            ? "\(Int(event.delay.rounded())) s" : String(format: "%.1f s", event.delay)
        return "retrying in \(delay) (\(event.attempt)/\(event.of)): \(reason) (\(event.url))"
    }

    /// Shows each retry on stderr as it happens.
    static let showRetry: @Sendable (RetryEvent) -> Void = { Output.log(retry($0)) }

    /// The exit status for an error: 2 when the input cannot be read (a missing file, not a playlist or not
    /// MPEG-TS, a network or HTTP failure), 1 for other failures.
    static func exitCode(_ error: any Error) -> Int32 {
        switch error {
        case let error as DownloadError: exitCode(error)
        case let error as PlaybackError:
            error.code == .cannotOpen || error.code == .notTransportStream ? ExitCode.unreadable : ExitCode.failure
        case let error as ProxyError: error.code == .serverFailed ? ExitCode.failure : ExitCode.unreadable
        case let error as CachingProxyError:
            error.code == .originFailed || error.code == .readFailed ? ExitCode.unreadable : ExitCode.failure
        default: ExitCode.failure
        }
    }

    /// A file-system error from Foundation as the system words it (`No such file or directory`), not as a generic
    /// "The operation could not be completed".
    static func file(_ error: any Error) -> String {
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
        if let underlying, underlying.domain == NSPOSIXErrorDomain, let code = Int32(exactly: underlying.code) {
            return Errno(rawValue: code).message
        }
        return error.localizedDescription
    }

    /// `404 Not Found`; `HTTP status 599` for a status with no name.
    static func status(_ code: Int) -> String {
        let status = HTTPStatus(code: code)
        return status.reasonPhrase == "Status \(code)" ? "HTTP status \(code)" : status.description
    }

    // MARK: Downloads

    static func describe(_ error: DownloadError) -> String {
        var text = error.message
        switch error.code {
        case .tooManyRetries: text = "gave up after retries: " + text
        case .integrity: text = "integrity check failed: " + text
        case .contentLength: text = "incomplete body: " + text
        default: break
        }
        if let status = error.status, !text.contains(String(status)) { text += " (\(Self.status(status)))" }
        if let path = error.path, error.code == .diskFull || error.code == .fileSystem {
            text = "\(path): " + text
        } else if let url = error.url {
            text = "\(url): " + text
        }
        switch error.code {
        case .notFound: text += "; --skip-missing leaves a gap for such segments instead of stopping"
        case .unauthorized: text += "; check the request headers (-H, --user-agent)"
        case .diskFull: text += "; free some space, then run the same command again to resume"
        case .noVariant: text += "; see --variant in 'tsplayer download --help'"
        default: break
        }
        if error.code == .invalidURL, error.message.hasPrefix("no task with id") {
            text += "; 'tsplayer tasks list' shows the tasks of the store (--store)"
        }
        return text
    }

    static func exitCode(_ error: DownloadError) -> Int32 {
        switch error.code {
        case .httpStatus, .notFound, .unauthorized, .keyUnavailable, .integrity, .contentLength, .invalidPlaylist,
            .transport, .tooManyRetries, .tooLarge:
            ExitCode.unreadable
        default: ExitCode.failure
        }
    }

    // MARK: Proxies

    static func describe(_ error: ProxyError) -> String {
        var text = "\(error.url): \(error.detail)"
        switch error.code {
        case .addressNotAllowed:
            text += "; pass --allow-private to allow upstreams on loopback and private addresses"
        case .httpStatus:
            if let status = error.status { text = "\(error.url): upstream answered \(Self.status(status))" }
        case .timedOut: text += "; the upstream sent nothing in time"
        default: break
        }
        return text
    }

    static func describe(_ error: CachingProxyError) -> String {
        var text = "\(error.code): \(error.detail)"
        if let status = error.status, !text.contains(String(status)) { text += " (\(Self.status(status)))" }
        if error.detail.contains("not allowed") || error.detail.contains("non-public") {
            text += "; pass --allow-private to allow origins on loopback and private addresses"
        }
        return text
    }
}
