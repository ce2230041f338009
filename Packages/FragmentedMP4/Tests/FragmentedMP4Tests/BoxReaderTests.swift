import Testing

@testable import FragmentedMP4

@Suite struct BoxReaderTests {
    @Test func readsTheInitSegmentTree() throws {
        let bytes = try Fixtures.initSegment()
        let boxes = try BoxReader.parse(bytes)
        #expect(boxes.map(\.type) == ["ftyp", "moov"])
        let moov = try #require(boxes.first("moov"))
        #expect(moov.children.map(\.type) == ["mvhd", "trak", "trak", "trak", "trak", "mvex"])
        let stbl = try #require(moov.descendant(["trak", "mdia", "minf", "stbl"]))
        #expect(stbl.children.map(\.type) == ["stsd", "stts", "stsc", "stsz", "stco"])
        #expect(moov.descendant(["mvex"])?.children.map(\.type) == ["trex", "trex", "trex", "trex"])
    }

    @Test func largeSizeToEndAndUUID() throws {
        // A 64-bit size, a uuid box, and a last box with size 0.
        var bytes: [UInt8] = [0, 0, 0, 1] + tag("free") + [0, 0, 0, 0, 0, 0, 0, 19] + [1, 2, 3]
        let user = [UInt8](0..<16)
        bytes += [0, 0, 0, 26] + tag("uuid") + user + [9, 9]
        bytes += [0, 0, 0, 0] + tag("mdat") + [7, 7, 7, 7]
        let boxes = try BoxReader.parse(bytes)
        #expect(boxes.count == 3)
        #expect(boxes[0].sizeForm == .large && boxes[0].data == [1, 2, 3])
        #expect(boxes[1].type == "uuid" && boxes[1].userType == user && boxes[1].data == [9, 9])
        #expect(boxes[2].sizeForm == .toEnd && boxes[2].data == [7, 7, 7, 7])
        var writer = BoxWriter()
        for box in boxes { writer.write(box) }
        #expect(writer.bytes == bytes)
        // parsePrefix stops before the size-0 box: its end is not known until the input ends.
        let prefix = try BoxReader.parsePrefix(bytes)
        #expect(prefix.boxes.count == 2 && prefix.consumed == 19 + 26)
    }

    @Test func unknownBoxesKeptAsRawBytes() throws {
        let unknown: [UInt8] = [0, 0, 0, 12] + tag("zzzz") + [1, 2, 3, 4]
        let moov: [UInt8] = [0, 0, 0, 20] + tag("moov") + unknown
        let boxes = try BoxReader.parse(moov)
        #expect(boxes[0].children == [Box(type: "zzzz", content: .data([1, 2, 3, 4]))])
        #expect(boxes[0].serialized() == moov)
    }

    /// Every prefix of an init segment: a prefix that ends exactly after a top-level box parses to the boxes before
    /// it; every other prefix throws `truncated` at an offset inside the input, with the path of the cut box.
    @Test func everyPrefixIsTruncatedOrABoxBoundary() throws {
        let bytes = try Fixtures.initSegment()
        let boundaries = [0, Int(uint32(bytes, 0)), bytes.count]
        for length in 0..<bytes.count {
            let prefix = Array(bytes[0..<length])
            if boundaries.contains(length) {
                let boxes = try BoxReader.parse(prefix)
                #expect(boxes.count == boundaries.firstIndex(of: length), "prefix \(length)")
                #expect(try BoxReader.parsePrefix(prefix).consumed == length)
            } else {
                do throws(FragmentedMP4Error) {
                    _ = try BoxReader.parse(prefix)
                    Issue.record("prefix of \(length) bytes parsed")
                } catch {
                    #expect(error.code == .truncated, "prefix \(length): \(error)")
                    #expect((error.offset ?? -1) >= 0 && (error.offset ?? .max) <= length, "prefix \(length)")
                }
                // The incremental reader consumes only the complete boxes.
                let partial = try BoxReader.parsePrefix(prefix)
                #expect(partial.consumed == boundaries.last { $0 <= length }, "prefix \(length)")
            }
        }
    }

    @Test func badSizesAreTyped() throws {
        func code(_ bytes: [UInt8]) -> FragmentedMP4Error? {
            do throws(FragmentedMP4Error) {
                _ = try BoxReader.parse(bytes)
                return nil
            } catch { return error }
        }
        let free = tag("free")
        #expect(code([0, 0, 0, 4] + free)?.code == .invalidSize)  // below the header
        #expect(code([0, 0, 0, 1] + free + [0, 0, 0, 0, 0, 0, 0, 8])?.code == .invalidSize)  // largesize < 16
        #expect(code([0, 0, 0, 1] + free + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])?.code == .truncated)
        #expect(code([0, 0, 0, 9] + free)?.code == .truncated)
        // A child that runs past its parent: the parent is complete, so the size is wrong.
        let moov: [UInt8] = [0, 0, 0, 20] + tag("moov") + [0, 0, 0, 40] + free + [0, 0, 0, 0]
        let error = try #require(code(moov))
        #expect(error.code == .invalidSize && error.offset == 8 && error.path == ["moov", "free"])
        // Leftover bytes too short for a header inside a container.
        let short: [UInt8] = [0, 0, 0, 12] + tag("moov") + [1, 2, 3, 4]
        #expect(code(short)?.code == .invalidSize)
        #expect(code(short)?.path == ["moov"])
    }

    @Test func depthAndCountAreCapped() throws {
        var nested: [UInt8] = []
        for _ in 0..<20 { nested = [0, 0, 0, UInt8(8 + nested.count)] + tag("moov") + nested }
        #expect(throws: FragmentedMP4Error.self) { _ = try BoxReader.parse(nested) }
        do throws(FragmentedMP4Error) { _ = try BoxReader.parse(nested) } catch {
            #expect(error.code == .tooDeep && error.path.count == 17)
        }
        let many = [[UInt8]](repeating: [0, 0, 0, 8] + tag("free"), count: 11).flatMap { $0 }
        do throws(FragmentedMP4Error) {
            _ = try BoxReader.parse(many, limits: BoxLimits(maximumBoxCount: 10))
            Issue.record("11 boxes accepted")
        } catch { #expect(error.code == .tooManyBoxes && error.offset == 80) }
    }

    /// Random buffers and randomly damaged init segments: every one parses or throws a typed error; none traps.
    @Test func randomInputNeverTraps() throws {
        var random = SplitMix64(seed: 15)
        let valid = try Fixtures.initSegment()
        var parsed = 0
        for round in 0..<3000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0..<200, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
                // Small sizes and known container types, so that random input reaches the nested paths.
                if bytes.count >= 8, round % 4 == 0 {
                    bytes[0...3] = [0, 0, 0, UInt8(truncatingIfNeeded: bytes.count)]
                    bytes[4...7] = ArraySlice(tag("moov"))
                }
            } else {
                bytes = valid
                for _ in 0..<Int.random(in: 1...8, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            }
            do throws(FragmentedMP4Error) {
                let boxes = try BoxReader.parse(bytes)
                parsed += 1
                // What parses writes back to the same bytes.
                var writer = BoxWriter()
                for box in boxes { writer.write(box) }
                #expect(writer.bytes == bytes, "round \(round)")
            } catch {
                #expect(!error.description.isEmpty)
            }
        }
        #expect(parsed > 0)
    }
}
