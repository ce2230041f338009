import HLSPlaylist

print("HLSPlaylist linked")
