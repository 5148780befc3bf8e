/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_pieces.c - operations in pieces (nvme_write_part, nvme_write_more, nvme_read_got,
 * nvme_wait), with both engines and verify on:
 *   - a write goes to the kernel only as far as its bytes were let go: nothing with none,
 *     then one request per piece let go (counted by the clock hook as it goes), while a read
 *     queued behind it passes it;
 *   - the CRC32C (verify) covers the write as let go piece by piece: reading the slot back
 *     whole checks it, and a byte the caller changes in a piece after letting it go reads
 *     back as -EBADMSG, which degrades the area;
 *   - a read reports its arrival one request at a time, with the clock waited for each;
 *   - nvme_wait refuses a write not wholly let go (-EINVAL) and an unknown tag (-ENOENT);
 *   - a tag live in one direction is refused for another operation of it (-EBUSY), not for
 *     one of the other direction, and nvme_write_sync takes none;
 *   - a write begun (its first piece issued) before the area degrades issues nothing more
 *     and fails with the area's error.
 */
#include "nvme_test.h"

#define PIECE (512u * 1024)

static int submits, waits;

#define EXPORT __attribute__((visibility("default")))
EXPORT uint64_t pieces_io_submit(int write, const void *buf, uint64_t n);
EXPORT void pieces_io_wait(uint64_t token);

uint64_t pieces_io_submit(int write, const void *buf, uint64_t n)
{
    (void)write;
    (void)buf;
    NT_CHECK(n == PIECE, "a request of %llu bytes, expected %u", (unsigned long long)n, PIECE);
    return (uint64_t)++submits;
}

void pieces_io_wait(uint64_t token)
{
    waits++;
    (void)token;
}

static void engine(nvme_engine_kind_t e)
{
    nvme_clock_t c;
    NT_EQ(nvme_clock_lookup(&c, "pieces_io_submit", "pieces_io_wait", NULL), 0);
    nvme_options_t o = nt_options(nt_dir, 16 * NT_MIB, e);
    o.block_size = PIECE;
    o.verify = 1;
    nvme_area_t *a = nt_open_opts(&o);
    nvme_set_clock(a, &c);
    submits = waits = 0;
    uint8_t *buf = nvme_staging(a, NULL), *back = buf + 4 * NT_MIB;
    nt_fill(buf, 2 * NT_MIB, 11);
    NT_EQ(nvme_write_part(a, 1, buf, 2 * NT_MIB, 0, 7, NVME_OP_WAITED), 0);
    NT_EQ(nvme_submit(a), 0);
    NT_EQ(submits, 0);
    NT_EQ(nvme_write(a, 0, buf, 2 * NT_MIB, 9), 0);         /* passes the waiting write */
    nvme_done_t d;
    NT_EQ(nvme_complete(a, &d, 1, 1), 1);
    NT_EQ(d.tag, 9);
    NT_EQ(d.result, 0);
    NT_EQ(submits, 4);
    NT_EQ(nvme_wait(a, 7), -EINVAL);
    NT_EQ(nvme_write_more(a, 7, PIECE + 4096), -EINVAL);
    for (uint32_t k = 1; k <= 4; k++) {
        NT_EQ(nvme_write_more(a, 7, k * PIECE), 0);
        NT_EQ(submits, 4 + (int)k);
    }
    NT_EQ(nvme_wait(a, 7), 0);
    NT_EQ(nvme_wait(a, 7), -ENOENT);

    waits = 0;
    NT_EQ(nvme_read_part(a, 1, back, 2 * NT_MIB, 8, NVME_OP_WAITED), 0);
    NT_EQ(nvme_submit(a), 0);
    uint32_t at = 0;
    for (int k = 1; k <= 4; k++) {
        int got = nvme_read_got(a, 8, at, 1);
        NT_EQ(got, (int)(k * PIECE));
        NT_EQ(waits, k);
        at = (uint32_t)got;
    }
    NT_EQ(nvme_wait(a, 8), 0);
    NT_CHECK(nt_differs(back, 2 * NT_MIB, 11) < 0, "slot 1 differs from what was written");

    /* A tag names one operation of each direction at a time; nvme_*_sync's take none. */
    NT_EQ(nvme_write_part(a, 2, buf, 2 * NT_MIB, 0, 0, NVME_OP_WAITED), 0);
    NT_EQ(nvme_write_part(a, 3, buf, 2 * NT_MIB, 0, 0, NVME_OP_WAITED), -EBUSY);
    NT_EQ(nvme_write(a, 3, buf, 2 * NT_MIB, 0), -EBUSY);
    NT_EQ(nvme_read_part(a, 1, back, 2 * NT_MIB, 0, NVME_OP_WAITED), 0);    /* (a read) */
    NT_EQ(nvme_wait(a, 0), -EINVAL);    /* (the write: not let go) */
    NT_EQ(nvme_write_sync(a, 3, buf, 2 * NT_MIB), 0);
    NT_EQ(nvme_write_more(a, 0, 2 * NT_MIB), 0);
    NT_EQ(nvme_wait(a, 0), 0);          /* (the write first: the read is the only one left) */
    NT_EQ(nvme_wait(a, 0), 0);
    NT_EQ(nvme_wait(a, 0), -ENOENT);

    /* A write whose first piece goes before the area degrades (below). */
    uint8_t *begun = buf + 8 * NT_MIB;
    nt_fill(begun, 2 * NT_MIB, 12);
    NT_EQ(nvme_write_part(a, 5, begun, 2 * NT_MIB, PIECE, 6, NVME_OP_WAITED), 0);
    NT_EQ(nvme_submit(a), 0);

    /* A piece changed after it was let go: the slot's CRC32C no longer matches. */
    NT_EQ(nvme_write_part(a, 2, buf, 2 * NT_MIB, PIECE, 3, NVME_OP_WAITED), 0);
    buf[100] ^= 1;
    NT_EQ(nvme_write_more(a, 3, 2 * NT_MIB), 0);
    NT_EQ(nvme_wait(a, 3), 0);
    NT_EQ(nvme_read_sync(a, 2, back, 2 * NT_MIB), -EBADMSG);
    NT_CHECK(nvme_degraded(a, NULL, 0) == -EBADMSG, "not degraded by the mismatch");
    int before = submits;
    NT_EQ(nvme_write_more(a, 6, 2 * NT_MIB), 0);
    NT_EQ(submits, before);
    NT_EQ(nvme_wait(a, 6), -EBADMSG);
    nvme_close(a);
}

int main(void)
{
    nt_mkdir();
    for (int i = 0; i < NT_NENGINES; i++)
        engine(nt_engines[i]);
    return 0;
}
