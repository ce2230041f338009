#!/usr/bin/env bash
# AdStrippingProxy benchmark, against nginx on loopback in the same run:
#  1. playlist polls of a 1,000-segment live window (with CUE-OUT breaks), fetched directly and through
#     `tsplayer proxy` (which fetches it, filters it, rewrites every URI); the median difference is the proxy's added
#     time per poll (its work plus one extra loopback HTTP exchange). Target: under 1 ms.
#     a. a window that moves one segment on every request (a small python origin): every poll is new (answered
#        incrementally, or filtered and rewritten in full where a break comes in and at least every 10 s);
#     b. the same window on every request (nginx, a static file): the proxy answers a repeated poll with its
#        previous output.
#     c. in process, no network (Scripts/bench/ProxyPollBench, release): what the proxy does per poll of the
#        moving window (parse, media view, ad detection, slates, route mapping, output bytes), median.
#     The proxy answers a poll whose window only moved on (plain content segments added at the end) from its previous
#     output (AdStrippingProxy.Options.incrementalPolls); the in-process figure of the same polls filtered in full is
#     printed beside it; then the same on a realistic window (a date on every segment, relative URIs with dot
#     segments and queries).
#  2. segment relay: the same VOD segments downloaded by curl directly from nginx, through the proxy's stream mode,
#     and by a bare URLSession client (delegate, bodies discarded) in the same run: the proxy fetches plain http
#     over its own sockets and https with URLSession, whose figure is the ceiling of an https relay on Linux.
#     Target: at least 0.9x the direct throughput. The CPU seconds per GB of each path (nginx, curl and the proxy,
#     read from /proc and time(1)) show how much of the machine each path needs. nginx as a reverse proxy in front of
#     the same origin is the reference relay, in the same run. Then the first six segments again
#     from an nginx location limited to 80 MB/s per connection (an origin that is not on the same machine), directly
#     and through the proxy.
#
# Usage: Scripts/bench/proxy.sh [--polls N]   (default 300)
# Needs: swift, ffmpeg, nginx, curl, python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
source Scripts/bench/nginx-origin.sh

