// Tests for the MPEGTS module arrive with its first code.
