// URIReference, the RFC 3986 reference type of HLSPlaylist's API, lives in TextCodecs, the toolkit's leaf of small
// pure codecs; it is re-exported so that `import HLSPlaylist` keeps naming it.
@_exported public import TextCodecs
