import FileRange
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The durable writer: a file replaced in chunks through a uniquely named temporary file, flushed, renamed and its
/// folder flushed; typed errors that name the step and the path.
@Suite(.temporaryFolders) struct DurableFileTests {
    private func folder() -> String { TemporaryFolders.make(prefix: "Durable-") }

    @Test func streamsChunksAndReplacesTheFileOnCommit() throws {
        let folder = folder()
        let path = folder + "/export.ts"
        try writeFileAtomically(Array("old".utf8), to: path)
        let file = try DurableFile(replacing: path)
        #expect(file.temporaryPath.hasPrefix(path + ".tmp"))
        #expect(file.temporaryPath != path)
        for chunk in 0..<10 { try file.write([UInt8](repeating: UInt8(chunk), count: 1000)) }
        #expect(file.count == 10_000)
        // Until the commit, readers see the old file.
        #expect(FileManager.default.contents(atPath: path) == Data("old".utf8))
        try file.commit()
        let expected = (0..<10).flatMap { [UInt8](repeating: UInt8($0), count: 1000) }
        #expect(FileManager.default.contents(atPath: path).map { [UInt8]($0) } == expected)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["export.ts"])
    }

    @Test func twoWritersOfOneFileUseTwoTemporaryFiles() throws {
        let folder = folder()
        let path = folder + "/shared"
        let first = try DurableFile(replacing: path)
        let second = try DurableFile(replacing: path)
        #expect(first.temporaryPath != second.temporaryPath)
        try first.write([1])
        try second.write([2, 2])
        try second.commit()
        try first.commit()
        #expect(FileManager.default.contents(atPath: path) == Data([1]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["shared"])
    }

    @Test func discardingOrDroppingLeavesTheOldFileAndNoTemporaryFile() throws {
        let folder = folder()
        let path = folder + "/store.json"
        try writeFileAtomically(Array("kept".utf8), to: path)
        let file = try DurableFile(replacing: path)
        try file.write(Array("lost".utf8))
        file.discard()
        file.discard()
        #expect(throws: DurableFileError.self) { try file.commit() }
        do {
            let dropped = try DurableFile(replacing: path)
            try dropped.write(Array("also lost".utf8))
        }
        #expect(FileManager.default.contents(atPath: path) == Data("kept".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["store.json"])
    }

    @Test func errorsNameTheStepAndThePath() throws {
        let folder = folder()
        let missing = folder + "/missing/store.json"
        let open = #expect(throws: DurableFileError.self) { try DurableFile(replacing: missing) }
        #expect(open?.step == .open)
        #expect(open?.errno == .noSuchFile)
        #expect(open?.path == missing)
        #expect(open?.description.hasPrefix(missing + ": creating the temporary file failed: ") == true)
        // A folder in the way: the rename fails, the folder stays, the temporary file goes.
        try FileManager.default.createDirectory(atPath: folder + "/taken/inside", withIntermediateDirectories: true)
        let file = try DurableFile(replacing: folder + "/taken")
        try file.write([1, 2, 3])
        let rename = #expect(throws: DurableFileError.self) { try file.commit() }
        #expect(rename?.step == .rename)
        #expect(rename?.path == folder + "/taken")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["taken"])
    }

    @Test func theNewFileHasExactlyItsMode() throws {
        let folder = folder()
        let path = folder + "/secret.key"
        let previous = umask(0o077)
        defer { umask(previous) }
        let file = try DurableFile(replacing: path, mode: 0o640)
        try file.commit()
        #expect(FileSystem.permissions(path) == 0o640)
    }

    @Test func aResumableFileIsInstalledWithTheSameLastSteps() throws {
        let folder = folder()
        try Data("partial and then whole".utf8).write(to: URL(fileURLWithPath: folder + "/seg.ts.part"))
        try DurableFile.install(folder + "/seg.ts.part", as: folder + "/seg.ts")
        #expect(FileManager.default.contents(atPath: folder + "/seg.ts") == Data("partial and then whole".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["seg.ts"])
        let failure = #expect(throws: DurableFileError.self) {
            try DurableFile.install(folder + "/gone.part", as: folder + "/gone")
        }
        #expect(failure?.step == .sync)
        #expect(failure?.errno == .noSuchFile)
    }
}

