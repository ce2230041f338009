#!/usr/bin/env python3
"""Plays an HLS URL with video.js (PyPI js-videojs: video.js 7 and its HLS engine) in headless Debian chromium.

Serves a small page and the video.js files on a loopback port of its own, so the page's origin differs from the
stream's (the stream's server must allow it with CORS). Prints that origin (http://127.0.0.1:PORT) on stdout,
then reads the stream URL from the first line of standard input, opens the page in chromium and waits until the
page says it is done: on `ended` (--until ended), once the played time has passed the end of the media segment
with sequence number N (--until msn:N), or at --timeout seconds. Prints one JSON object on stdout and exits 0 when
the page finished its goal, 3 when it timed out, 4 when chromium is missing or died.

The JSON holds what the page recorded, with wall-clock seconds since the page started: player events (`playing`,
`waiting`, `error`, `ended`, ...), the player's error, samples of currentTime every 250 ms with the average colour
of the picture, every request the HLS engine made, the start and end of each media segment on the player's
timeline by sequence number, MediaSource.isTypeSupported answers, the page's console, and chromium's own log.

With --late SUBSTRING, the engine's requests whose URL contains SUBSTRING reach the stream 0.5 s late: the page
sends them to its own origin, which waits and redirects them to the stream (a slow network for those requests).

video.js 7.5.5's HLS engine (VHS 1.9.3) has a race with demuxed media: a SourceBuffer's updates wait until the
other SourceBuffer exists, and then only the first of them runs; when that first one sets the timestamp offset,
which fires no updateend, the rest (the init segment and the first segment) wait forever. It happens whenever the
first video segment arrives before the audio playlist, as on a loaded machine. Every 250 ms the page runs the
engine's own next queued update when one is left waiting with nothing in progress, and counts it (`drains`); the
engine's loaders' states are in `loaders`, for failure messages.
"""
import argparse
import http.server
import json
import os
import shutil
import signal
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>tsplayer browser test</title></head>
<body>
<video id="v" class="video-js" muted autoplay playsinline width="320" height="180"></video>
<canvas id="c" width="8" height="8"></canvas>
<script>
var q = new URLSearchParams(location.search);
var started = performance.now();
var state = {events: [], samples: [], requests: [], segments: {}, console: [], error: null, duration: null,
             goal: q.get('until'), reached: false, done: false, supported: {}, engine: null, drains: 0,
             loaders: {}};
