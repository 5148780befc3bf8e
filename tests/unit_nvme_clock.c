/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_clock.c - the clock hook: submit() runs once per request with its direction
 * and bytes as it goes to the kernel, wait() once per operation with the token submit()
 * returned for its last request when it is handed back; nvme_clock_lookup() finds the pair by name (here in this program, as it finds the
 * simulator's) and says -ENOENT when either is missing, as on a real driver.
 */
#include "nvme_test.h"

static int submits, waits, writes;
static uint64_t bytes, tokens_waited;

/* Exported (-rdynamic), as the simulator exports its pair. */
#define EXPORT __attribute__((visibility("default")))
EXPORT uint64_t test_io_submit(int write, uint64_t n);
EXPORT void test_io_wait(uint64_t token);

uint64_t test_io_submit(int write, uint64_t n)
{
    submits++;
    writes += write;
    bytes += n;
    return 100 + (uint64_t)submits;
}

void test_io_wait(uint64_t token)
{
    waits++;
    tokens_waited += token;
}

int main(void)
{
    const char *dir = nt_mkdir();
    nvme_clock_t c;
    NT_EQ(nvme_clock_lookup(&c, "test_io_submit", "no_such_wait"), -ENOENT);
    NT_EQ(nvme_clock_lookup(&c, "test_io_submit", "test_io_wait"), 0);
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
    NT_EQ(waits, 3);
    NT_EQ(writes, 8 + 4);
    NT_EQ(bytes, 4 * NT_MIB);
    NT_EQ(tokens_waited, 108 + 112 + 116);
    nvme_close(a);
    return 0;
}
