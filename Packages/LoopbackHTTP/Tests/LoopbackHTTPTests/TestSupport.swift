// The shared test support (Packages/TestSupport) for every file of this target: temporary folders handed out as file
// URLs, the loopback client socket.
@_exported import TestSupport

typealias TemporaryFolders = TemporaryFolderURLs
