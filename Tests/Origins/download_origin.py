#!/usr/bin/env python3
"""A fault-injecting HTTP origin for the HLSDownload end-to-end tests.

Serves the files under --root (GET with Range and If-Range on an ETag) and, at seeded random per request, answers
500, resets the connection mid-body, truncates the body, announces a Content-Length larger than the body, trickles
the body at 1 byte/s (a stall), or corrupts one TS sync byte. Paths given with --not-found always answer 404.
A request without every --require-header NAME=VALUE answers 403.
Playlists (.m3u8) are served without faults unless --fault-playlists is given.

Prints "PORT <n>" on stdout once listening, and one line per request on --log:
"<path> <status> <fault> <bytes sent>".
"""
import argparse
import http.server
import os
import random
import socket
import struct
import sys
import threading
import time
import urllib.parse

FAULTS = ["500", "reset", "truncate", "wronglength", "stall", "corrupt"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=float, default=0.3, help="fraction of requests that get a fault")
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--not-found", action="append", default=[])
    parser.add_argument("--fault-playlists", action="store_true")
    parser.add_argument("--stall-seconds", type=float, default=30)
    parser.add_argument("--log")
    parser.add_argument("--require-header", action="append", default=[],
                        help="NAME=VALUE every request must carry; others answer 403 (logged as fault 'noheader')")
    args = parser.parse_args()
    faults = [f for f in args.faults.split(",") if f]
    counts = {}
    lock = threading.Lock()
    log = open(args.log, "a", buffering=1) if args.log else None

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def record(self, path, status, fault, sent):
            if log:
                with lock:
                    log.write(f"{path} {status} {fault} {sent}\n")

        def do_GET(self):
            path = urllib.parse.unquote(urllib.parse.urlparse(self.path).path)
            for required in args.require_header:
                name, _, value = required.partition("=")
                if self.headers.get(name) != value:
                    return self.simple(path, 403, "noheader")
            full = os.path.realpath(os.path.join(args.root, path.lstrip("/")))
            if not full.startswith(os.path.realpath(args.root) + os.sep) or not os.path.isfile(full):
                return self.simple(path, 404, "none")
            if path in args.not_found:
                return self.simple(path, 404, "notfound")
            with open(full, "rb") as f:
                body = f.read()
            stat = os.stat(full)
            etag = '"%x-%x"' % (stat.st_size, int(stat.st_mtime))
            with lock:
                counts[path] = counts.get(path, 0) + 1
                attempt = counts[path]
            rng = random.Random("%d:%s:%d" % (args.seed, path, attempt))
            fault = "none"
            if (args.fault_playlists or not path.endswith(".m3u8")) and rng.random() < args.rate and faults:
                fault = rng.choice(faults)
            status = 200
            start, end = 0, len(body) - 1
            range_header = self.headers.get("Range")
            if_range = self.headers.get("If-Range")
            if range_header and range_header.startswith("bytes=") and (if_range is None or if_range == etag):
                first, _, last = range_header[6:].partition("-")
                try:
                    start = int(first)
                    end = min(int(last), len(body) - 1) if last else len(body) - 1
                except ValueError:
                    return self.simple(path, 416, fault)
                if start >= len(body) or end < start:
                    return self.simple(path, 416, fault)
                status = 206
            part = body[start:end + 1]
            if fault == "500":
                return self.simple(path, 500, fault)
            if fault == "corrupt" and path.endswith(".ts") and start == 0 and len(part) > 376:
                part = part[:376] + b"\x00" + part[377:]
            self.send_response(status)
            length = len(part) + (100 if fault == "wronglength" else 0)
            self.send_header("Content-Length", str(length))
            self.send_header("ETag", etag)
            self.send_header("Accept-Ranges", "bytes")
            if status == 206:
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, len(body)))
            self.end_headers()
            sent = 0
            try:
                if fault in ("reset", "truncate"):
                    half = part[: len(part) // 2]
                    self.wfile.write(half)
                    self.wfile.flush()
                    sent = len(half)
                    if fault == "reset":
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    self.record(path, status, fault, sent)
                    self.connection.close()
                    return
                if fault == "stall":
                    deadline = time.time() + args.stall_seconds
                    while sent < len(part) and time.time() < deadline:
                        self.wfile.write(part[sent:sent + 1])
                        self.wfile.flush()
                        sent += 1
                        time.sleep(1)
                    self.close_connection = True
                    self.record(path, status, fault, sent)
                    return
                self.wfile.write(part)
                sent = len(part)
                if fault == "wronglength":
                    self.close_connection = True
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            self.record(path, status, fault, sent)

        def simple(self, path, status, fault):
            self.send_response(status)
            self.send_header("Content-Length", "0")
            if status == 500:
                self.send_header("Retry-After", "0")
            self.end_headers()
            self.record(path, status, fault, 0)

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", args.port), Handler)
    print("PORT %d" % server.server_address[1], flush=True)
    # Stop when stdin closes (the test ends), so no origin outlives its test.
    threading.Thread(target=lambda: (sys.stdin.read(), server.shutdown()), daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
