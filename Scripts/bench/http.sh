#!/usr/bin/env bash
# LoopbackHTTP against nginx (2 workers, sendfile) on loopback, serving the same files to the same wrk, in one run:
#   whole-file GETs of a 4 MB .ts, random 1 MiB ranges in a 1 GiB file, random 188-byte ranges,
#   each with 1, 16 and 256 connections. Prints requests/s and MB/s for both and the ratio ours / nginx
#   (target >= 0.8 in every cell), wrk errors, and the server's RSS before and after (memory flat).
# wrk runs with --timeout 10s: with 256 connections a 4 MB response can legitimately take over wrk's 2 s default.
# Each cell runs REPS times alternating ours / nginx (so that load from elsewhere hits both alike) and reports the
# medians.
# Usage: Scripts/bench/http.sh [seconds-per-run] [reps]   (default 3 s, 3 reps; needs wrk and nginx:
#        Scripts/deps.sh --bench). OURS_BIN=<loopback-http-testserver> runs that binary instead of building this
#        checkout's (to compare two branches' servers in one session).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-3}
reps=${2:-3}
work=.bench/http
mkdir -p "$work/www" "$work/nginx"
root=$(cd "$work/www" && pwd)

command -v wrk >/dev/null || { echo "wrk is missing: Scripts/deps.sh --bench" >&2; exit 1; }
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $nginx_bin ]] || { echo "nginx is missing: Scripts/deps.sh --bench" >&2; exit 1; }

[[ -f $root/4mb.ts && $(stat -c %s "$root/4mb.ts") == 4000000 ]] || head -c 4000000 /dev/urandom > "$root/4mb.ts"
[[ -f $root/1gib.ts && $(stat -c %s "$root/1gib.ts") == 1073741824 ]] || head -c 1073741824 /dev/urandom > "$root/1gib.ts"
cat "$root/4mb.ts" "$root/1gib.ts" > /dev/null  # page cache

if [[ -n ${OURS_BIN:-} ]]; then
    ours_bin=$OURS_BIN  # a server built elsewhere (another branch's, to compare in the same session)
else
    Scripts/swift-build.sh -c release --package-path Packages/LoopbackHTTP --scratch-path "$work/build" \
        --product loopback-http-testserver >/dev/null
    ours_bin="$(swift build -c release --package-path Packages/LoopbackHTTP --scratch-path "$work/build" --show-bin-path)/loopback-http-testserver"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# nginx: 2 workers, sendfile, loopback only, temp config.
nginx_port=$(free_port)
nginx_dir=$(cd "$work/nginx" && pwd)
cat > "$nginx_dir/nginx.conf" <<CONF
worker_processes 2;
pid $nginx_dir/nginx.pid;
error_log $nginx_dir/error.log;
daemon on;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 10000000;
    keepalive_timeout 60s;
    types { video/mp2t ts; }
    client_body_temp_path $nginx_dir/body;
    proxy_temp_path $nginx_dir/proxy;
    fastcgi_temp_path $nginx_dir/fastcgi;
    uwsgi_temp_path $nginx_dir/uwsgi;
    scgi_temp_path $nginx_dir/scgi;
    server { listen 127.0.0.1:$nginx_port; root $root; }
}
CONF
"$nginx_bin" -c "$nginx_dir/nginx.conf" -p "$nginx_dir/"

