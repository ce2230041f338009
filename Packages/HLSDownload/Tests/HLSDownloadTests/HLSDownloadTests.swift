// Tests for the HLSDownload module arrive with its first code.