function wall() { return (performance.now() - started) / 1000; }
['log', 'info', 'warn', 'error'].forEach(function (level) {
  var original = console[level].bind(console);
  console[level] = function () {
    var text = Array.prototype.map.call(arguments, function (a) {
      try { return typeof a === 'string' ? a : JSON.stringify(a); } catch (e) { return String(a); }
    }).join(' ');
    state.console.push({wall: wall(), level: level, text: text});
    original.apply(null, arguments);
  };
});
window.addEventListener('error', function (e) {
  state.console.push({wall: wall(), level: 'pageerror', text: e.message + ' at ' + e.filename + ':' + e.lineno});
});
['video/mp4; codecs="avc1.64001f,mp4a.40.2"', 'video/mp4; codecs="avc1.42e01e"', 'audio/mp4; codecs="mp4a.40.2"',
 'video/mp2t; codecs="avc1.64001f,mp4a.40.2"'].forEach(function (t) {
  state.supported[t] = window.MediaSource ? MediaSource.isTypeSupported(t) : false;
});
function send(final) {
  var body = JSON.stringify(state);
  return fetch('/report', {method: 'POST', body: body}).catch(function () {});
}
</script>
<script src="/video.js"></script>
<script>
var player;
function finish() {
  if (state.done) return;
  state.done = true;
  send(true);
}
try {
  videojs.Hls.xhr.beforeRequest = function (options) {
    state.requests.push({wall: wall(), uri: options.uri});
    var late = q.get('late');
    if (late && options.uri.indexOf(late) >= 0) {
      options.uri = location.origin + '/late?' + new URLSearchParams({u: options.uri});
    }
    return options;
  };
  player = videojs('v', {html5: {hls: {overrideNative: true}}});
  ['loadstart', 'loadedmetadata', 'canplay', 'playing', 'waiting', 'stalled', 'pause', 'seeking', 'seeked', 'ended',
   'error'].forEach(function (name) {
    player.on(name, function () {
      state.events.push({wall: wall(), name: name, currentTime: player.currentTime()});
      if (name === 'error') {
        var e = player.error();
        state.error = e ? {code: e.code, message: e.message} : {code: 0, message: 'unknown'};
        finish();
      }
      if (name === 'ended' && state.goal === 'ended') { state.reached = true; finish(); }
    });
  });
  player.src({src: q.get('src'), type: 'application/x-mpegURL'});
  var rate = parseFloat(q.get('rate') || '1');
  player.ready(function () {
    var p = player.play();
    if (p && p.catch) p.catch(function (e) { state.console.push({wall: wall(), level: 'play', text: String(e)}); });
  });
  var canvas = document.getElementById('c');
  var context = canvas.getContext('2d', {willReadFrequently: true});
  setInterval(function () {
    if (state.done) return;
    var video = player.tech(true).el();
    if (rate !== 1 && video.playbackRate !== rate && !video.paused) video.playbackRate = rate;
    var colour = null;
    if (video.readyState >= 2 && video.videoWidth > 0) {
      context.drawImage(video, 0, 0, 8, 8);
      var d = context.getImageData(0, 0, 8, 8).data, r = 0, g = 0, b = 0;
      for (var i = 0; i < d.length; i += 4) { r += d[i]; g += d[i + 1]; b += d[i + 2]; }
      colour = [Math.round(r / 64), Math.round(g / 64), Math.round(b / 64)];
    }
    var buffered = video.buffered.length ? video.buffered.end(video.buffered.length - 1) : null;
    state.samples.push({wall: wall(), currentTime: video.currentTime, buffered: buffered, paused: video.paused,
                        readyState: video.readyState, colour: colour});
    state.duration = player.duration();
    var hls = player.tech(true).hls;
    var media = hls && hls.playlists && hls.playlists.media();
    if (media && media.segments) {
      state.engine = {mediaSequence: media.mediaSequence, endList: !!media.endList, uri: media.resolvedUri};
      media.segments.forEach(function (s, i) {
        if (typeof s.start === 'number' && typeof s.end === 'number') {
          state.segments[media.mediaSequence + i] = {start: s.start, end: s.end, uri: s.resolvedUri};
        }
      });
    }
    var controller = hls && hls.masterPlaylistController_;
    if (controller) {
      ['main', 'audio'].forEach(function (name) {
        var loader = controller[name + 'SegmentLoader_'], updater = loader && loader.sourceUpdater_;
        if (updater && updater.started_ && updater.callbacks_.length && !updater.updating()) {
          state.drains += 1;
          updater.runCallback_();
        }
        if (loader) {
          state.loaders[name] = {state: loader.state, started: !!(updater && updater.started_),
                                 queued: updater ? updater.callbacks_.length : null};
        }
      });
    }
    var goal = state.goal || '';
    if (goal.indexOf('msn:') === 0) {
      var target = state.segments[parseInt(goal.slice(4), 10)];
      if (target && video.currentTime > target.end) { state.reached = true; finish(); }
    }
  }, 250);
  setInterval(function () { if (!state.done) send(false); }, 1000);
} catch (e) {
  state.console.push({wall: wall(), level: 'exception', text: String(e && e.stack || e)});
  finish();
}
</script>
</body></html>
"""


def videojs_dir():
    try:
        import js.videojs
    except ImportError:
        return None
    return os.path.join(os.path.dirname(js.videojs.__file__), "resources")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--until", default="ended", help="ended, or msn:N")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--rate", type=float, default=1.0, help="playback rate once playing")
    p.add_argument("--late", default="", help="requests whose URL contains this reach the stream 0.5 s late")
    args = p.parse_args()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    resources = videojs_dir()
    if resources is None:
        print(json.dumps({"failure": "the Python package js-videojs is not installed; run Scripts/deps.sh"}))
        return 4
    with open(os.path.join(resources, "video.js"), "rb") as f:
        videojs = f.read()
    report = {"state": None}
    finished = threading.Event()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def send(self, status, body, ctype):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/":
                return self.send(200, PAGE.encode(), "text/html; charset=utf-8")
            if path == "/late":
                time.sleep(0.5)
                target = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("u", [""])[0]
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if path == "/video.js":
                return self.send(200, videojs, "application/javascript")
            return self.send(404, b"not found\n", "text/plain")

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            try:
                state = json.loads(body)
            except ValueError:
                return self.send(400, b"bad report\n", "text/plain")
            with lock:
                report["state"] = state
            if state.get("done"):
                finished.set()
            self.send(204, b"", "text/plain")

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def handle_error(self, request, client_address):
            pass  # chromium's connections reset when it is stopped

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = "http://127.0.0.1:%d" % server.server_address[1]
    print(origin, flush=True)
    src = sys.stdin.readline().strip()

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    result = {"origin": origin, "src": src}
    if chromium is None:
        result["failure"] = "chromium is not installed; run Scripts/deps.sh"
        print(json.dumps(result))
        return 4
    profile = tempfile.mkdtemp(prefix="browser-player-")
    log_path = os.path.join(profile, "chromium.log")
    page = origin + "/?" + urllib.parse.urlencode({"src": src, "until": args.until, "rate": args.rate, "late": args.late})
    with open(log_path, "wb") as log:
        browser = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--autoplay-policy=no-user-gesture-required", "--no-first-run", "--no-default-browser-check",
             "--disable-background-networking", "--disable-component-update", "--mute-audio",
             "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", page],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def stop(signum, frame):
        # Chromium runs in a session of its own: stop it with us.
        try:
            os.killpg(browser.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(profile, ignore_errors=True)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    started = time.monotonic()
    code = 3
    while time.monotonic() - started < args.timeout:
        if finished.wait(0.2):
            code = 0
            break
        if browser.poll() is not None:
            result["failure"] = "chromium exited with status %d" % browser.returncode
            code = 4
            break
    try:
        os.killpg(browser.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    browser.wait()
    with lock:
        result["page"] = report["state"]
    result["seconds"] = round(time.monotonic() - started, 3)
    with open(log_path, "rb") as f:
        lines = f.read().decode("utf-8", "replace").splitlines()
    # Chromium's own lines worth reading: the page's console and media errors; not its D-Bus noise.
    result["chromium"] = [line for line in lines if "dbus" not in line.lower()][-80:]
    shutil.rmtree(profile, ignore_errors=True)
    server.shutdown()
    print(json.dumps(result), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
