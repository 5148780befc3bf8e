/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_slots.c - the slot allocator: an area of N slots gives N distinct slots, then
 * -ENOSPC; a freed slot is given again; freeing a slot twice or one out of range is -EINVAL;
 * the count of used slots follows.
 */
#include "nvme_test.h"

#define N 37    /* not a multiple of 64: the last bitmap word is partial */

int main(void)
{
    const char *dir = nt_mkdir();
    nvme_options_t o = nt_options(dir, N * 64 * 1024ull, NVME_ENGINE_PSYNC);
    o.slot_size = 64 * 1024;
    o.staging_bytes = 64 * 1024;
    nvme_area_t *a = nt_open_opts(&o);
    NT_EQ(nvme_slots_total(a), N);
    uint8_t seen[N] = { 0 };
    uint32_t s;
    for (int i = 0; i < N; i++) {
        NT_EQ(nvme_slot_alloc(a, &s), 0);
        NT_CHECK(s < N && !seen[s], "slot %u given twice or out of range (%d slots)", s, N);
        seen[s] = 1;
    }
    NT_EQ(nvme_slots_used(a), N);
    NT_EQ(nvme_slot_alloc(a, &s), -ENOSPC);
    NT_EQ(nvme_slot_free(a, 5), 0);
    NT_EQ(nvme_slot_free(a, 5), -EINVAL);
    NT_EQ(nvme_slot_free(a, N), -EINVAL);
    NT_EQ(nvme_slot_free(a, 36), 0);
    NT_EQ(nvme_slots_used(a), N - 2);
    uint32_t x, y;
    NT_EQ(nvme_slot_alloc(a, &x), 0);
    NT_EQ(nvme_slot_alloc(a, &y), 0);
    NT_CHECK((x == 5 && y == 36) || (x == 36 && y == 5), "expected slots 5 and 36 again, got %u %u",
             x, y);
    NT_EQ(nvme_slot_alloc(a, &s), -ENOSPC);
    nvme_close(a);
    return 0;
}
