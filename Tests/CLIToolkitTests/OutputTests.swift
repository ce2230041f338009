// The toolkit's JSON writer (the one style), progress lines and exit codes.
import CLIToolkit
import Testing

@Suite struct JSONWriterTests {
    static let document = JSON.object([
        ("name", .string("a \"b\"\n/c\u{1}")), ("count", .int(3)), ("ratio", .double(0.25)), ("whole", .double(6)),
        ("none", .null), ("flags", .array([.bool(true), .bool(false)])), ("empty", .object([])), ("list", .array([])),
        ("nested", .object([("x", .optional(nil as Int?))])), ("nan", .double(.nan)),
    ])

    @Test func documentsAreIndentedInDeclaredOrder() {
        #expect(
            Self.document.render()
                == """
                {
                  "name": "a \\"b\\"\\n/c\\u0001",
                  "count": 3,
                  "ratio": 0.25,
                  "whole": 6,
                  "none": null,
                  "flags": [
                    true,
                    false
                  ],
                  "empty": {},
                  "list": [],
                  "nested": {
                    "x": null
                  },
                  "nan": null
                }
                """)
    }

    @Test func streamedLinesAreCompact() {
        #expect(
            Self.document.render(pretty: false)
                == "{\"name\":\"a \\\"b\\\"\\n/c\\u0001\",\"count\":3,\"ratio\":0.25,\"whole\":6,\"none\":null,"
                + "\"flags\":[true,false],\"empty\":{},\"list\":[],\"nested\":{\"x\":null},\"nan\":null}")
    }

    @Test func theStreamingWriterMatchesTheValue() {
        var writer = JSONWriter(pretty: true)
        writer.object { j in
            j.key("a")
            j.array { j in
                j.element()
                j.number(1)
                j.element()
                j.string(nil as String?)
            }
            j.key("b")
            j.number(2.5 as Double?)
        }
        let value = JSON.object([("a", .array([.int(1), .null])), ("b", .double(2.5))])
        #expect(writer.text == value.render())
        var big = JSONWriter(pretty: false)
        big.number(1e20 as Double?)
        big.raw(" ")
        big.number(-0.5 as Double?)
        #expect(big.text == "1e+20 -0.5")
    }
}

@Suite struct ProgressLineTests {
    @Test func aMessageDoesNotBreakTheTerminalLine() {
        var line = ProgressLine(fd: 2, plainInterval: 1, terminal: true)
        #expect(line.renderMessage("retrying") == "retrying\n")  // nothing drawn yet: nothing to erase
        _ = line.render("[##--] 50%", now: 0)
        #expect(line.renderMessage("retrying in 2 s (1/8): reset") == "\r\u{1B}[Kretrying in 2 s (1/8): reset\n")
        #expect(line.renderFinish(nil) == nil)  // the message left no progress text on the line
        #expect(line.render("[###-] 75%", now: 1) == "\r[###-] 75%\u{1B}[K")
        var plain = ProgressLine(fd: 2, plainInterval: 1, terminal: false)
        _ = plain.render("50%", now: 0)
        #expect(plain.renderMessage("retrying") == "retrying\n")
    }

    @Test func aTerminalGetsOneLineRewrittenInPlace() {
        var line = ProgressLine(fd: 2, plainInterval: 1, terminal: true)
        #expect(line.render("10%", now: 0) == "\r10%\u{1B}[K")
        #expect(line.render("20%", now: 0.1) == "\r20%\u{1B}[K")
        #expect(line.renderFinish("done") == "\rdone\u{1B}[K\n")
        var cleared = ProgressLine(fd: 2, terminal: true)
        #expect(cleared.renderFinish(nil) == nil)
        _ = cleared.render("x", now: 0)
        #expect(cleared.renderFinish(nil) == "\r\u{1B}[K")
    }

    @Test func elsewherePlainLinesAtMostOncePerInterval() {
        var line = ProgressLine(fd: 2, plainInterval: 1, terminal: false)
        #expect(line.render("a", now: 10) == "a\n")
        #expect(line.render("b", now: 10.5) == nil)
        #expect(line.render("c", now: 11) == "c\n")
        #expect(line.renderFinish("done") == "done\n")
        #expect(line.renderFinish(nil) == nil)
        var silent = ProgressLine(fd: 2, plainInterval: nil, terminal: false)
        #expect(silent.render("a", now: 0) == nil)
    }

    /// Log and error lines quote remote and client text: control characters a terminal would act on are shown as
    /// `\xNN`; tab, line feed and other text (UTF-8 included) are kept.
    @Test func controlCharactersAreShownNotSent() {
        #expect(Output.printable("plain text, tab\tand\nline é ✓") == "plain text, tab\tand\nline é ✓")
        #expect(
            Output.printable("a\u{1B}[2Jb\rc\u{0}d\u{7F}e\u{9B}f\u{85}g") == "a\\x1b[2Jb\\x0dc\\x00d\\x7fe\\x9bf\\x85g")
        var line = ProgressLine(fd: 2, plainInterval: 1, terminal: true)
        _ = line.render("10%", now: 0)
        #expect(
            line.renderMessage("retrying: http://h/\u{1B}]0;title\u{7}")
                == "\r\u{1B}[Kretrying: http://h/\\x1b]0;title\\x07\n")
    }

    @Test func exitCodesAndVersion() {
        #expect(
            [ExitCode.success, ExitCode.failure, ExitCode.unreadable, ExitCode.usage, ExitCode.interrupted] == [
                0, 1, 2, 64, 130,
            ])
        #expect(Toolkit.version.split(separator: ".").count == 3)
    }
}
