// The --dump-json and --iptv-json documents (schema in Documentation/m3u8lint.md).
import CLIToolkit
import HLSPlaylist

enum Dump {
    static func hex(_ bytes: [UInt8]?) -> String? {
        guard let bytes else { return nil }
        let digits: [Character] = Array("0123456789ABCDEF")
        var s = "0x"
        for b in bytes {
            s.append(digits[Int(b >> 4)])
            s.append(digits[Int(b & 15)])
        }
        return s
    }

    static func key(_ k: Key?, _ j: inout JSONWriter) {
        guard let k else {
            j.null()
            return
        }
        j.object { j in
            j.key("method")
            j.string(k.method)
            j.key("uri")
            j.string(k.uri)
            j.key("iv")
            j.string(hex(k.iv))
            j.key("keyFormat")
            j.string(k.keyFormat)
            j.key("keyFormatVersions")
            j.string(k.keyFormatVersions)
        }
    }

    static func byteRange(_ r: ByteRange?, _ j: inout JSONWriter) {
        guard let r else {
            j.null()
            return
        }
        j.object { j in
            j.key("length")
            j.number(r.length)
            j.key("offset")
            j.number(r.offset)
        }
    }

    static func media(_ m: MediaPlaylist) -> [UInt8] {
        var j = JSONWriter()
        j.object { j in
            j.key("kind")
            j.string("media")
            j.key("version")
            j.number(m.version)
            j.key("targetDuration")
            j.number(m.targetDuration)
            j.key("mediaSequence")
            j.number(m.mediaSequence)
            j.key("discontinuitySequence")
            j.number(m.discontinuitySequence)
            j.key("endList")
            j.bool(m.endList)
            j.key("playlistType")
            j.string(m.playlistType)
            j.key("iFramesOnly")
            j.bool(m.iFramesOnly)
            j.key("partCount")
            j.number(m.partCount)
            j.key("skip")
            if let skipped = m.skippedSegments {
                j.object { j in
                    j.key("skippedSegments")
                    j.number(skipped)
                    j.key("recentlyRemovedDateRanges")
                    j.array { j in
                        for id in m.recentlyRemovedDateRanges {
                            j.element()
                            j.string(id)
                        }
                    }
                }
            } else {
                j.null()
            }
            j.key("dateRanges")
            j.array { j in
                for d in m.dateRanges {
                    j.element()
                    j.object { j in
                        j.key("id")
                        j.string(d.id)
                        j.key("class")
                        j.string(d.classAttribute)
                        j.key("startDate")
                        j.string(d.startDate?.text)
                        j.key("endDate")
                        j.string(d.endDate?.text)
                        j.key("duration")
                        j.number(d.duration)
                        j.key("plannedDuration")
                        j.number(d.plannedDuration)
                        j.key("endOnNext")
                        j.bool(d.endOnNext)
                        j.key("scte35Out")
                        j.string(hex(d.scte35Out))
                        j.key("scte35In")
                        j.string(hex(d.scte35In))
                        j.key("scte35Cmd")
                        j.string(hex(d.scte35Command))
                    }
                }
            }
            j.key("segments")
            j.array { j in
                for s in m.segments {
                    j.element()
                    j.object { j in
                        j.key("uri")
                        j.string(s.uri)
                        j.key("duration")
                        j.number(s.duration)
                        j.key("title")
                        j.string(s.title)
                        j.key("byteRange")
                        byteRange(s.byteRange, &j)
                        j.key("key")
                        key(s.keys.first { $0.keyFormat == "identity" } ?? s.keys.first, &j)
                        j.key("discontinuity")
                        j.bool(s.discontinuity)
                        j.key("discontinuitySequence")
                        j.number(s.discontinuitySequence)
                        j.key("gap")
                        j.bool(s.gap)
                        j.key("map")
                        if let map = s.map {
                            j.object { j in
                                j.key("uri")
                                j.string(map.uri)
                                j.key("byteRange")
                                byteRange(map.byteRange, &j)
                            }
                        } else {
                            j.null()
                        }
                        j.key("programDateTime")
                        j.string(s.hasOwnProgramDateTime ? s.programDateTime?.text : nil)
                        j.key("derivedProgramDateTime")
                        j.string(s.programDateTime?.text)
                        j.key("bitrate")
                        j.number(s.bitrate)
                        j.key("mediaSequence")
                        j.number(s.mediaSequence)
                        j.key("partCount")
                        j.number(s.parts.count)
                    }
                }
            }
        }
        j.raw("\n")
        return j.out
    }

