// Tests for the HLSPlaylist module arrive with its first code.
