// SCTE-35 output of tsinspect.
import MPEGTS

func describeSCTE35(_ record: SectionRecord) -> String {
    "PID \(hexPID(record.pid)) offset \(record.offset): splice_info_section of \(record.section.bytes.count) bytes"
}

func scte35JSON(_ record: SectionRecord) -> JSON {
    .object([("pid", .int(record.pid)), ("offset", .int(record.offset)), ("length", .int(record.section.bytes.count))])
}

func writeSCTE35(_ analyzer: TSAnalyzer, json: Bool, into out: inout OutputBuffer) {
    if json {
        let document = JSON.object([
            ("schemaVersion", .int(schemaVersion)), ("cues", .array(analyzer.scte35.map(scte35JSON))),
        ])
        out.append(document.render() + "\n")
    } else {
        for record in analyzer.scte35 { out.append(describeSCTE35(record) + "\n") }
    }
}
