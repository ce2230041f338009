// Terminal detection and progress lines: one line rewritten in place on a terminal, plain lines (or nothing) when
// the output goes to a file or a pipe.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the standard descriptors are connected to.
package enum Terminal {
    /// Whether `fd` is a terminal.
    package static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// The C library's `exit`.
    static func exitProcess(_ status: Int32) -> Never { exit(status) }

    /// Whether standard error is a terminal (progress and colour only then).
    package static var stderrIsTerminal: Bool { isTerminal(2) }
}

/// A progress line. On a terminal each update rewrites one line (`\r`, the text, erase to the end of the line);
/// elsewhere an update is a plain line at most every `plainInterval` seconds, or nothing when that is nil.
/// A value type: a caller that updates it from several threads keeps it under its own lock.
package struct ProgressLine: Sendable {
    package let fd: Int32
    package let terminal: Bool
    package let plainInterval: Double?
    private var lastPlainLine: Double?
    /// Whether the terminal line holds text that ``finish(_:)`` must end.
    private var drawn = false

    /// `terminal` defaults to whether `fd` is one.
    package init(fd: Int32 = 2, plainInterval: Double? = 1, terminal: Bool? = nil) {
        self.fd = fd
        self.terminal = terminal ?? Terminal.isTerminal(fd)
        self.plainInterval = plainInterval
    }

    /// The text an update writes now, if any (`now` in seconds of the monotonic clock).
    package mutating func render(_ text: String, now: Double) -> String? {
        if terminal {
            drawn = true
            return "\r" + text + "\u{1B}[K"
        }
        guard let plainInterval else { return nil }
        if let last = lastPlainLine, now - last < plainInterval { return nil }
        lastPlainLine = now
        return text + "\n"
    }

    /// The text that ends the progress: the final line (ended by a line feed), or on a terminal with no final text
    /// the erased line.
    package mutating func renderFinish(_ text: String?) -> String? {
        defer { drawn = false }
        if terminal {
            if let text { return "\r" + text + "\u{1B}[K\n" }
            return drawn ? "\r\u{1B}[K" : nil
        }
        return text.map { $0 + "\n" }
    }

    /// The text that puts `message` on a line of its own (a retry, a warning), its control characters shown
    /// (``Output/printable(_:)``): on a terminal the progress line is erased first, and the next update draws it
    /// again below the message.
    package mutating func renderMessage(_ message: String) -> String {
        defer { drawn = false }
        return (terminal && drawn ? "\r\u{1B}[K" : "") + Output.printable(message) + "\n"
    }

    /// Writes `message` as a line of its own without breaking the progress line.
    package mutating func message(_ message: String) { Output.write(renderMessage(message), to: fd) }

    /// Shows `text` as the current progress.
    package mutating func update(_ text: String) {
        if let out = render(text, now: MonotonicClock.seconds()) { Output.write(out, to: fd) }
    }

    /// Ends the progress with `text` as its last line (nil: the line is cleared).
    package mutating func finish(_ text: String?) {
        if let out = renderFinish(text) { Output.write(out, to: fd) }
    }
}
