/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_ledger_nolocks.c - a directory whose file system refuses the ledger's locks
 * (NVME_TEST_NO_LOCKS acts so) still gets its area, sized as if alone: the area opens, says
 * why it has no ledger (ENOLCK), works, and leaves no ledger file in the directory.
 */
#include "nvme_test.h"

int main(void)
{
    const char *dir = nt_mkdir();
    nvme_options_t o = nt_options(dir, 4 * NT_MIB, NVME_ENGINE_AUTO);
    o.test_flags = NVME_TEST_NO_LOCKS;
    nvme_area_t *a = nt_open_opts(&o);
    nvme_ledger_info_t li;
    nvme_area_ledger(a, &li);
    NT_EQ(li.none, ENOLCK);
    NT_EQ(nvme_size(a), 4 * NT_MIB);
    NT_CHECK(!nt_ledger_exists(dir), "a ledger without locks was left in %s", dir);
    uint8_t *buf = nvme_staging(a, NULL);
    nt_fill(buf, 2 * NT_MIB, 5);
    NT_EQ(nvme_write_sync(a, 1, buf, 2 * NT_MIB), 0);
    memset(buf, 0, 2 * NT_MIB);
    NT_EQ(nvme_read_sync(a, 1, buf, 2 * NT_MIB), 0);
    NT_EQ(nt_differs(buf, 2 * NT_MIB, 5), -1);
    nvme_close(a);
    NT_EQ(nt_entries(dir), 0);
    NT_CHECK(!nt_ledger_exists(dir), "a ledger left in %s", dir);
    return 0;
}
