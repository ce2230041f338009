public import HTTPClient

/// How the variant stream of a multivariant playlist is chosen.
public enum VariantPolicy: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The highest bandwidth (ties broken by the larger resolution).
    case best
    /// The lowest bandwidth.
    case worst
    /// The variant whose bandwidth is closest to this many bits per second.
    case bandwidth(UInt64)
    /// The variant whose resolution is closest to this one (by pixel count), the higher bandwidth on ties.
    case resolution(width: UInt64, height: UInt64)
    /// The best variant whose CODECS holds a codec of this family (`avc1`, `hvc1`, `av01`, ...).
    case codec(String)

    /// Parses `best`, `worst`, a bandwidth in bits/s, `WxH`, or `codec:NAME`.
    public init?(argument: String) {
        switch argument.lowercased() {
        case "best": self = .best
        case "worst": self = .worst
        default:
            if let bandwidth = UInt64(argument) {
                self = .bandwidth(bandwidth)
            } else if argument.lowercased().hasPrefix("codec:"), argument.count > 6 {
                self = .codec(String(argument.dropFirst(6)))
            } else {
                let parts = argument.lowercased().split(separator: "x", omittingEmptySubsequences: false)
                guard parts.count == 2, let w = UInt64(parts[0]), let h = UInt64(parts[1]) else { return nil }
                self = .resolution(width: w, height: h)
            }
        }
    }

    public var description: String {
        switch self {
        case .best: "best"
        case .worst: "worst"
        case .bandwidth(let b): String(b)
        case .resolution(let w, let h): "\(w)x\(h)"
        case .codec(let c): "codec:\(c)"
        }
    }
}

/// Which alternate renditions (audio or subtitles) of the chosen variant's group are downloaded.
public enum RenditionPolicy: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Every rendition of the group.
    case all
    /// None (renditions muxed into the variant stay, since they have no URI).
    case none
    /// Renditions whose LANGUAGE matches (`en` matches `en-US`); the default rendition when none match.
    case language(String)
    /// The DEFAULT=YES rendition, or the first one.
    case automatic

    /// Parses `all`, `none`, `auto`, or a language tag.
    public init?(argument: String) {
        switch argument.lowercased() {
        case "all": self = .all
        case "none": self = .none
        case "auto", "default": self = .automatic
        default:
            guard !argument.isEmpty, argument.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x2C }) else {
                return nil
            }
            self = .language(argument)
        }
    }

    public var description: String {
        switch self {
        case .all: "all"
        case .none: "none"
        case .language(let l): l
        case .automatic: "auto"
        }
    }
}

/// What a task downloads and how it talks to the origin.
public struct DownloadOptions: Hashable, Sendable, Codable {
    public var variant: VariantPolicy = .best
    public var audio: RenditionPolicy = .automatic
    public var subtitles: RenditionPolicy = .none
    /// Sent on every request: playlists, segments, keys and maps. Those that carry credentials (`Authorization`,
    /// `Proxy-Authorization`, `Cookie` and ``secretHeaders``) go only to the host of the task's URL and to
    /// ``credentialHosts``, through redirects too (see `CredentialScope`); the others go everywhere.
    public var headers: [HTTPHeaders.Field] = []
    /// Header names that carry credentials besides `Authorization`, `Proxy-Authorization` and `Cookie` (an
    /// `X-Api-Key`, say): withheld like them from other hosts.
    public var secretHeaders: [String] = []
    /// Hosts that get the credentials too, besides the host of the task's URL (names as in URLs).
    public var credentialHosts: [String] = []
    /// Sent as `User-Agent` on every request when set.
    public var userAgent: String?
    /// Concurrent requests for this task; nil uses the manager's default.
    public var maxConcurrentRequests: Int?
    /// Skip VOD segments that answer 404/410 instead of stopping the task.
    public var skipMissingSegments: Bool = false
    /// For a live playlist: stop recording once this many seconds of media are recorded (the segment that
    /// reaches the limit is the last one). Nil records until EXT-X-ENDLIST.
    public var maxDuration: Double?
    /// The task's byte budget on disk. Live: stop recording once this many bytes are recorded (the segment that
    /// reaches it is the last one; nil records until EXT-X-ENDLIST). VOD: a download that needs more fails with
    /// ``DownloadError/Code/overBudget`` before it writes a byte past the budget.
    public var maxBytes: UInt64?
    /// The largest single resource (segment, key, map) accepted, VOD and live; nil means
    /// ``defaultMaxResourceBytes``. A larger one, by its Content-Length or by what it sends, fails the task with
    /// ``DownloadError/Code/tooLarge`` and leaves no partial file.
    public var maxResourceBytes: UInt64?
    /// 256 MiB: more than any real segment (a 10-second segment at 100 Mbit/s is 125 MB).
    public static let defaultMaxResourceBytes: UInt64 = 256 << 20

