/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_clock.c - the clock hook: submit() runs once per request with its direction,
 * memory and bytes as it goes to the kernel, wait() once per operation with the token submit()
 * returned for its last request when it is handed back; nvme_clock_lookup() finds the
 * functions by name (here in this program, as it finds the simulator's) and says -ENOENT
 * when submit or wait is missing, as on a real driver.  With done(), a poll (nvme_complete
 * without min_wait) hands back only operations whose token done() says the clock reached,
 * however long ago the file finished them; a reap that waits hands them back all the same.
 * A request sent again after -EAGAIN is charged again, and its operation waits for the last.
 */
#include <unistd.h>

#include "nvme_test.h"

static int submits, waits, writes;
static const uint8_t *last_buf;         /* the memory of the last request submitted */
static uint64_t bytes, tokens_waited, due = UINT64_MAX;    /* done(): tokens up to `due` */

/* Exported (-rdynamic), as the simulator exports its pair. */
#define EXPORT __attribute__((visibility("default")))
EXPORT uint64_t test_io_submit(int write, const void *buf, uint64_t n);
EXPORT void test_io_wait(uint64_t token);
EXPORT int test_io_done(uint64_t token);

uint64_t test_io_submit(int write, const void *buf, uint64_t n)
{
    submits++;
    last_buf = buf;
    writes += write;
    bytes += n;
    return 100 + (uint64_t)submits;
}

void test_io_wait(uint64_t token)
{
    waits++;
    tokens_waited += token;
}

int test_io_done(uint64_t token)
{
    return token <= due;
}

/* Polls for up to 1 s: what nvme_complete without min_wait hands back (0 or 1 operation). */
static int poll_for(nvme_area_t *a, nvme_done_t *d)
{
    int n = 0;
    for (int i = 0; i < 100 && n == 0; i++) {
        n = nvme_complete(a, d, 1, 0);
        if (n == 0)
            usleep(10000);
    }
    return n;
}

int main(void)
{
    const char *dir = nt_mkdir();
    nvme_clock_t c;
    NT_EQ(nvme_clock_lookup(&c, "test_io_submit", "no_such_wait", NULL), -ENOENT);
    NT_EQ(nvme_clock_lookup(&c, "test_io_submit", "test_io_wait", "no_such_done"), 0);
    NT_CHECK(c.done == NULL, "a clock without done()");
    NT_EQ(nvme_clock_lookup(&c, "test_io_submit", "test_io_wait", "test_io_done"), 0);
    NT_CHECK(c.done != NULL, "done() found");
    nvme_options_t o = nt_options(dir, 16 * NT_MIB, NVME_ENGINE_AUTO);
    o.block_size = 256 * 1024;
    nvme_area_t *a = nt_open_opts(&o);
    nvme_set_clock(a, &c);
    uint8_t *buf = nvme_staging(a, NULL);
    NT_EQ(nvme_write(a, 0, buf, 2 * NT_MIB, 1), 0);
    NT_EQ(nvme_write(a, 1, buf, 1 * NT_MIB, 2), 0);
    nvme_done_t d[2];
    NT_EQ(nvme_complete(a, d, 2, 2), 2);
    NT_EQ(nvme_read_sync(a, 1, buf, 1 * NT_MIB), 0);
    NT_EQ(submits, 8 + 4 + 4);          /* requests of 256 KiB */
    NT_CHECK(last_buf == buf + 768 * 1024, "the last request's memory: %p, expected %p",
             (const void *)last_buf, (void *)(buf + 768 * 1024));
    NT_EQ(waits, 3);
    NT_EQ(writes, 8 + 4);
    NT_EQ(bytes, 4 * NT_MIB);
    NT_EQ(tokens_waited, 108 + 112 + 116);

    /* Finished on the file, not on the clock: a poll leaves it, whatever the wait. */
    due = 0;
    NT_EQ(nvme_write(a, 2, buf, 1 * NT_MIB, 3), 0);
    NT_EQ(nvme_submit(a), 0);
    NT_EQ(poll_for(a, d), 0);
    NT_EQ(waits, 3);
    due = UINT64_MAX;                   /* the clock reaches it */
    NT_EQ(poll_for(a, d), 1);
    NT_EQ(d[0].tag, 3);
    NT_EQ(d[0].result, 0);
    NT_EQ(waits, 4);
    /* A reap that waits takes it when the clock has not reached it. */
    due = 0;
    NT_EQ(nvme_write(a, 3, buf, 1 * NT_MIB, 4), 0);
    NT_EQ(nvme_complete(a, d, 1, 1), 1);
    NT_EQ(d[0].tag, 4);
    NT_EQ(waits, 5);
    /* A request answered -EAGAIN three times goes to the drive four times: charged each time,
     * and its operation waits for the last. */
    due = UINT64_MAX;
    int before = submits;
    uint64_t waited = tokens_waited;
    NT_EQ(nvme_fault_plan(a, 1, 1, "again"), 0);
    NT_EQ(nvme_write(a, 4, buf, 1 * NT_MIB, 5), 0);
    NT_EQ(nvme_complete(a, d, 1, 1), 1);
    NT_EQ(d[0].result, 0);
    NT_EQ(submits - before, 4 + 3);
    NT_EQ(waits, 6);
    NT_EQ(tokens_waited - waited, 100 + (uint64_t)submits);
    nvme_close(a);
    return 0;
}
