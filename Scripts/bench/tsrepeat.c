// tsrepeat: a long recording from a short one, for the playback bench. Repeats a 188-byte TS file until the output
// reaches a size, each repetition's PCR, PTS and DTS moved on by the input's duration (so the time stamps run on
// without a reset, as in one long recording) and every PID's continuity counter kept counting through the joins;
// writes 188-byte packets, 192-byte M2TS packets (a 4-byte arrival time stamp before each, 27 MHz at 1 byte/us) or
// 204-byte DVB packets (16 zero bytes after each, where the Reed-Solomon parity would be).
// The input's duration: its first video PID's (stream_id 0xE0-0xEF) last PTS minus its first, plus one frame of
// FRAME_TICKS (90 kHz; 3000 for 30 fps).
// Usage: tsrepeat IN.ts OUT SIZE_BYTES PACKET_SIZE FRAME_TICKS
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t wrap = 1ULL << 33;

static uint64_t read_ts(const uint8_t *p) {
    return ((uint64_t)(p[0] >> 1) & 7) << 30 | (uint64_t)p[1] << 22 | (uint64_t)(p[2] >> 1) << 15 |
           (uint64_t)p[3] << 7 | (uint64_t)(p[4] >> 1);
}

static void write_ts(uint8_t *p, uint64_t value) {
    value &= wrap - 1;
    p[0] = (p[0] & 0xF1) | (uint8_t)((value >> 29) & 0x0E);
    p[1] = (uint8_t)(value >> 22);
    p[2] = (uint8_t)(((value >> 14) & 0xFE) | 1);
    p[3] = (uint8_t)(value >> 7);
    p[4] = (uint8_t)(((value << 1) & 0xFE) | 1);
}

