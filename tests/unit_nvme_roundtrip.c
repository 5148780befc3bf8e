/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_roundtrip.c - what is written to a slot reads back unchanged, with both engines:
 * whole slots and a shorter prefix, from buffers inside the registered staging pool and from
 * ordinary aligned memory, several operations queued at once, and io_uring with its file and
 * staging buffers registered.
 */
#include "nvme_test.h"

#define SLOTS 8

/* Write SLOTS slots (slot i gets seed base + i; the last one only 12 KiB), read back. */
static void round_trip(nvme_area_t *a, uint8_t *wbuf, uint8_t *rbuf, uint32_t base)
{
    uint32_t ss = nvme_slot_size(a), slot[SLOTS];
    for (int i = 0; i < SLOTS; i++) {
        uint32_t len = i == SLOTS - 1 ? 12288 : ss;
        NT_EQ(nvme_slot_alloc(a, &slot[i]), 0);
        nt_fill(wbuf + (size_t)i * ss, len, base + i);
        NT_EQ(nvme_write(a, slot[i], wbuf + (size_t)i * ss, len, i), 0);
    }
    NT_EQ(nvme_submit(a), 0);
    nvme_done_t d[SLOTS];
    int got = 0;
    while (got < SLOTS) {
        int n = nvme_complete(a, d + got, SLOTS - got, 1);
        NT_CHECK(n > 0, "nvme_complete: expected completions, got %d", n);
        got += n;
    }
    for (int i = 0; i < SLOTS; i++)
        NT_CHECK(d[i].result == 0 && d[i].write, "write %d: result %d", i, d[i].result);
    memset(rbuf, 0, (size_t)SLOTS * ss);
    for (int i = 0; i < SLOTS; i++) {
        uint32_t len = i == SLOTS - 1 ? 12288 : ss;
        NT_EQ(nvme_read_sync(a, slot[i], rbuf + (size_t)i * ss, len), 0);
        long at = nt_differs(rbuf + (size_t)i * ss, len, base + i);
        NT_CHECK(at < 0, "slot %u: word %ld differs from what was written", slot[i], at);
    }
    for (int i = 0; i < SLOTS; i++)
        NT_EQ(nvme_slot_free(a, slot[i]), 0);
}

int main(void)
{
    const char *dir = nt_mkdir();
    for (int e = 0; e < NT_NENGINES; e++) {
        nvme_options_t o = nt_options(dir, 32 * NT_MIB, nt_engines[e]);
        o.staging_bytes = 2 * SLOTS * NVME_DEFAULT_SLOT;
        o.block_size = 512 * 1024;
        nvme_area_t *a = nt_open_opts(&o);
        NT_CHECK(!strcmp(nvme_engine(a, NULL, 0), nt_engine_name(nt_engines[e])),
                 "engine: expected %s, got %s", nt_engine_name(nt_engines[e]),
                 nvme_engine(a, NULL, 0));
        if (nt_engines[e] == NVME_ENGINE_URING)
            NT_CHECK(nvme_registered(a), "io_uring: file and staging pool not registered");
        size_t pool;
        uint8_t *staging = nvme_staging(a, &pool);
        NT_EQ(pool, 2 * SLOTS * NVME_DEFAULT_SLOT);
        round_trip(a, staging, staging + pool / 2, 1);
        uint8_t *w = nt_alloc(SLOTS * NVME_DEFAULT_SLOT), *r = nt_alloc(SLOTS * NVME_DEFAULT_SLOT);
        round_trip(a, w, r, 100);
        nvme_stats_t s;
        nvme_get_stats(a, &s);
        NT_EQ(s.writes, 2 * SLOTS);
        NT_EQ(s.reads, 2 * SLOTS);
        NT_EQ(s.errors, 0);
        NT_EQ(s.bytes_written, 2 * ((SLOTS - 1) * (uint64_t)NVME_DEFAULT_SLOT + 12288));
        NT_EQ(nvme_degraded(a, NULL, 0), 0);
        free(w);
        free(r);
        nvme_close(a);
        printf("%s: %d slots round trip, staging and plain buffers\n",
               nt_engine_name(nt_engines[e]), 2 * SLOTS);
    }
    return 0;
}
