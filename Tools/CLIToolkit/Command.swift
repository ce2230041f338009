// The declaration of a command: its arguments, options and subcommands, from which both the parser and the help
// text are derived, so the two cannot disagree.

/// The version of the whole toolkit; every tool prints it the same way for `--version`.
package enum Toolkit {
    package static let version = "1.0.0"
}

/// A tool's exit status. The same meaning in every tool.
package enum ExitCode {
    /// Everything went well.
    package static let success: Int32 = 0
    /// The tool ran and found a failure: lint errors, stream errors, a check or a download that failed.
    package static let failure: Int32 = 1
    /// The input cannot be read or is not what the tool reads: a missing file, not MPEG-TS, not a playlist, a
    /// network error.
    package static let unreadable: Int32 = 2
    /// The command line is wrong (sysexits' EX_USAGE).
    package static let usage: Int32 = 64
    /// Stopped by SIGINT or SIGTERM (128 + SIGINT, as a shell reports it).
    package static let interrupted: Int32 = 130

    /// Ends the process with `status` (the tools call this, never the C library's `exit`).
    package static func exit(_ status: Int32) -> Never { Terminal.exitProcess(status) }
}

/// One option: its spellings, whether it takes a value, and its help.
package struct Option: Sendable {
    /// A flag takes no value; a valued option takes one, named in the help (`--port <port>`).
    package enum Kind: Sendable, Equatable {
        case flag
        case value(String)
    }

    /// Every spelling, short ones first: `["-H", "--header"]`.
    package var names: [String]
    package var kind: Kind
    package var help: String
    /// What a value must look like, for the message when one does not parse: `seconds as a number`.
    package var expects: String?
    /// A value that parses, shown in that message: `10`.
    package var example: String?

    /// A flag: `--json`, `-v, --verbose`.
    package static func flag(_ names: String..., help: String) -> Option {
        Option(names: names, kind: .flag, help: help)
    }

    /// An option with a value; `expects` and `example` describe a valid value for the message when one does not
    /// parse (`--timeout expects seconds as a number, e.g. --timeout 10; got 'abc'`).
    package static func value(
        _ names: String..., value: String, help: String, expects: String? = nil, example: String? = nil
    ) -> Option {
        Option(names: names, kind: .value(value), help: help, expects: expects, example: example)
    }

    /// The name values are stored under: the first long spelling (`--header` for `-H, --header`).
    package var canonicalName: String { names.first { $0.hasPrefix("--") } ?? names.first ?? "" }

    /// `-H, --header <header>`.
    var label: String {
        let spelled = names.joined(separator: ", ")
        if case .value(let name) = kind { return spelled + " <\(name)>" }
        return spelled
    }
}

/// One positional argument, for the help.
package struct Argument: Sendable {
    package var name: String
    package var help: String

    /// `name` as the help shows it: `<file>`, `<input> ...`.
    package init(_ name: String, help: String) {
        self.name = name
        self.help = help
    }
}

/// A subcommand, for the help of the command above it.
package struct SubcommandSummary: Sendable {
    package var name: String
    package var abstract: String

    package init(_ name: String, abstract: String) {
        self.name = name
        self.abstract = abstract
    }
}

