#!/usr/bin/env python3
"""A small HLS test origin for the ad-stripping proxy's end-to-end tests.

Serves MPEG-TS segments seg<N>.ts from a folder (made by ffmpeg) as a sliding live window that advances in
real time, or as one VOD playlist. With --fmp4 the segments are seg<N>.m4s with init.mp4 (EXT-X-MAP). With
--rotate N the segments are AES-128 encrypted (with the openssl command) under a new key every N segments,
key<K>.bin with IV K, and the playlist declares each key where it takes effect. Chosen segments are ad breaks, marked in the playlist with EXT-X-CUE-OUT /
CUE-OUT-CONT / CUE-IN or with EXT-X-DATERANGE SCTE35-OUT (with PROGRAM-DATE-TIME). Every request must carry the
expected Authorization header, or it is answered 403. Prints the port on stdout, then serves until killed.
"""
import argparse
import http.server
import os
import signal
import socketserver
import sys
import time
from datetime import datetime, timezone

SPLICE_OUT = "0xFC301B00000000000000FFF00A05000000027FDF00010000000000000000"


def parse_breaks(text):
    breaks = []
    for part in filter(None, text.split(",")):
        kind, _, span = part.partition(":")
        first, _, last = span.partition("-")
        breaks.append((kind, int(first), int(last or first)))
    return breaks


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--mode", choices=["live", "vod"], default="live")
    p.add_argument("--segments", type=int, required=True)
    p.add_argument("--duration", type=float, default=2.0)
    p.add_argument("--window", type=int, default=6)
    p.add_argument("--breaks", default="", help="cue:8-10,daterange:14-15")
    p.add_argument("--auth", default="")
    p.add_argument("--key", default="", help="serve key.bin and declare AES-128 with this key URI")
    p.add_argument("--fmp4", action="store_true", help="serve seg<N>.m4s with EXT-X-MAP init.mp4")
    p.add_argument("--rotate", type=int, default=0, help="encrypt with a new AES-128 key every N segments")
    args = p.parse_args()
    ext = "m4s" if args.fmp4 else "ts"
    encrypted = {}

    def key_bytes(k):
        return bytes([(k * 37 + i) % 256 for i in range(16)])

    if args.rotate:
        import subprocess
        import tempfile
        for m in range(args.segments):
            k = m // args.rotate
            with tempfile.NamedTemporaryFile() as out:
                subprocess.run(["openssl", "aes-128-cbc", "-K", key_bytes(k).hex(), "-iv", "%032x" % k,
                                "-in", os.path.join(args.dir, "seg%d.%s" % (m, ext)), "-out", out.name], check=True)
                encrypted["seg%d.%s" % (m, ext)] = open(out.name, "rb").read()
    # A test runner may start us with SIGINT/SIGTERM ignored; stopping must work anyway.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    breaks = parse_breaks(args.breaks)
    started = time.monotonic()
    epoch = 1767225600.0

    def break_of(m):
        for kind, first, last in breaks:
            if first <= m <= last:
                return kind, first, last
        return None

    def playlist():
        if args.mode == "vod":
            first, last = 0, args.segments - 1
        else:
            advanced = int((time.monotonic() - started) / args.duration)
            last = min(args.segments - 1, args.window - 1 + advanced)
            first = max(0, last - args.window + 1)
        lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:%d" % round(args.duration),
                 "#EXT-X-MEDIA-SEQUENCE:%d" % first]
        if args.mode == "vod":
            lines.append("#EXT-X-PLAYLIST-TYPE:VOD")
        if args.key:
            lines.append('#EXT-X-KEY:METHOD=AES-128,URI="%s",IV=0x%032x' % (args.key, 0))
        if args.fmp4:
            lines[1] = "#EXT-X-VERSION:7"
            lines.append('#EXT-X-MAP:URI="init.mp4"')
        for m in range(first, last + 1):
            b = break_of(m)
            if args.rotate and (m == first or m % args.rotate == 0):
                k = m // args.rotate
                lines.append('#EXT-X-KEY:METHOD=AES-128,URI="key%d.bin",IV=0x%032x' % (k, k))
            lines.append("#EXT-X-PROGRAM-DATE-TIME:" + datetime.fromtimestamp(
                epoch + m * args.duration, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"))
            if b and b[0] == "cue":
                total = (b[2] - b[1] + 1) * args.duration
                if m == b[1]:
                    lines.append("#EXT-X-CUE-OUT:%.3f" % total)
                else:
                    lines.append("#EXT-X-CUE-OUT-CONT:%.3f/%.3f" % ((m - b[1]) * args.duration, total))
            if b and b[0] == "daterange" and m == b[1]:
                start = datetime.fromtimestamp(epoch + m * args.duration, timezone.utc)
                lines.append('#EXT-X-DATERANGE:ID="ad-%d",START-DATE="%s",DURATION=%.3f,SCTE35-OUT=%s' % (
                    m, start.strftime("%Y-%m-%dT%H:%M:%S.000Z"), (b[2] - b[1] + 1) * args.duration, SPLICE_OUT))
            prev = break_of(m - 1)
            if prev and prev[0] == "cue" and not (b and b[0] == "cue"):
                lines.append("#EXT-X-CUE-IN")
            lines.append("#EXTINF:%.3f," % args.duration)
            lines.append("seg%d.%s" % (m, ext))
        if args.mode == "vod" or last == args.segments - 1:
            lines.append("#EXT-X-ENDLIST")
        return ("\n".join(lines) + "\n").encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def send(self, status, body, ctype):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if args.auth and self.headers.get("Authorization") != args.auth:
                return self.send(403, b"forbidden\n", "text/plain")
            path = self.path.split("?")[0]
            if path.endswith(".m3u8"):
                return self.send(200, playlist(), "application/vnd.apple.mpegurl")
            name = os.path.basename(path)
            if args.key and name == os.path.basename(args.key):
                with open(os.path.join(args.dir, "key.bin"), "rb") as f:
                    return self.send(200, f.read(), "application/octet-stream")
            if args.rotate and name.startswith("key") and name.endswith(".bin") and name[3:-4].isdigit():
                return self.send(200, key_bytes(int(name[3:-4])), "application/octet-stream")
            full = os.path.join(args.dir, name)
            media_type = "video/mp4" if args.fmp4 else "video/mp2t"
            if name in encrypted:
                return self.send(200, encrypted[name], media_type)
            if not (name.startswith("seg") or (args.fmp4 and name == "init.mp4")) or not os.path.isfile(full):
                return self.send(404, b"not found\n", "text/plain")
            with open(full, "rb") as f:
                self.send(200, f.read(), media_type)

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
