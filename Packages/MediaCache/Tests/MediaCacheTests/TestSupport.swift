// The shared test support (Packages/TestSupport) for every file of this target: temporary folders handed out as
// paths.
@_exported import TestSupport

typealias TemporaryFolders = TemporaryFolderPaths
