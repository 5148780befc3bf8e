/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_fault_reap.c - waiting for I/O fails (the fault plan's "reap": the engine's wait
 * for a completion returns EIO once, the request still in flight): the waiting call reports
 * the error, the area degrades with a reason that says so and refuses every new write (a slot
 * freed meanwhile could be written again while the lost write may still land in it), and reads
 * go on: data already there reads back intact.  A read whose wait failed is let go as it
 * finishes, and a read into its buffer waits for it first.  The fault plan's "stuck": every
 * wait for completions fails from then on (the waiter gets EIO each time), while a poll
 * still reaps the read when it is done.  Both engines.
 */
#include "nvme_test.h"

static void run(nvme_engine_kind_t engine)
{
    nvme_options_t o = nt_options(nt_dir, 16 * NT_MIB, engine);
    nvme_area_t *a = nt_open_opts(&o);
    uint8_t *buf = nvme_staging(a, NULL);
    for (uint32_t s = 0; s < 3; s++) {
        nt_fill(buf + s * 2ull * NT_MIB, 2 * NT_MIB, s);
        if (s < 2)
            NT_EQ(nvme_write_sync(a, s, buf + s * 2ull * NT_MIB, 2 * NT_MIB), 0);
    }
    NT_EQ(nvme_fault_plan(a, 1, 1, "reap"), 0);
    NT_EQ(nvme_write_sync(a, 2, buf + 4 * NT_MIB, 2 * NT_MIB), -EIO);
    char why[256];
    NT_EQ(nvme_degraded(a, why, sizeof(why)), -EIO);
    NT_CHECK(strstr(why, "waiting for I/O") != NULL, "the reason does not say so: \"%s\"", why);
    NT_EQ(nvme_write(a, 0, buf, 2 * NT_MIB, 9), -EIO);
    NT_EQ(nvme_write_sync(a, 1, buf, 2 * NT_MIB), -EIO);
    /* The lost write still reads its buffer: a read into it waits for the write first. */
    NT_EQ(nvme_read_sync(a, 0, buf + 4 * NT_MIB, 2 * NT_MIB), 0);
    NT_EQ(nvme_pending(a), 0);
    NT_CHECK(nt_differs(buf + 4 * NT_MIB, 2 * NT_MIB, 0) < 0, "slot 0 read back wrong");
    for (uint32_t s = 0; s < 2; s++) {
        uint8_t *in = buf + 6 * NT_MIB;
        memset(in, 0, 2 * NT_MIB);
        NT_EQ(nvme_read_sync(a, s, in, 2 * NT_MIB), 0);
        NT_CHECK(nt_differs(in, 2 * NT_MIB, s) < 0, "slot %u changed after the fault", s);
    }
    /* A read whose wait fails stays in flight into its buffer: a read queued on the same
     * buffer waits for it first (else it could land over the new data), and it is let go
     * as it finishes (else it would hold an operation of the area for good).  Through
     * nvme_read_sync, then through nvme_wait (the tag of the lost read free again). */
    uint8_t *in = buf + 6 * NT_MIB;
    for (int waited = 0; waited < 2; waited++) {
        uint64_t tag = 5;
        NT_EQ(nvme_fault_plan(a, 0, 1, "reap"), 0);
        if (waited) {
            NT_EQ(nvme_read_part(a, 0, in, 2 * NT_MIB, tag, NVME_OP_WAITED), 0);
            NT_EQ(nvme_submit(a), 0);
            NT_EQ(nvme_wait(a, tag), -EIO);
        } else {
            NT_EQ(nvme_read_sync(a, 0, in, 2 * NT_MIB), -EIO);
        }
        NT_EQ(nvme_pending(a), 1);
        memset(in, 0, 2 * NT_MIB);
        NT_EQ(nvme_read(a, 1, in, 2 * NT_MIB, tag), 0);
        NT_EQ(nvme_pending(a), 1);
        nvme_done_t done;
        NT_EQ(nvme_complete(a, &done, 1, 1), 1);
        NT_CHECK(done.tag == tag && done.result == 0, "read tag %llu result %d",
                 (unsigned long long)done.tag, done.result);
        NT_CHECK(nt_differs(in, 2 * NT_MIB, 1) < 0, "slot 1 read back wrong after a failed wait");
        NT_EQ(nvme_pending(a), 0);
    }
    printf("%s: reap: %s\n", nt_engine_name(engine), why);
    /* Stuck: a read queued, its every wait failing; polled until it is done. */
    NT_EQ(nvme_fault_plan(a, 0, 1, "stuck"), 0);
    memset(in, 0, 2 * NT_MIB);
    NT_EQ(nvme_read(a, 1, in, 2 * NT_MIB, 6), 0);
    NT_EQ(nvme_submit(a), 0);
    nvme_done_t done;
    for (int k = 0; k < 3; k++)
        NT_EQ(nvme_complete(a, &done, 1, 1), -EIO);
    int got = 0;
    for (int k = 0; k < 1000000 && got == 0; k++)
        got = nvme_complete(a, &done, 1, 0);
    NT_EQ(got, 1);
    NT_CHECK(done.tag == 6 && done.result == 0, "stuck read: tag %llu result %d",
             (unsigned long long)done.tag, done.result);
    NT_CHECK(nt_differs(in, 2 * NT_MIB, 1) < 0, "slot 1 read back wrong while waits fail");
    printf("%s: stuck: every wait failed, the poll reaped the read\n", nt_engine_name(engine));
    nvme_close(a);
}

int main(void)
{
    nt_mkdir();
    for (int e = 0; e < NT_NENGINES; e++)
        run(nt_engines[e]);
    return 0;
}
