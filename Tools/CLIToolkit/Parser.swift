// Parsing a command line against a command's declaration: `--opt value`, `--opt=value`, short spellings, `--` ending
// the options, and the usage error with its "did you mean" when an option is unknown.
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A mistake on the command line; the tool prints it with its usage and exits 64.
package struct UsageError: Error, Equatable, Sendable {
    package var message: String
    package init(_ message: String) { self.message = message }
}

/// What a command line asks for.
package enum ParseResult: Equatable, Sendable {
    case run(ParsedArguments)
    case help
    case version
}

/// The options and arguments of one command line.
package struct ParsedArguments: Equatable, Sendable {
    /// The values given to each valued option, in order, under its canonical name.
    package var values: [String: [String]] = [:]
    /// The flags given, under their canonical names.
    package var flags: Set<String> = []
    /// The positional arguments, in order.
    package var positionals: [String] = []
    /// The canonical names of the options given, in the order given (repeats included).
    package var given: [String] = []
    /// The options of the command, to map any spelling to its canonical name and to describe expected values.
    let options: [Option]

    init(options: [Option]) { self.options = options }

    package static func == (lhs: ParsedArguments, rhs: ParsedArguments) -> Bool {
        lhs.values == rhs.values && lhs.flags == rhs.flags && lhs.positionals == rhs.positionals
            && lhs.given == rhs.given
    }

    func canonical(_ name: String) -> String {
        options.first { $0.names.contains(name) }?.canonicalName ?? name
    }

    /// Whether the flag spelled `name` (any spelling) was given.
    package func flag(_ name: String) -> Bool { flags.contains(canonical(name)) }

    /// Every value given to the option spelled `name`, in order.
    package func values(_ name: String) -> [String] { values[canonical(name)] ?? [] }

    /// The last value given to the option spelled `name`.
    package func value(_ name: String) -> String? { values(name).last }

    /// The last value of `name` converted by `transform`; a value it rejects is a usage error that says what the
    /// option expects (from its declaration): `--timeout expects seconds as a number, e.g. --timeout 10; got 'abc'`.
    package func value<T>(_ name: String, _ transform: (String) -> T?) throws(UsageError) -> T? {
        guard let text = value(name) else { return nil }
        guard let converted = transform(text) else { throw invalid(name, text) }
        return converted
    }

    /// The last value of `name` as a finite number.
    package func number(_ name: String) throws(UsageError) -> Double? {
        try value(name) { text in Double(text).flatMap { $0.isFinite ? $0 : nil } }
    }

    /// The last value of `name` as an integer of type `T` (decimal digits, in `T`'s range).
    package func integer<T: FixedWidthInteger>(_ name: String, as type: T.Type = T.self) throws(UsageError) -> T? {
        try value(name) { T($0) }
    }

    /// The usage error for a value of `name` that does not parse.
    package func invalid(_ name: String, _ text: String) -> UsageError {
        let option = options.first { $0.names.contains(name) }
        let spelled = option?.canonicalName ?? name
        guard let expects = option?.expects else { return UsageError("invalid value '\(text)' for '\(spelled)'") }
        let example = option?.example.map { ", e.g. \(spelled) \($0)" } ?? ""
        return UsageError("\(spelled) expects \(expects)\(example); got '\(text)'")
    }
}

extension Command {
    /// Parses `arguments` (without the command's own words). `-` and anything after `--` are positional; a valued
    /// option takes the next argument whatever it looks like (`--max-duration -1`), or its value after `=`.
    package func parse(_ arguments: [String]) throws(UsageError) -> ParseResult {
        var parsed = ParsedArguments(options: allOptions)
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || argument == "-" || !argument.hasPrefix("-") {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            var name = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let option = option(named: name) else { throw unknownOption(name) }
            switch option.kind {
            case .flag:
                if inline != nil { throw UsageError("'\(name)' takes no value") }
                if option.canonicalName == "--help" { return .help }
                if option.canonicalName == "--version" { return .version }
                parsed.flags.insert(option.canonicalName)
                parsed.given.append(option.canonicalName)
            case .value:
                let value: String
                if let inline {
                    value = inline
                } else {
                    guard index < arguments.count else { throw UsageError("missing value for '\(name)'") }
                    value = arguments[index]
                    index += 1
                }
                parsed.values[option.canonicalName, default: []].append(value)
                parsed.given.append(option.canonicalName)
            }
        }
        return .run(parsed)
    }

    /// `unknown option '--jsn'; did you mean '--json'?`
    func unknownOption(_ name: String) -> UsageError {
        let spellings = allOptions.flatMap(\.names)
        if let guess = Suggestion.closest(to: name, among: spellings) {
            return UsageError("unknown option '\(name)'; did you mean '\(guess)'?")
        }
        return UsageError("unknown option '\(name)'")
    }

    /// Parses `arguments`; prints the help (exit 0), the version (exit 0) or a usage error (exit 64) and exits when
    /// that is what the command line asks for or deserves.
    package func parseOrExit(_ arguments: [String]) -> ParsedArguments {
        do {
            switch try parse(arguments) {
            case .run(let parsed): return parsed
            case .help:
                Output.write(help)
                exit(ExitCode.success)
            case .version:
                Output.line(Toolkit.version)
                exit(ExitCode.success)
            }
        } catch {
            usageError(error.message)
        }
    }

    /// The usage error text: `Error: message`, the usage, and where to read more.
    package func usageErrorText(_ message: String) -> String {
        "Error: \(message)\n\(usage)\n  See '\(name) --help' for more information.\n"
    }

    /// Prints a usage error on stderr and exits 64.
    package func usageError(_ message: String) -> Never {
        Output.write(usageErrorText(message), to: 2)
        exit(ExitCode.usage)
    }
}

/// "Did you mean": the closest known word to a mistyped one.
package enum Suggestion {
    /// The candidate nearest to `word` by edit distance, if it is near enough to be a likely typo (at most a third
    /// of the word's letters, and at most 3, changed).
    package static func closest(to word: String, among candidates: [String]) -> String? {
        // A short spelling (`-x`) is too short to guess from.
        guard word.count > 2 else { return nil }
        let limit = min(3, max(1, word.count / 3))
        var best: (String, Int)?
        for candidate in candidates where candidate.count > 2 {
            let distance = editDistance(word, candidate)
            if distance <= limit, distance < (best?.1 ?? Int.max) { best = (candidate, distance) }
        }
        // A prefix that names one option alone: `--verb` for `--verbose`.
        if best == nil, word.count >= 4 {
            let prefixed = candidates.filter { $0.hasPrefix(word) }
            if prefixed.count == 1 { return prefixed[0] }
        }
        return best?.0
    }

    /// The Levenshtein distance between two words (insertions, deletions and substitutions).
    package static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars)
        let b = Array(b.unicodeScalars)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
