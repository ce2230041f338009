import FileRange
import FragmentedMP4
import HTTPWire
import MPEGTS

// Touch the modules so their code is linked in.
let request = RangeRequest.parse("bytes=0-187")
print(request?.resolve(length: 188) ?? .full)
print(MediaHeaderBox.packedLanguage("eng"))
var parser = HTTPResponseHeadParser()
if case .response(let head, _) = parser.parse(Array("HTTP/1.1 200 OK\r\n\r\n".utf8)) { print(head.status) }
