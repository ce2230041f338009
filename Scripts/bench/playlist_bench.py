#!/usr/bin/env python3
"""Helpers for Scripts/bench/playlist.sh: make the benchmark inputs and time the Python m3u8 peer.

  playlist_bench.py make DIR            write media10k.m3u8, multi200.m3u8, the shaped 10,000-segment playlists
                                        (dots, absolute, query, dates, byteranges, keys,
                                        realistic: dates + dots + queries) and iptv100m.m3u into DIR
  playlist_bench.py loads FILE URL N [uris]
                                        time m3u8.loads in-process N times (with "uris", also reading every
                                        segment's or variant's absolute_uri); prints "min_ms median_ms"
  playlist_bench.py procs N CMD...      run CMD N times as a whole process; prints "min_ms median_ms"
"""
import datetime
import os
import random
import subprocess
import sys
import time


def make(directory):
    os.makedirs(directory, exist_ok=True)
    rnd = random.Random(4)
    # A 10,000-segment VOD media playlist shaped like the one in the issue (about 411 KB).
    lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:10", "#EXT-X-MEDIA-SEQUENCE:0",
             "#EXT-X-PLAYLIST-TYPE:VOD"]
    for i in range(10000):
        lines.append("#EXTINF:%.3f," % (9.5 + rnd.random() / 2))
        lines.append("fileSequence%05d.ts" % i)
    lines.append("#EXT-X-ENDLIST")
    with open(os.path.join(directory, "media10k.m3u8"), "w") as f:
        f.write("\n".join(lines) + "\n")
    # The same 10,000 segments in the shapes that cost a resolver or a parser more (issue 17 item 6), each
    # resolved against https://cdn.example.com/live/v1/index.m3u8 by playlist.sh.
    def shaped(name, header, segment):
        out = ["#EXTM3U", "#EXT-X-VERSION:%d" % (4 if name == "byteranges" else 3), "#EXT-X-TARGETDURATION:10",
               "#EXT-X-MEDIA-SEQUENCE:0", "#EXT-X-PLAYLIST-TYPE:VOD"] + header
        r = random.Random(4)
        offset = 0
        for i in range(10000):
            duration = 9.5 + r.random() / 2
            lines, offset = segment(i, duration, offset)
            out += lines
        out.append("#EXT-X-ENDLIST")
        with open(os.path.join(directory, name + ".m3u8"), "w") as f:
            f.write("\n".join(out) + "\n")

    def plain(uri):
        return lambda i, d, o: (["#EXTINF:%.3f," % d, uri % i], o)

    shaped("dots", [], plain("../media/seg_%05d.ts"))
    shaped("absolute", [], plain("https://edge-7.cdn.example.net/vod/asset-42/1080p/seg_%05d.ts"))
    shaped("query", [], plain("seg_%05d.ts?token=9f86d081884c7d659a2feaa0c55ad015&expires=1767225600"))

    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)

    def dated(i, d, o):
        stamp = (start + datetime.timedelta(seconds=o)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return ["#EXT-X-PROGRAM-DATE-TIME:" + stamp, "#EXTINF:%.3f," % d, "seg_%05d.ts" % i], o + d
    shaped("dates", [], dated)

    def realistic(i, d, o):
        # What live SSAI-era playlists look like: a date on every segment, dot segments and a signed query.
        stamp = (start + datetime.timedelta(seconds=o)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return ["#EXT-X-PROGRAM-DATE-TIME:" + stamp, "#EXTINF:%.3f," % d,
                "../media/seg_%05d.ts?token=9f86d081884c7d659a2feaa0c55ad015&expires=1767225600" % i], o + d
    shaped("realistic", [], realistic)

    def ranged(i, d, o):
        length = 150000 + (i * 7919) % 50000
        return ["#EXTINF:%.3f," % d, "#EXT-X-BYTERANGE:%d@%d" % (length, o), "media.ts"], o + length
    shaped("byteranges", [], ranged)

    def keyed(i, d, o):
        lines = []
        if i % 10 == 0:
            lines.append('#EXT-X-KEY:METHOD=AES-128,URI="https://keys.example.com/k%d.key",IV=0x%032X' % (i // 10, i))
        return lines + ["#EXTINF:%.3f," % d, "seg_%05d.ts" % i], o
    shaped("keys", [], keyed)
    # A 200-variant multivariant playlist with audio renditions.
    lines = ["#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-INDEPENDENT-SEGMENTS",
             '#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",DEFAULT=YES,AUTOSELECT=YES,LANGUAGE="en",'
             'URI="audio/en/index.m3u8"']
    for i in range(200):
        w, h = [(640, 360), (960, 540), (1280, 720), (1920, 1080)][i % 4]
        lines.append('#EXT-X-STREAM-INF:BANDWIDTH=%d,AVERAGE-BANDWIDTH=%d,CODECS="avc1.640028,mp4a.40.2",'
                     'RESOLUTION=%dx%d,FRAME-RATE=29.970,AUDIO="aud"' % (500000 + 10000 * i, 450000 + 9000 * i, w, h))
        lines.append("video/v%03d/index.m3u8" % i)
    with open(os.path.join(directory, "multi200.m3u8"), "w") as f:
        f.write("\n".join(lines) + "\n")
    # A 100 MB IPTV channel list.
    path = os.path.join(directory, "iptv100m.m3u")
    with open(path, "w") as f:
        f.write('#EXTM3U url-tvg="http://epg.example.com/guide.xml.gz" catchup="shift"\n')
        size = 0
        i = 0
        groups = ["News", "Sports", "Movies", "Kids", "Music, Live", "Documentary"]
        while size < 100 * 1000 * 1000:
            entry = ('#EXTINF:-1 tvg-id="ch%d.example" tvg-name="Channel %d HD" tvg-logo="http://logo.example.com/%d.png" '
                     'group-title="%s" tvg-chno="%d",Channel %d, the "best" one\n' % (i, i, i, groups[i % 6], i, i))
            if i % 5 == 0:
                entry += "#EXTVLCOPT:http-user-agent=Mozilla/5.0 (X11; Linux x86_64)\n"
            entry += "http://stream.example.com/live/%d/index.m3u8\n" % i
            f.write(entry)
            size += len(entry)
            i += 1


def loads(path, url, n, uris=False):
    import m3u8
    text = open(path).read()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        p = m3u8.loads(text, uri=url)
        if uris:
            for item in (p.playlists if p.is_variant else p.segments):
                item.absolute_uri
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print("%.3f %.3f" % (times[0], times[len(times) // 2]))


def procs(n, cmd):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print("%.3f %.3f" % (times[0], times[len(times) // 2]))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "loads":
        loads(sys.argv[2], sys.argv[3], int(sys.argv[4]), len(sys.argv) > 5 and sys.argv[5] == "uris")
    elif sys.argv[1] == "procs":
        procs(int(sys.argv[2]), sys.argv[3:])
