// Silent audio for fMP4 slates. Like the `TS*.swift` bridge files it imports MPEGTS: the silent AAC and AC-3 frames
// are MPEGTS's own, one source for both containers' slates.
import MPEGTS

/// Silent audio for fMP4 slates: the content's AAC-LC track (channel configurations 1 to 7, mono to 7.1; or HE-AAC
/// on such a core, signalled explicitly), AC-3
/// track (`ac-3`, any rate, bit rate and layout its `dac3` gives but dual mono) or E-AC-3 track (`ec-3`, one
/// independent substream at 48, 44.1 or 32 kHz), its `trak` and `trex` copied into the slates' init section, so the
/// sample entry is the content's own, and fragments of silent frames on it (1024 samples for AAC, 2048 output samples
/// for HE-AAC, 1536 for AC-3 and E-AC-3, made for the content's `dac3` or `dec3`), placed on the content's audio frame grid from where
/// the anchor segment's audio ended. Without it an fMP4 slate is a whole slot without sound.
extension FragmentedSlateTemplate {
    /// The content's audio track that slates can carry silence on: AAC-LC in a channel configuration from 1 (mono)
    /// to 7 (7.1), HE-AAC on such a core, AC-3 or E-AC-3, whose timescale is its (output) sample rate (one frame is
    /// 1024, 2048 or 1536 ticks).
    public struct AudioTrack: Sendable, Hashable {
        public var id: UInt32
        public var timescale: UInt64
        /// The sample entry's channel count.
        public var channels: Int
        /// The AudioSpecificConfig's channel configuration (ISO/IEC 14496-3 1.6.3.5): 1 mono, 2 stereo, 6 5.1, 7
        /// 7.1; the silent frames are made for it. 0 for AC-3, whose layout is its `dac3`'s.
        public var channelConfiguration: Int
        /// Samples in one frame, its duration in the timescale: 1024 for AAC-LC, 2048 for HE-AAC (at its output
        /// rate), 1536 for AC-3 and E-AC-3.
        public var frameDuration: UInt32
        /// One silent frame: a raw AAC data block, or an AC-3 or E-AC-3 sync frame.
        let silentFrame: [UInt8]
        /// The content's `trak` and its `trex`, copied into the slates' init section.
        let trak: Box
        let trex: Box
    }

    /// The first `soun` track of an init section that slates can carry silence on, or nil.
    public static func audioTrack(initSection: [UInt8]) -> AudioTrack? {
        guard let moov = (try? BoxReader.parsePrefix(initSection))?.boxes.first(where: { $0.type == .moov }) else {
            return nil
        }
        for trak in moov.children where trak.type == .trak {
            guard let hdlr = trak.descendant([.mdia, .hdlr])?.data, hdlr.count >= 12,
                hdlr[8..<12].elementsEqual("soun".utf8),
                let tkhd = trak.child(.tkhd)?.data, tkhd.count >= 4,
                let mdhd = trak.descendant([.mdia, .mdhd]), let scale = timescale(mdhd),
                let stsd = trak.descendant([.mdia, .minf, .stbl, .stsd])?.data,
                let entry = aacEntry(stsd) ?? ac3Entry(stsd) ?? eac3Entry(stsd)
            else { continue }
            let idOffset = tkhd[0] == 1 ? 20 : 12
            guard idOffset + 4 <= tkhd.count, UInt64(entry.sampleRate) == scale else { continue }
            let id = uint32(tkhd, idOffset)
            guard
                let trex = moov.child(.mvex)?.children.first(where: {
                    $0.type == .trex && $0.data.count >= 8 && uint32($0.data, 4) == id
                })
            else { continue }
            return AudioTrack(
                id: id, timescale: scale, channels: entry.channels, channelConfiguration: entry.configuration,
                frameDuration: entry.frameDuration, silentFrame: entry.silent, trak: trak, trex: trex)
        }
        return nil
    }