# Ours: 2 event-loop threads, the same root.
# Its stdin is the coproc's pipe, which this script holds open: the server runs until the script ends.
coproc OURS { exec "$ours_bin" --root "$root" --threads 2; }
read -r line <&"${OURS[0]}"
ours_port=${line#PORT }
read -r _ <&"${OURS[0]}"
ours_pid=$OURS_PID

cleanup() {
    [[ -f $nginx_dir/nginx.pid ]] && kill "$(cat "$nginx_dir/nginx.pid")" 2>/dev/null || true
    [[ -n ${ours_pid:-} ]] && kill "$ours_pid" 2>/dev/null || true
}
trap cleanup EXIT
sleep 0.5

# wrk scripts: random ranges of a given length in a file of a given size.
cat > "$work/range.lua" <<'LUA'
local path, size, len = "", 0, 0
function init(args) path = args[1]; size = tonumber(args[2]); len = tonumber(args[3]); math.randomseed(os.time() + math.random(1000)) end
function request()
    local first = math.random(0, size - len)
    return wrk.format("GET", path, { ["Range"] = "bytes=" .. first .. "-" .. (first + len - 1) })
end
LUA

rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

# run <base-url> <workload> <connections> → "req/s MB/s errors"
run() {
    local base=$1 workload=$2 conns=$3 threads=1 out
    (( conns > 1 )) && threads=2
    case $workload in
        whole) out=$(wrk -t$threads -c"$conns" -d"${seconds}s" --timeout 10s "$base/4mb.ts") ;;
        1mib) out=$(wrk -t$threads -c"$conns" -d"${seconds}s" --timeout 10s -s "$work/range.lua" "$base" -- /1gib.ts 1073741824 1048576) ;;
        188b) out=$(wrk -t$threads -c"$conns" -d"${seconds}s" --timeout 10s -s "$work/range.lua" "$base" -- /1gib.ts 1073741824 188) ;;
    esac
    local rps mbs errors
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    mbs=$(awk '/Transfer\/sec/ {v=$2; if (v ~ /GB/) {sub("GB","",v); v*=1024} else if (v ~ /KB/) {sub("KB","",v); v/=1024} else {sub("MB","",v)}; print v}' <<<"$out")
    errors=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out" | tr '\n' ' ')
    echo "$rps $mbs ${errors:-none}"
}

rss_before=$(rss "$ours_pid")
printf '%-14s %5s | %12s %10s | %12s %10s | %7s | %s\n' workload conns "ours req/s" "ours MB/s" "nginx req/s" "nginx MB/s" ratio errors
printf -- '-%.0s' {1..100}; echo
min_ratio=999
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for workload in whole 1mib 188b; do
    for conns in 1 16 256; do
        ours_rps_all=() ours_mbs_all=() nginx_rps_all=() nginx_mbs_all=() ours_err="" nginx_err=""
        for _ in $(seq "$reps"); do
            read -r rps mbs err <<<"$(run "http://127.0.0.1:$ours_port" $workload $conns)"
            ours_rps_all+=("$rps") ours_mbs_all+=("$mbs")
            [[ $err != none ]] && ours_err+="$err "
            read -r rps mbs err <<<"$(run "http://127.0.0.1:$nginx_port" $workload $conns)"
            nginx_rps_all+=("$rps") nginx_mbs_all+=("$mbs")
            [[ $err != none ]] && nginx_err+="$err "
        done
        ours_rps=$(printf '%s\n' "${ours_rps_all[@]}" | median)
        ours_mbs=$(printf '%s\n' "${ours_mbs_all[@]}" | median)
        nginx_rps=$(printf '%s\n' "${nginx_rps_all[@]}" | median)
        nginx_mbs=$(printf '%s\n' "${nginx_mbs_all[@]}" | median)
        ratio=$(echo "$ours_rps / $nginx_rps" | bc -l)
        min_ratio=$(echo "if ($ratio < $min_ratio) $ratio else $min_ratio" | bc -l)
        errs="ours: ${ours_err:-none}; nginx: ${nginx_err:-none}"
        printf '%-14s %5d | %12.0f %10.1f | %12.0f %10.1f | %6.2fx | %s\n' \
            "$workload" "$conns" "$ours_rps" "$ours_mbs" "$nginx_rps" "$nginx_mbs" "$ratio" "$errs"
    done
done
rss_after=$(rss "$ours_pid")
printf 'lowest ratio: %.2fx (target 0.80x)   ours RSS: %d KiB before, %d KiB after   load average: %s\n' \
    "$min_ratio" "$rss_before" "$rss_after" "$(cut -d' ' -f1-3 /proc/loadavg)"
