// The umbrella: an app imports TSPlayerKit and sees the playback engine, the ad-stripping proxy, the caching proxy
// and the shared server as one API, as it did when they were all one module; HTTPClient for the origin-fetching
// layer the two proxies share (`RemotePlaylistFetcher`, `RemoteFetchOptions`, `ProxyError`).
@_exported public import HLSProxy
@_exported public import HTTPClient
@_exported public import LoopbackHTTP
@_exported public import MediaCache
@_exported public import TSPlayback
