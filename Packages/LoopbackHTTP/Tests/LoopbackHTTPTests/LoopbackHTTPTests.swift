// Tests for the LoopbackHTTP module arrive with its first code.