/// A command: what it is called, what it does, and what it accepts.
package struct Command: Sendable {
    /// The words that run it: `tsinspect`, `tsplayer serve`.
    package var name: String
    /// One sentence: what the command does.
    package var overview: String
    /// Paragraphs after the overview, as written (already wrapped).
    package var discussion: String?
    /// The usage lines without `USAGE: ` (each starts with `name`); empty: one line generated from the options.
    package var synopsis: [String]
    package var arguments: [Argument]
    package var options: [Option]
    /// Shown under SUBCOMMANDS:, in this order.
    package var subcommands: [SubcommandSummary]
    /// A last paragraph of the help.
    package var footer: String?

    /// The options every command accepts, after its own.
    package static let standardOptions: [Option] = [
        .flag("--version", help: "Show the version."),
        .flag("-h", "--help", help: "Show help information."),
    ]

    package init(
        name: String, overview: String, discussion: String? = nil, synopsis: [String] = [],
        arguments: [Argument] = [], options: [Option] = [], subcommands: [SubcommandSummary] = [],
        footer: String? = nil
    ) {
        self.name = name
        self.overview = overview
        self.discussion = discussion
        self.synopsis = synopsis
        self.arguments = arguments
        self.options = options
        self.subcommands = subcommands
        self.footer = footer
    }

    /// The command's options and the standard ones.
    package var allOptions: [Option] { options + Self.standardOptions }

    /// The option spelled `name` (any of its spellings).
    package func option(named name: String) -> Option? {
        allOptions.first { $0.names.contains(name) }
    }

    // MARK: Help

    /// The usage lines, `USAGE: ` on the first and the rest aligned under it.
    package var usage: String {
        let lines = synopsis.isEmpty ? generatedSynopsis : synopsis
        return lines.enumerated().map { ($0.offset == 0 ? "USAGE: " : "       ") + $0.element }
            .joined(separator: "\n")
    }

    /// `tsplayer tasks <subcommand> [--store <dir>] [--json] <id>`: the options in declared order, then the
    /// arguments, in lines that fit the width (the later ones indented under the first option).
    var generatedSynopsis: [String] {
        var parts: [String] = []
        if !subcommands.isEmpty { parts.append("<subcommand>") }
        for option in options {
            let spelled = option.names.first { $0.hasPrefix("--") } ?? option.canonicalName
            if case .value(let value) = option.kind {
                parts.append("[\(spelled) <\(value)>]")
            } else {
                parts.append("[\(spelled)]")
            }
        }
        parts += arguments.map(\.name)
        let indent = String(repeating: " ", count: name.count + 1)
        var lines: [String] = []
        var line = name
        for part in parts {
            if line.count + 1 + part.count > Self.width - 7, line != name, line != indent {
                lines.append(line)
                line = indent
            }
            line += (line == indent ? "" : " ") + part
        }
        lines.append(line)
        return lines
    }

    /// The full help: OVERVIEW, the discussion, USAGE, ARGUMENTS, OPTIONS, SUBCOMMANDS.
    package var help: String {
        var text = "OVERVIEW: \(overview)\n\n"
        if let discussion { text += discussion + "\n\n" }
        text += usage + "\n\n"
        if !arguments.isEmpty {
            text += "ARGUMENTS:\n"
            for argument in arguments { text += Self.row(argument.name, argument.help) }
            text += "\n"
        }
        text += "OPTIONS:\n"
        for option in allOptions { text += Self.row(option.label, option.help) }
        text += "\n"
        if !subcommands.isEmpty {
            text += "SUBCOMMANDS:\n"
            for subcommand in subcommands { text += Self.row(subcommand.name, subcommand.abstract) }
            text += "\n"
        }
        if let footer { text += footer + "\n\n" }
        return text
    }

    /// Help lines are wrapped at this width.
    package static let width = 118
    /// The column where the help of an option starts.
    static let helpColumn = 26

    /// `  label                   help`, the help wrapped and indented; a label too long for its column gets a line
    /// of its own.
    package static func row(_ label: String, _ help: String) -> String {
        let pad = String(repeating: " ", count: helpColumn)
        let lines = wrap(help, width: width - helpColumn)
        var text = "  " + label
        if label.count + 2 > helpColumn - 2 {
            text += "\n" + pad
        } else {
            text += String(repeating: " ", count: helpColumn - 2 - label.count)
        }
        text += lines.joined(separator: "\n" + pad) + "\n"
        return text
    }

    /// Words of `text` in lines of at most `width` characters (a longer word gets a line of its own).
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        lines.append(line)
        return lines
    }
}

extension Command {
    /// The process's arguments after its name; a tool reads them once, at its entry point. They come from
    /// `CommandLine.argc` and `unsafeArgv`, which every standard library the tools build with declares read-only:
    /// the iOS 16 and 17 SDKs declare `CommandLine.arguments` a mutable static, which Swift 6 refuses to read.
    package static func processArguments() -> [String] {
        let count = Int(CommandLine.argc)
        var arguments: [String] = []
        for index in 1..<max(1, count) {
            guard let argument = CommandLine.unsafeArgv[index] else { break }
            arguments.append(String(cString: argument))
        }
        return arguments
    }
}