    public init() {}

    /// Decodes options saved by any version: a member an older store lacks takes its default.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        variant = try c.decodeIfPresent(VariantPolicy.self, forKey: .variant) ?? .best
        audio = try c.decodeIfPresent(RenditionPolicy.self, forKey: .audio) ?? .automatic
        subtitles = try c.decodeIfPresent(RenditionPolicy.self, forKey: .subtitles) ?? .none
        headers = try c.decodeIfPresent([HTTPHeaders.Field].self, forKey: .headers) ?? []
        secretHeaders = try c.decodeIfPresent([String].self, forKey: .secretHeaders) ?? []
        credentialHosts = try c.decodeIfPresent([String].self, forKey: .credentialHosts) ?? []
        userAgent = try c.decodeIfPresent(String.self, forKey: .userAgent)
        maxConcurrentRequests = try c.decodeIfPresent(Int.self, forKey: .maxConcurrentRequests)
        skipMissingSegments = try c.decodeIfPresent(Bool.self, forKey: .skipMissingSegments) ?? false
        maxDuration = try c.decodeIfPresent(Double.self, forKey: .maxDuration)
        maxBytes = try c.decodeIfPresent(UInt64.self, forKey: .maxBytes)
        maxResourceBytes = try c.decodeIfPresent(UInt64.self, forKey: .maxResourceBytes)
    }

    /// The text that identifies the selection, used to derive a stable task id.
    var selectionKey: String {
        "variant=\(variant);audio=\(audio);subtitles=\(subtitles)"
    }
}

/// Settings of a ``DownloadManager``.
public struct DownloadManagerConfiguration: Sendable {
    /// Tasks running at once; others wait as `ready`.
    public var maxConcurrentTasks: Int = 2
    /// Concurrent requests per task unless the task's options say otherwise.
    public var maxConcurrentRequests: Int = 8
    /// The state that tasks which were running when the process ended come back in: `paused` or `ready`.
    public var resumeInterruptedTasks: Bool = false
    /// The shortest interval between two progress events of one task, in seconds (state changes are immediate).
    public var eventInterval: Double = 0.25
    /// Retry and backoff (the client's one policy).
    public var retry = RetryPolicy()
    /// Told about each retry before its delay (`retrying in 2 s (3/8): connection reset`), for a caller that shows
    /// retries as they happen.
    public var onRetry: (@Sendable (RetryEvent) -> Void)?
    /// A transfer that receives nothing for this many seconds is abandoned and retried.
    public var stallTimeout: Double = 20
    /// Seconds a task's first playlist fetch may take in all, retries included, so that a dead or silent origin is
    /// reported quickly (the HTTP client's first-fetch deadline).
    public var firstFetchTimeout: Double = 8
    /// A transfer slower than this many bytes/s over a whole stall timeout is abandoned and retried.
    public var stallMinimumRate: Double = 1024
    /// Seconds one attempt at a resource (segment, key, map) may take in all, from its request to the end of its
    /// body, however the origin trickles or stalls after the head (`HTTPClient.HTTPClientRequest.bodyDeadline`): past
    /// it the attempt fails with a timeout naming the resource's URL and is retried like a stall, keeping what arrived.
    public var resourceDeadline: Double = 300
    /// Redirects followed per request.
    public var maxRedirects: Int = 5
    /// The largest playlist accepted, in bytes.
    public var maxPlaylistBytes: Int = 32 << 20

    public init() {}
}

extension String {
    var trimmingSpaces: Substring {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}
