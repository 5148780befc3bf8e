/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_fault_again.c - a request whose completion says -EAGAIN (an older kernel's answer
 * to a large O_DIRECT request it could not start then; injected by the fault plan, three
 * times in a row) is sent again, not counted as an error: the write and the read succeed, the
 * data reads back, the area stays healthy, and the statistics count the three retries, on both
 * engines.
 */
#include "nvme_test.h"

static void run(nvme_engine_kind_t engine)
{
    nvme_area_t *a = nt_open(nt_dir, 16 * NT_MIB, engine);
    uint8_t *buf = nvme_staging(a, NULL), *back = buf + 2 * NT_MIB;
    nt_fill(buf, 2 * NT_MIB, 7);
    NT_EQ(nvme_fault_plan(a, 1, 1, "again"), 0);
    NT_EQ(nvme_write_sync(a, 3, buf, 2 * NT_MIB), 0);
    NT_EQ(nvme_fault_plan(a, 0, 1, "again"), 0);
    NT_EQ(nvme_read_sync(a, 3, back, 2 * NT_MIB), 0);
    NT_CHECK(nt_differs(back, 2 * NT_MIB, 7) < 0, "slot 3 differs from what was written");
    NT_EQ(nvme_degraded(a, NULL, 0), 0);
    nvme_stats_t st;
    nvme_get_stats(a, &st);
    NT_EQ(st.retried, 6);
    NT_EQ(st.errors, 0);
    printf("%s: a write and a read each answered -EAGAIN three times: sent again, data right\n",
           nt_engine_name(engine));
    nvme_close(a);
}

int main(void)
{
    nt_mkdir();
    for (int e = 0; e < NT_NENGINES; e++)
        run(nt_engines[e]);
    return 0;
}