    /// Why slates cannot carry silence on the content's audio, for a diagnostic: nil when they can
    /// (``audioTrack(initSection:)``) or when the init section has no sound track. Silence is made without an
    /// encoder only for AAC-LC in channel configurations 1 to 7 (and HE-AAC signalled explicitly on such a core), AC-3
    /// and E-AC-3 (one independent substream); Opus, MPEG audio, a layout given by a program config element,
    /// implicitly signalled HE-AAC and the rest would need one, so their slates are left silent-less (no audio
    /// fragment) rather than given wrong audio.
    public static func silentAudioUnavailable(initSection: [UInt8]) -> String? {
        guard audioTrack(initSection: initSection) == nil,
            let moov = (try? BoxReader.parsePrefix(initSection))?.boxes.first(where: { $0.type == .moov })
        else { return nil }
        for trak in moov.children where trak.type == .trak {
            guard let hdlr = trak.descendant([.mdia, .hdlr])?.data, hdlr.count >= 12,
                hdlr[8..<12].elementsEqual("soun".utf8)
            else { continue }
            guard let stsd = trak.descendant([.mdia, .minf, .stbl, .stsd])?.data, stsd.count >= 16 else {
                return "the content's audio track has no sample description: slates carry no audio"
            }
            let format = String(decoding: stsd[12..<16].map { (0x20...0x7E).contains($0) ? $0 : 0x3F }, as: UTF8.self)
            var codec = "'\(format)'"
            if format == "mp4a", let asc = mp4aConfig(stsd) {
                let heAAC = "whose timescale is not its output rate, or whose core is not AAC-LC in a channel layout "
                switch asc.objectType {
                case 5: codec = "HE-AAC (mp4a.40.5) \(heAAC)1 to 7"
                case 29: codec = "HE-AAC v2 (mp4a.40.29) \(heAAC)1 (mono)"
                case 2 where asc.configuration == 0: codec = "AAC-LC with a program config element layout"
                case 2: codec = "AAC-LC whose sample rate is not its timescale (implicit SBR)"
                default: codec = "AAC object type \(asc.objectType) (mp4a.40.\(asc.objectType))"
                }
            } else if format == "ac-3" {
                codec = "AC-3 in dual mono or without a dac3, or whose sample rate is not its timescale"
            } else if format == "ec-3" {
                codec = "E-AC-3 with dependent substreams, in dual mono or whose sample rate is not its timescale"
            } else if format == "Opus" {
                codec = "Opus"
            } else if format == ".mp3" {
                codec = "MPEG audio"
            }
            return "the content's audio is \(codec): slates carry no audio (silence for it needs an encoder)"
        }
        return nil
    }

    /// The fields of an AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1) slates need.
    struct AudioConfig {
        /// The audio object type: 2 for AAC-LC, 5 for HE-AAC (SBR), 29 for HE-AAC v2 (SBR and PS).
        var objectType: Int
        /// The channel configuration (of the AAC core, for SBR and PS).
        var configuration: Int
        /// The sampling frequency (the core's, for SBR and PS), nil when not known.
        var sampleRate: Int?
        /// For explicit SBR or PS signalling (object type 5 or 29): the output (extension) sampling frequency and the
        /// core's object type.
        var outputRate: Int?
        var coreObjectType: Int?
    }

    /// The fields of an AudioSpecificConfig, or nil when it is too short.
    static func audioSpecificConfig(_ config: [UInt8]) -> AudioConfig? {
        var reader = BitReader(bytes: config, what: "AudioSpecificConfig")
        func objectType() throws(FragmentedMP4Error) -> Int {
            let type = Int(try reader.bits(5))
            return type == 31 ? 32 + Int(try reader.bits(6)) : type
        }
        func frequency() throws(FragmentedMP4Error) -> Int? {
            let index = Int(try reader.bits(4))
            if index == 15 { return Int(try reader.bits(24)) }
            let table = AudioSpecificConfig.samplingFrequencies
            return index < table.count ? Int(table[index]) : nil
        }
        do {
            let type = try objectType()
            let rate = try frequency()
            var result = AudioConfig(objectType: type, configuration: Int(try reader.bits(4)), sampleRate: rate)
            if type == 5 || type == 29 {
                // Explicit hierarchical signalling: the extension sampling frequency, then the core's object type.
                result.outputRate = try? frequency()
                result.coreObjectType = try? objectType()
            }
            return result
        } catch {
            return nil
        }
    }