    static func variant(_ v: VariantStream, _ j: inout JSONWriter) {
        j.object { j in
            j.key("bandwidth")
            j.number(v.bandwidth)
            j.key("averageBandwidth")
            j.number(v.averageBandwidth)
            j.key("codecs")
            j.string(v.codecs)
            j.key("resolution")
            j.string(v.resolution?.description)
            j.key("frameRate")
            j.number(v.frameRate)
            j.key("audio")
            j.string(v.audio)
            j.key("video")
            j.string(v.video)
            j.key("subtitles")
            j.string(v.subtitles)
            j.key("closedCaptions")
            j.string(v.closedCaptions ?? v.attributes["CLOSED-CAPTIONS"]?.enumeratedString)
            j.key("uri")
            j.string(v.uri)
        }
    }

    static func multivariant(_ m: MultivariantPlaylist) -> [UInt8] {
        var j = JSONWriter()
        j.object { j in
            j.key("kind")
            j.string("multivariant")
            j.key("version")
            j.number(m.version)
            j.key("independentSegments")
            j.bool(m.independentSegments)
            j.key("variants")
            j.array { j in
                for v in m.variants {
                    j.element()
                    variant(v, &j)
                }
            }
            j.key("iFrameVariants")
            j.array { j in
                for v in m.iFrameVariants {
                    j.element()
                    variant(v, &j)
                }
            }
            j.key("renditions")
            j.array { j in
                for r in m.renditions {
                    j.element()
                    j.object { j in
                        j.key("type")
                        j.string(r.type)
                        j.key("groupId")
                        j.string(r.groupID)
                        j.key("name")
                        j.string(r.name)
                        j.key("language")
                        j.string(r.language)
                        j.key("default")
                        j.bool(r.isDefault)
                        j.key("autoselect")
                        j.bool(r.autoselect)
                        j.key("uri")
                        j.string(r.uri)
                    }
                }
            }
            j.key("sessionData")
            j.array { j in
                for d in m.sessionData {
                    j.element()
                    j.object { j in
                        j.key("dataId")
                        j.string(d.dataID)
                        j.key("value")
                        j.string(d.value)
                        j.key("uri")
                        j.string(d.uri)
                        j.key("language")
                        j.string(d.language)
                    }
                }
            }
            j.key("sessionKeys")
            j.array { j in
                for k in m.sessionKeys {
                    j.element()
                    key(k, &j)
                }
            }
            j.key("contentSteering")
            if let server = m.contentSteeringServerURI {
                j.object { j in
                    j.key("serverUri")
                    j.string(server)
                    j.key("pathwayId")
                    j.string(m.contentSteeringPathwayID)
                }
            } else {
                j.null()
            }
        }
        j.raw("\n")
        return j.out
    }

    static func pairs(_ p: [(name: String, value: String)], _ j: inout JSONWriter) {
        j.object { j in
            for (k, v) in p {
                j.key(k)
                j.string(v)
            }
        }
    }

    static func channel(_ c: IPTVChannel, _ j: inout JSONWriter) {
        j.object { j in
            j.key("name")
            j.string(c.name)
            j.key("nameSource")
            j.string(c.nameSource.rawValue)
            j.key("url")
            j.string(c.url)
            j.key("duration")
            j.number(c.duration)
            j.key("attributes")
            pairs(c.attributes, &j)
            j.key("group")
            j.string(c.group)
            j.key("userAgent")
            j.string(c.userAgent)
            j.key("referrer")
            j.string(c.referrer)
            j.key("httpHeaders")
            pairs(c.httpHeaders, &j)
            j.key("kodiProps")
            pairs(c.kodiProps, &j)
            j.key("vlcOpts")
            pairs(c.vlcOpts, &j)
        }
    }
}
