// Tests for the HLSAdFilter module arrive with its first code.
