// The HLSPlaylist module. Its sources arrive with the issue that builds it; see Documentation/Architecture.md.