    /// How far a track's presentation runs after its decode times, in seconds, from its edit list: the empty
    /// edits before its first media (in the movie's timescale) less that edit's media time (in the track's). ffmpeg
    /// delays video by an empty edit as long as the AAC priming. 0 for a track without an edit list or not found.
    public static func presentationShift(initSection: [UInt8], trackID: UInt32) -> Double {
        guard let moov = (try? BoxReader.parsePrefix(initSection))?.boxes.first(where: { $0.type == .moov }),
            let mvhd = moov.child(.mvhd)?.data, mvhd.count >= 24
        else { return 0 }
        let movieScale = Double(uint32(mvhd, mvhd[0] == 1 ? 20 : 12))
        for trak in moov.children where trak.type == .trak {
            guard let tkhd = trak.child(.tkhd)?.data, tkhd.count >= 24, uint32(tkhd, tkhd[0] == 1 ? 20 : 12) == trackID
            else { continue }
            guard let mdhd = trak.descendant([.mdia, .mdhd]), let scale = timescale(mdhd), movieScale > 0,
                let elst = trak.descendant([.edts, "elst"])?.data, elst.count >= 8
            else { return 0 }
            let long = elst[0] == 1
            let entry = long ? 20 : 12
            var empty = 0.0
            var i = 8
            for _ in 0..<min(Int(uint32(elst, 4)), 16) {
                guard i + entry <= elst.count else { break }
                let duration =
                    long ? UInt64(uint32(elst, i)) << 32 | UInt64(uint32(elst, i + 4)) : UInt64(uint32(elst, i))
                let time: Int64 =
                    long
                    ? Int64(bitPattern: UInt64(uint32(elst, i + 8)) << 32 | UInt64(uint32(elst, i + 12)))
                    : Int64(Int32(bitPattern: uint32(elst, i + 4)))
                if time >= 0 { return empty / movieScale - Double(time) / Double(scale) }
                empty += Double(duration)
                i += entry
            }
            return 0
        }
        return 0
    }

    /// What slates need of an audio sample entry they can carry silence on.
    typealias SilentEntry = (
        channels: Int, configuration: Int, sampleRate: Int, frameDuration: UInt32, silent: [UInt8]
    )

    /// The channel count, channel configuration and sample rate of an `stsd` body's first entry when it is `mp4a`
    /// with an AAC-LC AudioSpecificConfig in a channel configuration that has a silent frame (1 to 7), at the sample
    /// entry's rate; or HE-AAC with explicit signalling (object type 5, or 29 on a mono core) on such an AAC-LC core.
    ///
    /// HE-AAC's silent frame is the core's silent AAC-LC block with no SBR (or PS) extension payload: ISO/IEC 14496-3
    /// lets a frame carry no SBR data, and a decoder configured for SBR by the AudioSpecificConfig still runs its
    /// synthesis at the output rate, with nothing above the core's band (ffmpeg decodes it to silence at the output
    /// rate, and to stereo for PS). The frame lasts 2048 samples of the output rate, which the timescale must be.
    static func aacEntry(_ stsd: [UInt8]) -> SilentEntry? {
        // version/flags, entry_count, then the entry: size, 'mp4a', 28 bytes of AudioSampleEntry fields, boxes.
        guard stsd.count >= 8 + 36, stsd[12..<16].elementsEqual("mp4a".utf8) else { return nil }
        let size = Int(uint32(stsd, 8))
        guard size >= 36, 8 + size <= stsd.count else { return nil }
        let channels = Int(stsd[8 + 24]) << 8 | Int(stsd[8 + 25])
        let rate = Int(uint32(stsd, 8 + 32) >> 16)
        guard rate > 0, let asc = mp4aConfig(stsd), let silent = SlateBuilder.silentAAC[asc.configuration] else {
            return nil
        }
        switch asc.objectType {
        case 2 where asc.sampleRate == rate:
            return (channels, asc.configuration, rate, 1024, silent)
        case 5, 29:
            guard asc.coreObjectType == 2, asc.objectType == 5 || asc.configuration == 1, let output = asc.outputRate,
                let core = asc.sampleRate, output == rate, output == 2 * core
            else { return nil }
            return (channels, asc.configuration, rate, 2048, silent)
        default:
            return nil
        }
    }

    /// The channel count and sample rate of an `stsd` body's first entry when it is `ac-3` with a `dac3` (ETSI TS
    /// 102 366 F.4: fscod, bsid, bsmod, acmod, lfeon, bit_rate_code) of a layout other than dual mono, with the
    /// silent sync frame of that rate, bit rate and layout.
    static func ac3Entry(_ stsd: [UInt8]) -> SilentEntry? {
        guard stsd.count >= 8 + 36, stsd[12..<16].elementsEqual("ac-3".utf8) else { return nil }
        let size = Int(uint32(stsd, 8))
        guard size >= 36, 8 + size <= stsd.count,
            let boxes = try? BoxReader.parse(Array(stsd[(8 + 36)..<(8 + size)])),
            let dac3 = boxes.first(where: { $0.type == "dac3" })?.data, dac3.count >= 3
        else { return nil }
        let channels = Int(stsd[8 + 24]) << 8 | Int(stsd[8 + 25])
        let rate = Int(uint32(stsd, 8 + 32) >> 16)
        let fields = Int(dac3[0]) << 16 | Int(dac3[1]) << 8 | Int(dac3[2])
        // bit_rate_code is frmsizecod / 2: the smaller of the two 44.1 kHz frame sizes, as the content's samples'.
        let format = SilentAC3(
            sampleRateCode: fields >> 22 & 3, frameSizeCode: (fields >> 5 & 0x1F) * 2, bitStreamMode: fields >> 14 & 7,
            codingMode: fields >> 11 & 7, lfe: fields >> 10 & 1 == 1)
        guard let silent = format.frame, format.sampleRate == rate else { return nil }
        return (channels, 0, rate, 1536, silent)
    }

