/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_fault_again.c - a request whose completion says -EAGAIN (an older kernel's answer
 * to a large O_DIRECT request it could not start then; injected by the fault plan, three
 * times in a row) is sent again, not counted as an error: the write and the read succeed, the
 * data reads back, the area stays healthy, and the statistics count the three retries, on both
 * engines.  The fault plan's text (ELIXIR_NVME_FAULT) is checked whole: "write:2:again" and
 * "read:1:corrupt" go, while trailing text, a sign or blank before the count, upper case,
 * a count of 0, an unknown kind and corrupt for writes are refused.
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

static void parse(void)
{
    static const char *const bad[] = { "write:3:eio;x", "write:-1:eio", "write: 3:eio",
                                       "write:+3:eio", "WRITE:3:EIO", "write:0:eio",
                                       "write:3:boom", "write:3:corrupt", "sideways:3:eio",
                                       "write:3", "" };
    nvme_area_t *a = nt_open(nt_dir, 16 * NT_MIB, nt_engines[0]);
    NT_EQ(nvme_fault_parse(a, "write:2:again"), 0);
    NT_EQ(nvme_fault_parse(a, "read:1:corrupt"), 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        NT_CHECK(nvme_fault_parse(a, bad[i]) == -EINVAL, "\"%s\" was taken", bad[i]);
    NT_EQ(nvme_fault_parse(a, "any:1:eio"), 0);
    nvme_close(a);                      /* (no I/O: the plans armed never fire) */
    printf("fault plans: %zu bad texts refused\n", sizeof(bad) / sizeof(bad[0]));
}

int main(void)
{
    nt_mkdir();
    for (int e = 0; e < NT_NENGINES; e++)
        run(nt_engines[e]);
    parse();
    return 0;
}
