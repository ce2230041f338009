// The toolkit's parser and help, driven with no process: every spelling of an option, `--`, the usage errors and
// their messages, and the help derived from the same declarations.
import CLIToolkit
import Testing

@Suite struct ParserTests {
    static let command = Command(
        name: "tool sub", overview: "Do a thing.",
        arguments: [Argument("<file>", help: "The input.")],
        options: [
            .flag("--json", help: "Print JSON."),
            .flag("-v", "--verbose", help: "Say more."),
            .value("-H", "--header", value: "header", help: "A header; repeatable."),
            .value("--timeout", value: "seconds", help: "The timeout.", expects: "seconds as a number", example: "10"),
            .value("--port", value: "port", help: "The port."),
        ])

    func parsed(_ arguments: [String]) throws -> ParsedArguments {
        guard case .run(let parsed) = try Self.command.parse(arguments) else {
            Issue.record("\(arguments) did not parse to a run")
            return try #require(nil as ParsedArguments?)
        }
        return parsed
    }

    func usageError(_ arguments: [String]) -> String? {
        do {
            _ = try Self.command.parse(arguments)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func valuesWithSpaceOrEqualsAndShortSpellings() throws {
        let a = try parsed(["--timeout", "5", "x.ts", "-H", "A: 1", "--header=B: 2", "-v", "--port=80"])
        #expect(a.value("--timeout") == "5")
        #expect(a.values("--header") == ["A: 1", "B: 2"])
        #expect(a.values("-H") == ["A: 1", "B: 2"])
        #expect(a.flag("--verbose") && a.flag("-v"))
        #expect(!a.flag("--json"))
        #expect(a.value("--port") == "80")
        #expect(a.positionals == ["x.ts"])
        #expect(a.given == ["--timeout", "--header", "--header", "--verbose", "--port"])
        // An empty value after '=' is a value; the last of several wins for value(_:).
        let b = try parsed(["--port=", "--port", "81"])
        #expect(b.values("--port") == ["", "81"] && b.value("--port") == "81")
    }

    @Test func doubleDashEndsOptionsAndDashIsAnArgument() throws {
        let a = try parsed(["-", "--", "--json", "-v", "--"])
        #expect(a.positionals == ["-", "--json", "-v", "--"])
        #expect(!a.flag("--json"))
        // A valued option takes the next argument whatever it looks like.
        let b = try parsed(["--timeout", "-1", "--port", "--json"])
        #expect(b.value("--timeout") == "-1" && b.value("--port") == "--json" && !b.flag("--json"))
    }

    @Test func helpAndVersionAreAnsweredWhereverTheyStand() throws {
        #expect(try Self.command.parse(["x", "--help"]) == .help)
        #expect(try Self.command.parse(["-h"]) == .help)
        #expect(try Self.command.parse(["--version", "--bogus"]) == .version)
        // After `--` they are arguments.
        #expect(try parsed(["--", "--help"]).positionals == ["--help"])
    }

    @Test func usageErrorsSayWhatIsWrong() {
        #expect(usageError(["--bogus"]) == "unknown option '--bogus'")
        #expect(usageError(["--jsno"]) == "unknown option '--jsno'; did you mean '--json'?")
        #expect(usageError(["--timout", "3"]) == "unknown option '--timout'; did you mean '--timeout'?")
        #expect(usageError(["--verb"]) == "unknown option '--verb'; did you mean '--verbose'?")
        #expect(usageError(["--port"]) == "missing value for '--port'")
        #expect(usageError(["--json=yes"]) == "'--json' takes no value")
        #expect(usageError(["-x"]) == "unknown option '-x'")
    }

    @Test func valuesThatDoNotParseNameTheExpectedForm() throws {
        let a = try parsed(["--timeout", "abc", "--port", "x"])
        #expect(throws: UsageError("--timeout expects seconds as a number, e.g. --timeout 10; got 'abc'")) {
            try a.number("--timeout")
        }
        #expect(throws: UsageError("invalid value 'x' for '--port'")) { try a.integer("--port", as: UInt16.self) }
        #expect(throws: UsageError("--timeout expects seconds as a number, e.g. --timeout 10; got 'inf'")) {
            try parsed(["--timeout", "inf"]).number("--timeout")
        }
        #expect(try parsed(["--timeout=2.5"]).number("--timeout") == 2.5)
        #expect(try parsed(["--port", "8080"]).integer("--port", as: UInt16.self) == 8080)
        #expect(throws: UsageError("invalid value '70000' for '--port'")) {
            try parsed(["--port", "70000"]).integer("--port", as: UInt16.self)
        }
        #expect(try parsed([]).number("--timeout") == nil)
    }

    @Test func helpIsDerivedFromTheDeclarations() {
        let help = Self.command.help
        #expect(
            help == """
                OVERVIEW: Do a thing.

                USAGE: tool sub [--json] [--verbose] [--header <header>] [--timeout <seconds>] [--port <port>] <file>

                ARGUMENTS:
                  <file>                  The input.

                OPTIONS:
                  --json                  Print JSON.
                  -v, --verbose           Say more.
                  -H, --header <header>   A header; repeatable.
                  --timeout <seconds>     The timeout.
                  --port <port>           The port.
                  --version               Show the version.
                  -h, --help              Show help information.


                """)
        #expect(
            Self.command.usageErrorText("missing <file>")
                == "Error: missing <file>\nUSAGE: tool sub [--json] [--verbose] [--header <header>] "
                + "[--timeout <seconds>] [--port <port>] <file>\n  See 'tool sub --help' for more information.\n")
    }

    @Test func longLabelsAndLongHelpWrap() {
        let row = Command.row("--segment-duration <seconds>", String(repeating: "word ", count: 30))
        let lines = row.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines[0] == "  --segment-duration <seconds>")
        #expect(lines[1].hasPrefix(String(repeating: " ", count: 26) + "word"))
        #expect(lines.allSatisfy { $0.count <= Command.width })
        #expect(lines.count == 4)
    }

    @Test func editDistanceAndSuggestions() {
        #expect(Suggestion.editDistance("kitten", "sitting") == 3)
        #expect(Suggestion.editDistance("", "abc") == 3)
        #expect(Suggestion.editDistance("same", "same") == 0)
        #expect(Suggestion.closest(to: "serv", among: ["serve", "download", "tasks"]) == "serve")
        #expect(Suggestion.closest(to: "frobnicate", among: ["serve", "download", "tasks"]) == nil)
        #expect(Suggestion.closest(to: "--bogus", among: ["--json", "--pts", "--probe"]) == nil)
    }
}