    /// The channel count and sample rate of an `stsd` body's first entry when it is `ec-3` with a `dec3` (ETSI TS
    /// 102 366 F.6) of one independent substream without dependent ones, at 48, 44.1 or 32 kHz and not dual mono,
    /// with the silent six-block frame of that rate and layout, as long as the `dec3`'s data rate makes 1536
    /// samples.
    static func eac3Entry(_ stsd: [UInt8]) -> SilentEntry? {
        guard stsd.count >= 8 + 36, stsd[12..<16].elementsEqual("ec-3".utf8) else { return nil }
        let size = Int(uint32(stsd, 8))
        guard size >= 36, 8 + size <= stsd.count,
            let boxes = try? BoxReader.parse(Array(stsd[(8 + 36)..<(8 + size)])),
            let dec3 = boxes.first(where: { $0.type == "dec3" })?.data, dec3.count >= 5,
            dec3[1] & 0x07 == 0, dec3[4] >> 1 & 0x0F == 0
        else { return nil }
        let channels = Int(stsd[8 + 24]) << 8 | Int(stsd[8 + 25])
        let rate = Int(uint32(stsd, 8 + 32) >> 16)
        let dataRate = Int(dec3[0]) << 5 | Int(dec3[1] >> 3)
        guard rate > 0 else { return nil }
        // kbit/s over 1536 samples, in 16-bit words; at least the smallest frame that holds 5.1's blocks.
        let words = min(2048, max(64, dataRate * 96_000 / rate))
        let format = SilentEAC3(
            sampleRateCode: Int(dec3[2] >> 6), frameBytes: words * 2, codingMode: Int(dec3[3] >> 1 & 7),
            lfe: dec3[3] & 1 == 1)
        guard let silent = format.frame, format.sampleRate == rate else { return nil }
        return (channels, 0, rate, 1536, silent)
    }

    /// The AudioSpecificConfig fields of an `stsd` body's first entry when it is `mp4a` with an `esds`.
    static func mp4aConfig(_ stsd: [UInt8]) -> AudioConfig? {
        guard stsd.count >= 8 + 36, stsd[12..<16].elementsEqual("mp4a".utf8) else { return nil }
        let size = Int(uint32(stsd, 8))
        guard size >= 36, 8 + size <= stsd.count,
            let boxes = try? BoxReader.parse(Array(stsd[(8 + 36)..<(8 + size)])),
            let esds = boxes.first(where: { $0.type == "esds" })?.data, let config = decoderSpecificInfo(esds)
        else { return nil }
        return audioSpecificConfig(config)
    }

    /// The DecoderSpecificInfo bytes of an `esds` body (after its version and flags), or nil.
    static func decoderSpecificInfo(_ esds: [UInt8]) -> [UInt8]? {
        var i = 4
        // Descriptor header: tag, then a size in up to four 7-bit bytes.
        func header() -> (tag: UInt8, size: Int)? {
            guard i < esds.count else { return nil }
            let tag = esds[i]
            i += 1
            var size = 0
            for _ in 0..<4 {
                guard i < esds.count else { return nil }
                let b = esds[i]
                i += 1
                size = size << 7 | Int(b & 0x7F)
                if b & 0x80 == 0 { return (tag, size) }
            }
            return nil
        }
        guard let es = header(), es.tag == 0x03, i + 3 <= esds.count else { return nil }
        let flags = esds[i + 2]
        i += 3
        if flags & 0x80 != 0 { i += 2 }
        if flags & 0x40 != 0 {
            guard i < esds.count else { return nil }
            i += 1 + Int(esds[i])
        }
        if flags & 0x20 != 0 { i += 2 }
        guard let decoder = header(), decoder.tag == 0x04 else { return nil }
        i += 13
        guard let info = header(), info.tag == 0x05, info.size > 0, i + info.size <= esds.count else { return nil }
        return Array(esds[i..<(i + info.size)])
    }