polls=300
[[ "${1:-}" == "--polls" ]] && polls="$2"
work="$(mktemp -d /tmp/proxy-bench.XXXXXX)"
port=$((20000 + RANDOM % 30000))
relay_port=$((port + 1))
nginx_pid=""
proxy_pid=""
moving_pid=""
cleanup() {
    [[ -n "$proxy_pid" ]] && kill "$proxy_pid" 2>/dev/null || true
    [[ -n "$moving_pid" ]] && kill "$moving_pid" 2>/dev/null || true
    [[ -n "$nginx_pid" ]] && kill "$nginx_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

command -v nginx >/dev/null || PATH="$PATH:/usr/sbin"
for tool in ffmpeg nginx curl python3 swiftc; do
    command -v "$tool" >/dev/null || { echo "proxy.sh: $tool is missing (Scripts/deps.sh --bench)" >&2; exit 1; }
done

ours="${TSPLAYER:-}"
if [[ -z "$ours" ]]; then
    echo "building tsplayer (release)..." >&2
    swift build -c release --scratch-path /tmp/build-bench-proxy --product tsplayer >&2
    ours=/tmp/build-bench-proxy/release/tsplayer
fi

pollbench="${POLLBENCH:-}"
if [[ -z "$pollbench" ]]; then
    echo "building the in-process poll benchmark (release)..." >&2
    swift build -c release --package-path Scripts/bench/ProxyPollBench --scratch-path /tmp/build-bench-proxy-poll >&2
    pollbench=/tmp/build-bench-proxy-poll/release/proxy-poll-bench
fi
"$pollbench" --polls 1000 --window "${BENCH_WINDOW:-1000}" > "$work/inprocess.txt"
inprocess_ms=$(awk '/as served/ { print $5 }' "$work/inprocess.txt")
inprocess_full_ms=$(awk '/whole poll/ { print $5 }' "$work/inprocess.txt")
inprocess_split=$(sed -n 's/.*(\([0-9]* incremental, [0-9]* in full\).*/\1/p' "$work/inprocess.txt")
inprocess_repeat_ms=$(awk '/repeated window/ { print $3 }' "$work/inprocess.txt")
# The same on a realistic window: a date on every segment, relative URIs with dot segments and queries.
"$pollbench" --polls 1000 --window "${BENCH_WINDOW:-1000}" --shape realistic > "$work/realistic.txt"
realistic_ms=$(awk '/as served/ { print $5 }' "$work/realistic.txt")
realistic_full_ms=$(awk '/whole poll/ { print $5 }' "$work/realistic.txt")
realistic_split=$(sed -n 's/.*(\([0-9]* incremental, [0-9]* in full\).*/\1/p' "$work/realistic.txt")

echo "building the bare URLSession client..." >&2
cat > "$work/urlget.swift" <<'SWIFT'
// Downloads the URLs given one per line on stdin, one after another, with a URLSession data delegate that only
// counts the bytes; prints the best time of N rounds (the first argument) in seconds.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
final class Counter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    var bytes = 0
    let done = DispatchSemaphore(value: 0)
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) { bytes += data.count }
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error { FileHandle.standardError.write(Data("urlget: \(error)\n".utf8)) }
        done.signal()
    }
}
var urls: [URL] = []
while let line = readLine() { if let url = URL(string: line) { urls.append(url) } }
let counter = Counter()
let session = URLSession(configuration: .ephemeral, delegate: counter, delegateQueue: nil)
var best = Double.infinity
for _ in 0..<(Int(CommandLine.arguments.dropFirst().first ?? "3") ?? 3) {
    let start = Date()
    for url in urls {
        session.dataTask(with: url).resume()
        counter.done.wait()
    }
    best = min(best, Date().timeIntervalSince(start))
}
print(best)
SWIFT
swiftc -O "$work/urlget.swift" -o "$work/urlget" >&2

echo "making the media..." >&2
mkdir -p "$work/www/vod" "$work/tmp"
ffmpeg -loglevel error -f lavfi -i "testsrc2=size=1280x720:rate=25" -t 40 -vf "noise=alls=30:allf=t" \
    -c:v libx264 -preset ultrafast -crf 10 -g 50 -f hls -hls_time 2 -hls_playlist_type vod \
    -hls_segment_filename "$work/www/vod/s%02d.ts" "$work/www/vod/index.m3u8"