/// A writer process is killed (SIGKILL) after each step of a durable write, and at random moments while it rewrites
/// a file over and over: the file is always one version, whole, and the temporary files left behind never have its
/// name and are cleared by `removeAtomicWriteLeftovers(in:)`.
@Suite(.temporaryFolders) struct DurableFileCrashTests {
    /// Version `generation` of the file, as DurableFileCrashWriter writes it.
    static func version(_ generation: UInt64) -> [UInt8] {
        let length = 8 + Int(64 << 10) * Int(1 + generation % 5) + Int(generation % 7)
        var bytes = [UInt8](repeating: 0, count: length)
        for index in 0..<8 { bytes[index] = UInt8(truncatingIfNeeded: generation >> (8 * UInt64(index))) }
        for index in 8..<length {
            bytes[index] = UInt8(truncatingIfNeeded: (UInt64(index) &* 0x9E37_79B1 &+ generation &* 0x85EB_CA6B) >> 11)
        }
        return bytes
    }

    /// The version the file holds, or nil when it is not one version, whole.
    static func generation(of bytes: [UInt8]) -> UInt64? {
        guard bytes.count >= 8 else { return nil }
        var generation: UInt64 = 0
        for index in 0..<8 { generation |= UInt64(bytes[index]) << (8 * UInt64(index)) }
        return version(generation) == bytes ? generation : nil
    }

    static func writerURL() throws -> URL {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        while folder.pathExtension == "xctest" || ["MacOS", "Contents"].contains(folder.lastPathComponent) {
            folder = folder.deletingLastPathComponent()
        }
        let url = folder.appendingPathComponent("DurableFileCrashWriter")
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: url.path])
        }
        return url
    }

    /// Checks the folder after a kill: the file is version `expected` (any version when nil), whole; every other
    /// entry is a temporary file of the dead writer, which the leftover sweep removes.
    static func checkAfterKill(_ folder: String, expected: UInt64?, _ comment: String) throws {
        let path = folder + "/store.bin"
        let bytes = try #require(FileManager.default.contents(atPath: path), "\(comment): the file is gone")
        let generation = Self.generation(of: [UInt8](bytes))
        #expect(generation != nil, "\(comment): the file is torn (\(bytes.count) bytes)")
        if let expected { #expect(generation == expected, "\(comment)") }
        let others = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0 != "store.bin" }
        #expect(others.allSatisfy { $0.hasPrefix("store.bin.tmp") }, "\(comment): \(others)")
        let removed = removeAtomicWriteLeftovers(in: folder)
        #expect(removed.sorted() == others.sorted(), "\(comment)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["store.bin"], "\(comment)")
    }

    @Test(
        arguments: [
            ("opened", 0), ("wrote", 0), ("synced", 0), ("renamed", 1), ("folderSynced", 1),
        ] as [(String, UInt64)])
    func aKillAfterEachStepLeavesTheOldFileOrTheNewOne(step: String, expected: UInt64) async throws {
        let writer = try Self.writerURL()
        let folder = TemporaryFolders.make(prefix: "DurableCrash-")
        let path = folder + "/store.bin"
        try writeFileAtomically(Self.version(0), to: path)
        let child = try await ChildProcess(writer, [path, step], stopSignal: SIGKILL)
        #expect(await child.lines(1, within: 20) == ["stopped at \(step)"], "\(child.stdout) \(child.stderr)")
        await child.stop(grace: 0)
        #expect(child.process.terminationReason == .uncaughtSignal, "\(step): the writer ended by itself")
        try Self.checkAfterKill(folder, expected: expected, "after \(step)")
    }

    @Test func aWriteThatIsNotKilledCompletes() async throws {
        let folder = TemporaryFolders.make(prefix: "DurableCrash-")
        let path = folder + "/store.bin"
        try writeFileAtomically(Self.version(0), to: path)
        let child = try await ChildProcess(Self.writerURL(), [path, "none-such"], stopSignal: SIGKILL)
        _ = await child.lines(1, within: 20)
        try #require(await child.waitForExit(within: 60), "the writer did not end")
        #expect(child.process.terminationStatus == 64, "a bad step is a usage error")
        #expect(Self.generation(of: [UInt8](try #require(FileManager.default.contents(atPath: path)))) == 0)
    }

    @Test func killsAtRandomMomentsNeverLeaveATornFile() async throws {
        let writer = try Self.writerURL()
        let folder = TemporaryFolders.make(prefix: "DurableCrash-")
        let path = folder + "/store.bin"
        try writeFileAtomically(Self.version(0), to: path)
        var generator = SystemRandomNumberGenerator()
        for round in 0..<12 {
            let child = try await ChildProcess(writer, [path, "loop"], stopSignal: SIGKILL)
            #expect(await child.lines(1, within: 20) == ["ready"], "round \(round): \(child.stderr)")
            await suspend(Double.random(in: 0.001...0.04, using: &generator))
            await child.stop(grace: 0)
            #expect(child.process.terminationReason == .uncaughtSignal, "round \(round): the writer ended by itself")
            try Self.checkAfterKill(folder, expected: nil, "round \(round)")
        }
    }
}