    /// Where a content segment's audio on `track` ends, in the track's timescale: its `tfdt` plus the durations of
    /// its samples (from the `trun`, else the `tfhd` default, else the `trex` default). Nil when the segment has no
    /// such fragment.
    public static func audioEnd(segment: [UInt8], track: AudioTrack) -> UInt64? {
        guard let boxes = (try? BoxReader.parsePrefix(segment))?.boxes else { return nil }
        let trexDefault = track.trex.data.count >= 20 ? uint32(track.trex.data, 12) : 0
        var end: UInt64?
        for moof in boxes where moof.type == .moof {
            for traf in moof.children where traf.type == .traf {
                guard let tfhd = traf.child(.tfhd)?.data, tfhd.count >= 8, uint32(tfhd, 4) == track.id,
                    let tfdt = traf.child(.tfdt)?.data, tfdt.count >= 8
                else { continue }
                var time: UInt64
                if tfdt[0] == 1 {
                    guard tfdt.count >= 12 else { return nil }
                    time = UInt64(uint32(tfdt, 4)) << 32 | UInt64(uint32(tfdt, 8))
                } else {
                    time = UInt64(uint32(tfdt, 4))
                }
                var fallback = trexDefault
                if let offset = defaultDurationOffset(tfhd) { fallback = uint32(tfhd, offset) }
                for trun in traf.children where trun.type == .trun {
                    time &+= trunDuration(trun.data, fallback: fallback)
                }
                end = max(end ?? 0, time)
            }
        }
        return end
    }

    /// The summed sample durations of a `trun` body.
    static func trunDuration(_ trun: [UInt8], fallback: UInt32) -> UInt64 {
        guard trun.count >= 8 else { return 0 }
        let flags = uint32(trun, 0) & 0xFF_FFFF
        let count = Int(uint32(trun, 4))
        var i = 8
        if flags & 0x01 != 0 { i += 4 }
        if flags & 0x04 != 0 { i += 4 }
        let fields = [0x100, 0x200, 0x400, 0x800].filter { flags & UInt32($0) != 0 }.count
        guard flags & 0x100 != 0 else { return UInt64(count) * UInt64(fallback) }
        var total: UInt64 = 0
        for _ in 0..<min(count, 100_000) {
            guard i + 4 * fields <= trun.count else { break }
            total += UInt64(uint32(trun, i))
            i += 4 * fields
        }
        return total
    }

    /// The init section of slates for `track` that also declares `audio` (the content's own audio track), so the
    /// slates' silent fragments play on it. Without `video` (audio-only content) it declares `audio` alone: the
    /// template's video track and its `trex` are left out.
    public func initSection(for track: Track?, audio: AudioTrack?, video: Bool = true) -> [UInt8] {
        let plain = initSection(for: track)
        guard let audio, let top = try? BoxReader.parse(plain) else { return plain }
        var writer = BoxWriter()
        for box in top {
            guard box.type == .moov, case .children(var children) = box.content else {
                writer.write(box)
                continue
            }
            if !video {
                children.removeAll { $0.type == .trak }
                if let mvex = children.firstIndex(where: { $0.type == .mvex }) {
                    children[mvex].content = .children(children[mvex].children.filter { $0.type != .trex })
                }
            }
            // After the last track, or where the template's was (before `mvex`).
            let at =
                children.lastIndex { $0.type == .trak }.map { $0 + 1 } ?? children.firstIndex { $0.type == .mvex }
                ?? children.count
            children.insert(audio.trak, at: at)
            if let mvex = children.firstIndex(where: { $0.type == .mvex }) {
                children[mvex].content = .children(children[mvex].children + [audio.trex])
            }
            writer.write(Box(type: .moov, content: .children(children)))
        }
        return writer.bytes
    }

    /// One fragment of `frames` silent frames on `audio`, the first decoded at `firstDecodeTime`, with `sequence`
    /// in its `mfhd`.
    public static func silentAudioFragment(
        audio: AudioTrack, firstDecodeTime: UInt64, frames: Int, sequence: UInt32
    ) -> [UInt8] {
        guard frames > 0 else { return [] }
        // The package's own media segment writer (no styp: the slate's video fragment carries it).
        let samples = [Sample](
            repeating: Sample(data: audio.silentFrame, duration: audio.frameDuration), count: frames)
        let fragment = TrackFragment(trackID: audio.id, baseMediaDecodeTime: firstDecodeTime, samples: samples)
        // Serialising fails only past 4 GiB of samples; a slate's silence is a few kilobytes.
        return (try? MediaSegment(sequenceNumber: sequence, tracks: [fragment]).serialized()) ?? []
    }
}