bytes=$(cat "$work"/www/vod/*.ts | wc -c)
BENCH_WINDOW="${BENCH_WINDOW:-1000}" python3 - "$work/www/live.m3u8" <<'PY'
import sys
lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:2", "#EXT-X-MEDIA-SEQUENCE:50000"]
for i in range(int(__import__("os").environ.get("BENCH_WINDOW", "1000"))):
    m = 50000 + i
    if i in (300, 700): lines.append("#EXT-X-CUE-OUT:30.000")
    if i in (315, 715): lines.append("#EXT-X-CUE-IN")
    lines += ["#EXTINF:2.000,", "https://cdn%d.example.com/live/1080p/segment_%d.ts?session=abcdef0123456789" % (m % 3, m)]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY

# The moving window: every request for /live.m3u8 gets the window one segment further on.
cat > "$work/moving.py" <<'PY'
import http.server, socketserver, sys, threading
entries = []
for m in range(50000, 50000 + 8000):
    e = ""
    if m % 400 == 0: e += "#EXT-X-CUE-OUT:30.000\n"
    if m % 400 == 15: e += "#EXT-X-CUE-IN\n"
    e += "#EXTINF:2.000,\nhttps://cdn%d.example.com/live/1080p/segment_%d.ts?session=abcdef0123456789\n" % (m % 3, m)
    entries.append(e)
lock = threading.Lock()
count = [0]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        with lock:
            n = count[0] % 7000
            count[0] += 1
        body = ("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:%d\n" % (50000 + n)
                + "".join(entries[n:n + 1000])).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.apple.mpegurl")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY

chmod -R a+rX "$work"  # nginx workers run as another user
# The same VOD at /slow/, each connection limited to 80 MB/s (an origin farther away than loopback). The reference
# relay: nginx as a reverse proxy in front of the same origin (kept-alive upstream connections, 1 MiB of buffers per
# request), the same URLs.
nginx_origin_config "$work" "$port" "    location /slow/ { alias $work/www/vod/; limit_rate 80m; }" "$(cat <<CONF
  upstream origin { server 127.0.0.1:$port; keepalive 8; }
  server {
    listen 127.0.0.1:$relay_port;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffer_size 256k;
      proxy_buffers 4 256k;
      proxy_busy_buffers_size 512k;
      proxy_max_temp_file_size 0;
    }
  }
CONF
)" >"$work/nginx.conf"
nginx_origin_start "$work" "http://127.0.0.1:$port/live.m3u8"

# start_proxy URL: runs `tsplayer proxy URL`; sets $proxy_pid and $local (the URL it printed).
start_proxy() {
    if [[ -n "$proxy_pid" ]]; then kill "$proxy_pid" 2>/dev/null || true; wait "$proxy_pid" 2>/dev/null || true; fi
    rm -f "$work/proxy.out"
    "$ours" proxy "$1" --allow-private > "$work/proxy.out" 2> "$work/proxy.err" &
    proxy_pid=$!
    for _ in $(seq 100); do [[ -s "$work/proxy.out" ]] && break; sleep 0.05; done
    local="$(head -1 "$work/proxy.out")"
}

# Polls: one curl process per series (connections reused), time_total per request.
poll_times() {
    local url="$1" args=()
    for _ in $(seq "$polls"); do args+=(-o /dev/null -w '%{time_total}\n' "$url"); done
    curl -s "${args[@]}"
}
median_ms() { python3 -c "import sys,statistics; v=[float(x)*1000 for x in sys.stdin.read().split()]; print(f'{statistics.median(v):.3f}')"; }

python3 "$work/moving.py" > "$work/moving.port" &
moving_pid=$!
for _ in $(seq 100); do [[ -s "$work/moving.port" ]] && break; sleep 0.05; done
moving="http://127.0.0.1:$(head -1 "$work/moving.port")/live.m3u8"
start_proxy "$moving"
curl -s -o /dev/null "$local"
moving_direct_ms=$(poll_times "$moving" | median_ms)
moving_proxied_ms=$(poll_times "$local" | median_ms)
moving_added_ms=$(python3 -c "print(f'{$moving_proxied_ms - $moving_direct_ms:.3f}')")

start_proxy "http://127.0.0.1:$port/live.m3u8"
live_local="$local"
curl -s -o "$work/filtered.m3u8" "$live_local"
grep -q '^#EXTM3U' "$work/filtered.m3u8" || { echo "proxy.sh: the proxy answered:" >&2; cat "$work/filtered.m3u8" >&2; exit 1; }
slates=$(grep -c '/slate/' "$work/filtered.m3u8" || true)
direct_ms=$(poll_times "http://127.0.0.1:$port/live.m3u8" | median_ms)
proxied_ms=$(poll_times "$live_local" | median_ms)
added_ms=$(python3 -c "print(f'{$proxied_ms - $direct_ms:.3f}')")

# Relay: all VOD segments, in one curl process each way, three rounds, best time.
start_proxy "http://127.0.0.1:$port/vod/index.m3u8"
vod_local="$local"
host="${vod_local#http://}"; host="http://${host%%/*}"
curl -fs "$vod_local" | grep -v '^#' | sed "s#^#$host#" > "$work/proxied.txt"
ls "$work"/www/vod/*.ts | sed "s#^$work/www#http://127.0.0.1:$port#" > "$work/direct.txt"
# fetch_all LIST CPUFILE: fetches every URL in one curl; prints the wall time and appends curl's CPU seconds.
fetch_all() {
    local args=()
    while read -r u; do args+=(-o /dev/null "$u"); done < "$1"
    local s e
    s=$(date +%s.%N); /usr/bin/time -f "%U %S" -a -o "$2" curl -fs "${args[@]}"; e=$(date +%s.%N)
    python3 -c "print($e - $s)"
}
best() { sort -g | head -1; }
# CPU seconds (user + system) that processes have used so far.
cpu_of() { python3 -c "import os,sys; t=os.sysconf('SC_CLK_TCK'); print(sum(sum(map(int, open(f'/proc/{p}/stat').read().rsplit(')',1)[1].split()[11:13])) for p in sys.argv[1:] if os.path.exists(f'/proc/{p}/stat'))/t)" "$@"; }
sum_file() { python3 -c "import sys; print(sum(float(x) for x in open(sys.argv[1]).read().split()))" "$1"; }
workers=$(pgrep -P "$nginx_pid" | tr '\n' ' ')
nginx_before=$(cpu_of $workers)
direct_s=$( (for _ in 1 2 3; do fetch_all "$work/direct.txt" "$work/curl-direct.cpu"; done) | best)
nginx_direct=$(python3 -c "print($(cpu_of $workers) - $nginx_before)")
nginx_before=$(cpu_of $workers); proxy_before=$(cpu_of "$proxy_pid")
proxied_s=$( (for _ in 1 2 3; do fetch_all "$work/proxied.txt" "$work/curl-proxied.cpu"; done) | best)
nginx_proxied=$(python3 -c "print($(cpu_of $workers) - $nginx_before)")
proxy_cpu=$(python3 -c "print($(cpu_of "$proxy_pid") - $proxy_before)")
curl_direct=$(sum_file "$work/curl-direct.cpu"); curl_proxied=$(sum_file "$work/curl-proxied.cpu")
urlsession_s=$("$work/urlget" 3 < "$work/direct.txt")
sed "s#127.0.0.1:$port/#127.0.0.1:$relay_port/#" "$work/direct.txt" > "$work/nginx-relay.txt"
nginx_relay_s=$( (for _ in 1 2 3; do fetch_all "$work/nginx-relay.txt" /dev/null; done) | best)

# Relay from the throttled origin: the first 6 segments, directly and through a proxy in front of /slow/.
start_proxy "http://127.0.0.1:$port/slow/index.m3u8"
slow_local="$local"
slow_host="${slow_local#http://}"; slow_host="http://${slow_host%%/*}"
curl -fs "$slow_local" | grep -v '^#' | head -6 | sed "s#^#$slow_host#" > "$work/slow-proxied.txt"
ls "$work"/www/vod/*.ts | head -6 | sed "s#^$work/www/vod#http://127.0.0.1:$port/slow#" > "$work/slow-direct.txt"
slow_bytes=$(ls "$work"/www/vod/*.ts | head -6 | xargs cat | wc -c)
slow_direct_s=$( (for _ in 1 2; do fetch_all "$work/slow-direct.txt" /dev/null; done) | best)
slow_proxied_s=$( (for _ in 1 2; do fetch_all "$work/slow-proxied.txt" /dev/null; done) | best)

python3 - "$direct_ms" "$proxied_ms" "$added_ms" "$slates" "$bytes" "$direct_s" "$proxied_s" "$polls" \
    "$moving_direct_ms" "$moving_proxied_ms" "$moving_added_ms" "$urlsession_s" "$inprocess_ms" \
    "$inprocess_repeat_ms" "$nginx_direct" "$curl_direct" "$nginx_proxied" "$proxy_cpu" "$curl_proxied" \
    "$inprocess_full_ms" "$inprocess_split" "$slow_bytes" "$slow_direct_s" "$slow_proxied_s" "$nginx_relay_s" \
    "$realistic_ms" "$realistic_full_ms" "$realistic_split" <<'PY'
import sys
d, p, a, slates, size, ds, ps, polls, md, mp, ma, us, ip, ir, nd, cd, np_, pc, cp, ifull, isplit, sb, sds, sps, nrs, \
    rm, rfull, rsplit = sys.argv[1:]
size = int(size)
print(f"playlist poll, 1,000-segment live window ({polls} polls each, median):")
print(f"  moving window (one new segment on every poll):")
print(f"    python origin direct  {float(md):8.3f} ms")
print(f"    through tsplayer      {float(mp):8.3f} ms")
print(f"    added per poll        {float(ma):8.3f} ms   (target < 1 ms)")
print(f"    in-process poll work  {float(ip):8.3f} ms   (no network; ProxyPollBench, 1,000 polls: {isplit})")
print(f"    the same, every poll filtered in full {float(ifull):.3f} ms (incremental polls off)")
print(f"  realistic moving window (a date on every segment; relative URIs with dot segments and queries):")
print(f"    in-process poll work  {float(rm):8.3f} ms   (ProxyPollBench --shape realistic, 1,000 polls: {rsplit})")
print(f"    the same, every poll filtered in full {float(rfull):.3f} ms (incremental polls off)")
print(f"  repeated window (nginx static file; {slates} slates in the output):")
print(f"    nginx direct          {float(d):8.3f} ms")
print(f"    through tsplayer      {float(p):8.3f} ms")
print(f"    added per poll        {float(a):8.3f} ms   (target < 1 ms)")
print(f"    in-process poll work  {float(ir):8.3f} ms   (no network; answered from the previous output)")
print(f"segment relay, {size/1e6:.1f} MB in 20 segments (best of 3):")
dt, pt, ut = size / float(ds) / 1e6, size / float(ps) / 1e6, size / float(us) / 1e6
print(f"  nginx direct (curl)     {dt:8.1f} MB/s")
print(f"  through tsplayer        {pt:8.1f} MB/s   ratio {pt/dt:5.2f}x   (target >= 0.9x)")
nt = size / float(nrs) / 1e6
print(f"  through nginx proxy_pass {nt:7.1f} MB/s   ratio {nt/dt:5.2f}x   (the reference relay)")
print(f"  tsplayer / nginx relay  {pt/nt:8.2f}x")
print(f"  bare URLSession         {ut:8.1f} MB/s   ratio {ut/dt:5.2f}x   (the ceiling of a URLSession relay)")
print(f"  tsplayer / URLSession   {pt/ut:8.2f}x")
gb = 3 * size / 1e9
direct_cpu, relay_cpu = (float(nd) + float(cd)) / gb, (float(np_) + float(pc) + float(cp)) / gb
print(f"  CPU seconds per GB (3 rounds; 2 cores here): direct {direct_cpu:.3f} (nginx {float(nd)/gb:.3f}, "
      f"curl {float(cd)/gb:.3f}); relayed {relay_cpu:.3f} (nginx {float(np_)/gb:.3f}, tsplayer {float(pc)/gb:.3f}, "
      f"curl {float(cp)/gb:.3f})")
sdt, spt = int(sb) / float(sds) / 1e6, int(sb) / float(sps) / 1e6
print(f"segment relay from an origin limited to 80 MB/s per connection, {int(sb)/1e6:.1f} MB in 6 segments (best of 2):")
print(f"  nginx direct (curl)     {sdt:8.1f} MB/s")
print(f"  through tsplayer        {spt:8.1f} MB/s   ratio {spt/sdt:5.2f}x   (target >= 0.9x)")
cores = (float(nd) + float(cd)) / (3 * float(ds))
print(f"  the direct download kept about {cores:.1f} cores busy; where it is CPU-bound, a relay at today's CPU per "
      f"byte cannot pass {direct_cpu/relay_cpu:.2f}x its rate")
PY