/// The PES header's PTS (and DTS) of a packet that starts a PES: their positions in `packet`, or 0 when absent.
static int pes_times(const uint8_t *packet, int *pts_at, int *dts_at, int *stream_id) {
    *pts_at = *dts_at = 0;
    if (!(packet[1] & 0x40) || !(packet[3] & 0x10)) return 0;
    int at = 4;
    if (packet[3] & 0x20) at += 1 + packet[4];
    if (at + 14 > 188) return 0;
    const uint8_t *pes = packet + at;
    if (pes[0] != 0 || pes[1] != 0 || pes[2] != 1) return 0;
    *stream_id = pes[3];
    int flags = pes[7] >> 6;
    if (flags & 2) *pts_at = at + 9;
    if (flags == 3 && at + 19 <= 188) *dts_at = at + 14;
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: tsrepeat IN.ts OUT SIZE_BYTES PACKET_SIZE FRAME_TICKS\n");
        return 64;
    }
    FILE *in = fopen(argv[1], "rb");
    FILE *out = fopen(argv[2], "wb");
    uint64_t size = strtoull(argv[3], NULL, 10);
    int packet_size = atoi(argv[4]);
    uint64_t frame = strtoull(argv[5], NULL, 10);
    if (!in || !out || (packet_size != 188 && packet_size != 192 && packet_size != 204)) {
        fprintf(stderr, "tsrepeat: cannot open the files, or packet size not 188, 192 or 204\n");
        return 1;
    }
    fseek(in, 0, SEEK_END);
    long length = ftell(in);
    fseek(in, 0, SEEK_SET);
    size_t count = (size_t)length / 188;
    uint8_t *piece = malloc(count * 188);
    if (!piece || fread(piece, 188, count, in) != count) {
        fprintf(stderr, "tsrepeat: cannot read %s\n", argv[1]);
        return 1;
    }
    // The first video PID's first and last PTS.
    int video = -1;
    uint64_t first = 0, last = 0;
    for (size_t n = 0; n < count; n++) {
        const uint8_t *packet = piece + n * 188;
        int pid = (packet[1] & 0x1F) << 8 | packet[2], pts_at, dts_at, stream_id;
        if (packet[0] != 0x47 || !pes_times(packet, &pts_at, &dts_at, &stream_id) || !pts_at) continue;
        if (video < 0 && stream_id >= 0xE0 && stream_id <= 0xEF) {
            video = pid;
            first = last = read_ts(packet + pts_at);
        } else if (pid == video) {
            uint64_t pts = read_ts(packet + pts_at);
            if (pts > last) last = pts;
            if (pts < first) first = pts;
        }
    }
    if (video < 0) {
        fprintf(stderr, "tsrepeat: no video PES with a PTS\n");
        return 1;
    }
    uint64_t period = last - first + frame;
    int counters[8192];
    for (int n = 0; n < 8192; n++) counters[n] = -1;
    size_t batch = 1 << 15;
    uint8_t *buffer = malloc(batch * (size_t)packet_size);
    uint64_t written = 0, packet_index = 0;
    for (uint64_t loop = 0; written + (uint64_t)packet_size <= size; loop++) {
        uint64_t shift = loop * period;
        for (size_t start = 0; start < count && written + (uint64_t)packet_size <= size; start += batch) {
            size_t take = count - start < batch ? count - start : batch;
            if ((size - written) / (uint64_t)packet_size < take) take = (size_t)((size - written) / packet_size);
            for (size_t n = 0; n < take; n++) {
                uint8_t *to = buffer + n * (size_t)packet_size;
                uint8_t *packet = to + (packet_size == 192 ? 4 : 0);
                memcpy(packet, piece + (start + n) * 188, 188);
                if (packet_size == 192) {
                    uint32_t ats = (uint32_t)((packet_index * 188 * 27) & 0x3FFFFFFF);
                    to[0] = (uint8_t)(ats >> 24), to[1] = (uint8_t)(ats >> 16), to[2] = (uint8_t)(ats >> 8),
                    to[3] = (uint8_t)ats;
                } else if (packet_size == 204) {
                    memset(to + 188, 0, 16);
                }
                packet_index++;
                if (packet[0] != 0x47) continue;
                int pid = (packet[1] & 0x1F) << 8 | packet[2];
                if (pid != 0x1FFF && (packet[3] & 0x10)) {
                    counters[pid] = counters[pid] < 0 ? (packet[3] & 0x0F) : (counters[pid] + 1) & 0x0F;
                    packet[3] = (packet[3] & 0xF0) | (uint8_t)counters[pid];
                }
                if (shift == 0) continue;
                // PCR: 33-bit base, 6 reserved bits, 9-bit extension.
                if ((packet[3] & 0x20) && packet[4] >= 7 && (packet[5] & 0x10)) {
                    uint8_t *p = packet + 6;
                    uint64_t base = (uint64_t)p[0] << 25 | (uint64_t)p[1] << 17 | (uint64_t)p[2] << 9 |
                                    (uint64_t)p[3] << 1 | (uint64_t)(p[4] >> 7);
                    base = (base + shift) & (wrap - 1);
                    p[0] = (uint8_t)(base >> 25), p[1] = (uint8_t)(base >> 17), p[2] = (uint8_t)(base >> 9);
                    p[3] = (uint8_t)(base >> 1), p[4] = (uint8_t)((p[4] & 0x7F) | ((base & 1) << 7));
                }
                int pts_at, dts_at, stream_id;
                if (pes_times(packet, &pts_at, &dts_at, &stream_id)) {
                    if (pts_at) write_ts(packet + pts_at, read_ts(packet + pts_at) + shift);
                    if (dts_at) write_ts(packet + dts_at, read_ts(packet + dts_at) + shift);
                }
            }
            if (fwrite(buffer, (size_t)packet_size, take, out) != take) {
                fprintf(stderr, "tsrepeat: cannot write %s\n", argv[2]);
                return 1;
            }
            written += (uint64_t)take * (uint64_t)packet_size;
        }
    }
    if (fclose(out) != 0) return 1;
    fprintf(stderr, "tsrepeat: %llu bytes, %llu packets, period %llu ticks\n", (unsigned long long)written,
            (unsigned long long)packet_index, (unsigned long long)period);
    return 0;
}
