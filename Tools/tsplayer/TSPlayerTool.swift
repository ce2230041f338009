// tsplayer: serve .ts files as HLS on loopback, and (as they arrive) proxy, download and cache streams.
// Each subcommand lives in its own file and registers itself in `subcommands` below.
import Foundation

/// A subcommand of tsplayer.
struct Subcommand: Sendable {
    var name: String
    var abstract: String
    var usage: String
    var run: @Sendable ([String]) async -> Int32
}

@main
enum TSPlayerTool {
    static let version = "0.1.0"

    static let subcommands: [Subcommand] = [
        ServeCommand.subcommand,
        DownloadCommand.subcommand,
        TasksCommand.subcommand,
        AdFilterCommand.subcommand,
        ProxyCommand.subcommand,
        CacheProxyCommand.subcommand,
        RemuxCommand.subcommand,
    ]

    static var help: String {
        var text = """
            OVERVIEW: Play MPEG-TS and HLS through a loopback HTTP server.

            USAGE: tsplayer <subcommand> [options]

            OPTIONS:
              -h, --help              Show help information.
              --version               Show the version.

            SUBCOMMANDS:

            """
        for command in subcommands {
            text +=
                "  " + command.name.padding(toLength: 22, withPad: " ", startingAt: 0) + "  " + command.abstract + "\n"
        }
        text += "\n  See 'tsplayer help <subcommand>' for detailed help.\n"
        return text
    }

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let first = arguments.first else {
            Console.usageError("missing subcommand", usage: help)
        }
        switch first {
        case "-h", "--help":
            print(help, terminator: "")
            exit(0)
        case "--version":
            print(version)
            exit(0)
        case "help":
            if arguments.count > 1, let command = subcommands.first(where: { $0.name == arguments[1] }) {
                print(command.usage, terminator: "")
            } else {
                print(help, terminator: "")
            }
            exit(0)
        default:
            guard let command = subcommands.first(where: { $0.name == first }) else {
                Console.usageError("unknown subcommand '\(first)'", usage: help)
            }
            exit(await command.run(Array(arguments.dropFirst())))
        }
    }
}

/// Output helpers shared by the subcommands.
enum Console {
    /// Prints `Error: message` and the usage on stderr and exits 64 (bad usage).
    static func usageError(_ message: String, usage: String) -> Never {
        FileHandle.standardError.write(Data("Error: \(message)\n\n\(usage)".utf8))
        exit(64)
    }

    /// Prints `Error: message` on stderr.
    static func error(_ message: String) {
        FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
    }

    /// Writes a line to stderr.
    static func log(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// Writes a line to stdout and flushes it, so a reading process sees it at once.
    static func output(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Whether stderr is a terminal (progress and colour only then).
    static var stderrIsTerminal: Bool { isatty(2) == 1 }
}

/// A small command-line parser: options that take a value, flags, and positional arguments.
struct ParsedArguments {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    /// Parses `arguments`; `valued` and `flags` list the long and short spellings each option accepts.
    init(_ arguments: [String], valued: Set<String>, flags allowedFlags: Set<String>) throws(UsageError) {
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || argument == "-" || !argument.hasPrefix("-") {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            if valued.contains(name) {
                if let inlineValue {
                    values[name, default: []].append(inlineValue)
                } else {
                    guard index < arguments.count else { throw UsageError("missing value for '\(name)'") }
                    values[name, default: []].append(arguments[index])
                    index += 1
                }
            } else if allowedFlags.contains(name), inlineValue == nil {
                flags.insert(name)
            } else {
                throw UsageError("unknown option '\(argument)'")
            }
        }
    }

    /// The last value given for any of `names`.
    func value(_ names: String...) -> String? {
        names.compactMap { values[$0]?.last }.last
    }
}

/// A command-line usage mistake.
struct UsageError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
