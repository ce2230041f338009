import FileRange
import FragmentedMP4
import MPEGTS

// Touch the modules so their code is linked in.
let request = RangeRequest.parse("bytes=0-187")
print(request?.resolve(length: 188) ?? .full)
print(MediaHeaderBox.packedLanguage("eng"))
