/* SPDX-License-Identifier: MIT */
/*
 * nvme_fault.h - the scenario every injected-fault test of the NVMe tier runs, on both
 * engines: slots 0 and 1 hold data; with queue depth 1, three operations on slots 2, 3, 4
 * are queued and the fault plan makes the second one's request fail.  Then the operation on
 * slot 2 succeeded, the one on slot 3 failed with the expected error, the area is degraded
 * with that error and a reason naming slot 3, a write queued behind the failure (slot 4) and
 * every new write are refused with the same error, and slots 0 and 1 still read back intact
 * (reads go on: they may be the only way back for data already there).
 */
#ifndef NVME_FAULT_H
#define NVME_FAULT_H

#include "nvme_test.h"

static inline void nt_fault_run(nvme_engine_kind_t engine, int write, const char *kind, int want)
{
    nvme_options_t o = nt_options(nt_dir, 16 * NT_MIB, engine);
    o.queue_depth = 1;
    nvme_area_t *a = nt_open_opts(&o);
    uint8_t *buf = nvme_staging(a, NULL);
    for (uint32_t s = 0; s < 5; s++) {
        nt_fill(buf, 2 * NT_MIB, s);
        if (s < 2 || !write)
            NT_EQ(nvme_write_sync(a, s, buf, 2 * NT_MIB), 0);
    }
    NT_EQ(nvme_fault_plan(a, write, 2, kind), 0);
    for (uint32_t s = 2; s < 5; s++)
        NT_EQ(write ? nvme_write(a, s, buf + s * 2ull * NT_MIB, 2 * NT_MIB, s)
                    : nvme_read(a, s, buf + s * 2ull * NT_MIB, 2 * NT_MIB, s), 0);
    nvme_done_t d[3];
    NT_EQ(nvme_complete(a, d, 3, 3), 3);
    NT_CHECK(d[0].slot == 2 && d[0].result == 0, "slot 2: expected 0, got slot %u result %d",
             d[0].slot, d[0].result);
    NT_CHECK(d[1].slot == 3 && d[1].result == want, "slot 3: expected %d, got slot %u result %d",
             want, d[1].slot, d[1].result);
    NT_CHECK(d[2].slot == 4 && d[2].result == (write ? want : 0),
             "slot 4 (queued behind): expected %d, got slot %u result %d", write ? want : 0,
             d[2].slot, d[2].result);
    char why[256];
    NT_EQ(nvme_degraded(a, why, sizeof(why)), want);
    NT_CHECK(strstr(why, "slot 3"), "the reason does not name slot 3: \"%s\"", why);
    NT_EQ(nvme_write(a, 0, buf, 2 * NT_MIB, 9), want);
    NT_EQ(nvme_write_sync(a, 1, buf, 2 * NT_MIB), want);
    for (uint32_t s = 0; s < 2; s++) {
        memset(buf, 0, 2 * NT_MIB);
        NT_EQ(nvme_read_sync(a, s, buf, 2 * NT_MIB), 0);
        NT_CHECK(nt_differs(buf, 2 * NT_MIB, s) < 0, "slot %u changed after the fault", s);
    }
    nvme_stats_t st;
    nvme_get_stats(a, &st);
    NT_EQ(st.errors, write ? 2 : 1);
    printf("%s: %s %s: %s\n", nt_engine_name(engine), write ? "write" : "read", kind, why);
    nvme_close(a);
}

/* Both engines, in a scratch directory. */
static inline int nt_fault_main(int write, const char *kind, int want)
{
    nt_mkdir();
    for (int e = 0; e < NT_NENGINES; e++)
        nt_fault_run(nt_engines[e], write, kind, want);
    return 0;
}

#endif
