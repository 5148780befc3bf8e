/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_queue_depth.c - batched submission under a queue depth, both engines: 48
 * operations of 4 requests each (2 MiB slots, 512 KiB blocks) queued at once with queue
 * depth 6 keep exactly 6 requests in flight at the most, go to the engine in batches (fewer
 * batches than requests), all complete once each with their tags, and with max_ops 48 a 49th
 * operation is -EAGAIN until one completes.
 */
#include "nvme_test.h"

#define OPS 48

static void run(const char *dir, nvme_engine_kind_t engine)
{
    nvme_options_t o = nt_options(dir, OPS * 2ull * NT_MIB, engine);
    o.queue_depth = 6;
    o.block_size = 512 * 1024;
    o.max_ops = OPS;
    o.staging_bytes = OPS * 2ull * NT_MIB;
    nvme_area_t *a = nt_open_opts(&o);
    uint8_t *buf = nvme_staging(a, NULL);
    for (uint32_t i = 0; i < OPS; i++) {
        nt_fill(buf + i * 2ull * NT_MIB, 2 * NT_MIB, i);
        NT_EQ(nvme_write(a, i, buf + i * 2ull * NT_MIB, 2 * NT_MIB, 1000 + i), 0);
    }
    NT_EQ(nvme_write(a, 0, buf, 2 * NT_MIB, 0), -EAGAIN);
    NT_EQ(nvme_submit(a), 0);
    uint8_t seen[OPS] = { 0 };
    nvme_done_t d[8];
    for (int got = 0; got < OPS;) {
        int n = nvme_complete(a, d, 8, 1);
        NT_CHECK(n > 0, "nvme_complete: expected completions, got %d", n);
        for (int i = 0; i < n; i++) {
            uint64_t k = d[i].tag - 1000;
            NT_CHECK(k < OPS && !seen[k] && d[i].result == 0 && d[i].slot == k,
                     "completion tag %llu slot %u result %d", (unsigned long long)d[i].tag,
                     d[i].slot, d[i].result);
            seen[k] = 1;
        }
        got += n;
    }
    NT_EQ(nvme_pending(a), 0);
    nvme_stats_t s;
    nvme_get_stats(a, &s);
    NT_EQ(s.requests, OPS * 4);
    NT_EQ(s.max_inflight, 6);
    NT_CHECK(s.submits < s.requests, "%llu batches for %llu requests: no batching",
             (unsigned long long)s.submits, (unsigned long long)s.requests);
    memset(buf, 0, OPS * 2ull * NT_MIB);
    for (uint32_t i = 0; i < OPS; i++)
        NT_EQ(nvme_read(a, i, buf + i * 2ull * NT_MIB, 2 * NT_MIB, i), 0);
    for (int got = 0; got < OPS;)
        got += nvme_complete(a, d, 8, 8);
    for (uint32_t i = 0; i < OPS; i++)
        NT_CHECK(nt_differs(buf + i * 2ull * NT_MIB, 2 * NT_MIB, i) < 0, "slot %u differs", i);
    printf("%s: %llu requests in %llu batches, at most %u in flight\n", nt_engine_name(engine),
           (unsigned long long)s.requests, (unsigned long long)s.submits, s.max_inflight);
    nvme_close(a);
}

int main(void)
{
    const char *dir = nt_mkdir();
    for (int e = 0; e < NT_NENGINES; e++)
        run(dir, nt_engines[e]);
    return 0;
}
