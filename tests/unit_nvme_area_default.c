/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_area_default.c - a directory area with no size takes what the file system can
 * spare less the margin (on a 64 MiB tmpfs: 10% of it, since 5% is less than that floor),
 * in whole slots; a second one then gets only what is left, and -ENOSPC once nothing is.
 */
#include "nvme_test.h"

int main(void)
{
    nt_mkdir();
    const char *mnt = nt_mount_tmpfs(64);
    uint64_t avail = nt_avail(mnt), want;
    NT_EQ(nvme_default_size(mnt, NVME_DEFAULT_SLOT, &want), 0);
    uint64_t expect = (avail - 64 * NT_MIB / 10) / NVME_DEFAULT_SLOT * NVME_DEFAULT_SLOT;
    NT_EQ(want, expect);
    nvme_area_t *a = nt_open(mnt, 0, NVME_ENGINE_AUTO), *b = NULL;
    NT_EQ(nvme_size(a), expect);
    nvme_options_t o = nt_options(mnt, 0, NVME_ENGINE_AUTO);
    NT_EQ(nvme_open(&o, &b), -ENOSPC);
    NT_EQ(nt_entries(mnt), 0);
    nvme_close(a);
    return 0;
}
