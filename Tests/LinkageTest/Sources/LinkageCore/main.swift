import FileRange
import MPEGTS

// Touch the modules so their code is linked in.
let request = RangeRequest.parse("bytes=0-187")
print(request?.resolve(length: 188) ?? .full)
