/// What RFC 8216bis says about one attribute of one tag.
struct AttributeSpec: Sendable {
    var type: AttributeType
    var required: Bool = false
    var values: [String]? = nil
}

/// The attribute schema of every attribute-list tag of RFC 8216bis.
enum Schema {
    private static func q(_ required: Bool = false) -> AttributeSpec {
        AttributeSpec(type: .quotedString, required: required)
    }
    private static func i(_ required: Bool = false) -> AttributeSpec {
        AttributeSpec(type: .decimalInteger, required: required)
    }
    private static func f(_ required: Bool = false) -> AttributeSpec {
        AttributeSpec(type: .decimalFloat, required: required)
    }
    private static func e(_ values: [String], _ required: Bool = false) -> AttributeSpec {
        AttributeSpec(type: .enumeratedString, required: required, values: values)
    }
    private static let yesNo = ["YES", "NO"]
    private static let keyAttributes: [String: AttributeSpec] = [
        // RFC 8216bis 4.4.4.4 (draft 22): NONE, AES-128 and SAMPLE-AES, and the optional SAMPLE-AES-CTR and AES-256-GCM.
        "METHOD": e(["NONE", "AES-128", "SAMPLE-AES", "SAMPLE-AES-CTR", "AES-256-GCM"], true), "URI": q(),
        "IV": AttributeSpec(type: .hexadecimalSequence), "KEYFORMAT": q(), "KEYFORMATVERSIONS": q(),
    ]
    private static let variantCommon: [String: AttributeSpec] = [
        "BANDWIDTH": i(true), "AVERAGE-BANDWIDTH": i(), "SCORE": f(), "CODECS": q(), "SUPPLEMENTAL-CODECS": q(),
        "RESOLUTION": AttributeSpec(type: .decimalResolution), "HDCP-LEVEL": e(["TYPE-0", "TYPE-1", "NONE"]),
        "ALLOWED-CPC": q(), "VIDEO-RANGE": e(["SDR", "HLG", "PQ"]), "REQ-VIDEO-LAYOUT": q(),
        "STABLE-VARIANT-ID": q(), "VIDEO": q(), "PATHWAY-ID": q(), "PROGRAM-ID": i(),
    ]

    static let attributes: [KnownTag: [String: AttributeSpec]] = [
        .start: ["TIME-OFFSET": AttributeSpec(type: .signedDecimalFloat, required: true), "PRECISE": e(yesNo)],
        .define: ["NAME": q(), "VALUE": q(), "IMPORT": q(), "QUERYPARAM": q()],
        .partInf: ["PART-TARGET": f(true)],
        .serverControl: [
            "CAN-SKIP-UNTIL": f(), "CAN-SKIP-DATERANGES": e(yesNo), "HOLD-BACK": f(), "PART-HOLD-BACK": f(),
            "CAN-BLOCK-RELOAD": e(yesNo),
        ],
        .key: keyAttributes,
        .sessionKey: keyAttributes,
        .map: ["URI": q(true), "BYTERANGE": q()],
        .part: ["URI": q(true), "DURATION": f(true), "INDEPENDENT": e(yesNo), "BYTERANGE": q(), "GAP": e(yesNo)],
        .dateRange: [
            "ID": q(true), "CLASS": q(), "START-DATE": q(true), "CUE": q(), "END-DATE": q(), "DURATION": f(),
            "PLANNED-DURATION": f(), "SCTE35-CMD": AttributeSpec(type: .hexadecimalSequence),
            "SCTE35-OUT": AttributeSpec(type: .hexadecimalSequence),
            "SCTE35-IN": AttributeSpec(type: .hexadecimalSequence), "END-ON-NEXT": e(["YES"]),
        ],
        .skip: ["SKIPPED-SEGMENTS": i(true), "RECENTLY-REMOVED-DATERANGES": q()],
        .preloadHint: [
            "TYPE": e(["PART", "MAP"], true), "URI": q(true), "BYTERANGE-START": i(), "BYTERANGE-LENGTH": i(),
        ],
        .renditionReport: ["URI": q(true), "LAST-MSN": i(), "LAST-PART": i()],
        .media: [
            "TYPE": e(["AUDIO", "VIDEO", "SUBTITLES", "CLOSED-CAPTIONS"], true), "URI": q(), "GROUP-ID": q(true),
            "LANGUAGE": q(), "ASSOC-LANGUAGE": q(), "NAME": q(true), "STABLE-RENDITION-ID": q(),
            "DEFAULT": e(yesNo), "AUTOSELECT": e(yesNo), "FORCED": e(yesNo), "INSTREAM-ID": q(),
            "BIT-DEPTH": i(), "SAMPLE-RATE": i(), "CHARACTERISTICS": q(), "CHANNELS": q(),
        ],
        .streamInf: variantCommon.merging(
            ["FRAME-RATE": f(), "AUDIO": q(), "SUBTITLES": q(), "CLOSED-CAPTIONS": q()], uniquingKeysWith: { a, _ in a }
        ),
        .iFrameStreamInf: variantCommon.merging(["URI": q(true)], uniquingKeysWith: { a, _ in a }),
        .sessionData: ["DATA-ID": q(true), "VALUE": q(), "URI": q(), "FORMAT": e(["JSON", "RAW"]), "LANGUAGE": q()],
        .contentSteering: ["SERVER-URI": q(true), "PATHWAY-ID": q()],
    ]

    /// The type RFC 8216bis gives `name` in `tag`, when it gives one.
    static func type(of name: String, in tag: KnownTag) -> AttributeType? { attributes[tag]?[name]?.type }
}

extension Tag {
    /// The value of attribute `name` read with the type RFC 8216bis declares for it in this tag, or nil when the
    /// attribute is absent, unknown to the schema, or not of its declared type.
    public func typedAttribute(_ name: String) -> AttributeValue? {
        guard let known, let a = attributes?[name], let type = Schema.type(of: name, in: known) else { return nil }
        return a.value(as: type)
    }
}
