// Tests for the TSPlayerKit module arrive with its first code.
