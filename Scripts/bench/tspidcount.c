/* The baseline for Scripts/bench/tsinspect.sh: a plain C loop over 188-byte TS packets.
 *   tspidcount count FILE   counts packets per PID and prints the PIDs seen
 *   tspidcount pts FILE     also prints PID, PTS and DTS of every PES start (any PID whose unit-start payload
 *                           begins with 00 00 01), like the simplest possible --pts
 * Reads with read(2) into a 4 MiB buffer; assumes the file starts on a packet boundary. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t read_ts(const uint8_t *p) {
    return ((uint64_t)(p[0] >> 1) & 7) << 30 | (uint64_t)p[1] << 22 | (uint64_t)(p[2] >> 1) << 15 |
           (uint64_t)p[3] << 7 | (uint64_t)(p[4] >> 1);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: tspidcount count|pts FILE\n");
        return 64;
    }
    int pts_mode = strcmp(argv[1], "pts") == 0;
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) {
        perror(argv[2]);
        return 2;
    }
    static uint64_t counts[8192];
    static uint8_t buffer[(4 << 20) + 188];
    static char out[1 << 20];
    size_t out_len = 0;
    size_t have = 0;
    uint64_t packets = 0, pes = 0;
    for (;;) {
        ssize_t n = read(fd, buffer + have, (4 << 20));
        if (n <= 0) break;
        have += (size_t)n;
        size_t pos = 0;
        for (; pos + 188 <= have; pos += 188) {
            const uint8_t *p = buffer + pos;
            if (p[0] != 0x47) continue;
            unsigned pid = (unsigned)(p[1] & 0x1f) << 8 | p[2];
            counts[pid]++;
            packets++;
            if (!pts_mode || !(p[1] & 0x40) || !(p[3] & 0x10)) continue;
            const uint8_t *q = p + 4;
            if (p[3] & 0x20) q += 1 + q[0];
            if (q + 14 > p + 188 || q[0] != 0 || q[1] != 0 || q[2] != 1) continue;
            unsigned flags = q[7] >> 6;
            if (!(flags & 2)) continue;
            uint64_t pts = read_ts(q + 9), dts = flags == 3 ? read_ts(q + 14) : pts;
            pes++;
            if (out_len > sizeof(out) - 64) {
                fwrite(out, 1, out_len, stdout);
                out_len = 0;
            }
            out_len += (size_t)snprintf(out + out_len, 64, "%u %llu %llu\n", pid, (unsigned long long)pts,
                                        (unsigned long long)dts);
        }
        memmove(buffer, buffer + pos, have - pos);
        have -= pos;
    }
    fwrite(out, 1, out_len, stdout);
    close(fd);
    unsigned pids = 0;
    for (unsigned i = 0; i < 8192; i++) pids += counts[i] != 0;
    fprintf(stderr, "packets %llu pids %u pes %llu\n", (unsigned long long)packets, pids, (unsigned long long)pes);
    return 0;
}
