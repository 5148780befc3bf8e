/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_area_dir.c - an area in a directory: an unnamed file (O_TMPFILE), or, where the
 * file system has none (forced here), a file created and unlinked at once.  Either way the
 * directory shows no entry while the area is open, the space is reserved at open (the file
 * system's free space drops by the area's size) and given back at close, and the size is
 * what was asked for, in whole slots.  The space is checked on a tmpfs of the test's own
 * (nothing else writes there).
 */
#include "nvme_test.h"

static void check_mode(const char *dir, unsigned flags, nvme_area_kind_t want, int space)
{
    uint64_t before = nt_avail(dir);
    nvme_options_t o = nt_options(dir, 64 * NT_MIB + 12345, NVME_ENGINE_AUTO);
    o.test_flags = flags;
    nvme_area_t *a = nt_open_opts(&o);
    NT_EQ(nvme_area_kind(a), want);
    NT_EQ(nvme_size(a), 64 * NT_MIB);
    NT_EQ(nvme_slots_total(a), 32);
    NT_EQ(nt_entries(dir), 0);
    uint64_t during = nt_avail(dir);
    NT_CHECK(!space || before - during >= 60 * NT_MIB,
             "free space fell by %llu bytes, expected the area's 64 MiB reserved at open",
             (unsigned long long)(before - during));
    uint8_t *buf = nvme_staging(a, NULL);
    nt_fill(buf, NVME_DEFAULT_SLOT, 3);
    NT_EQ(nvme_write_sync(a, 31, buf, NVME_DEFAULT_SLOT), 0);
    nvme_close(a);
    NT_EQ(nt_entries(dir), 0);
    uint64_t after = nt_avail(dir);
    NT_CHECK(!space || after + 8 * NT_MIB > before,
             "free space did not come back: %llu before, %llu after", (unsigned long long)before,
             (unsigned long long)after);
}

int main(void)
{
    const char *dir = nt_mkdir();
    check_mode(dir, 0, NVME_AREA_TMPFILE, 0);
    check_mode(dir, NVME_TEST_NO_TMPFILE, NVME_AREA_UNLINKED, 0);
    /* The free space of a file system no one else writes to. */
    const char *mnt = nt_mount_tmpfs(128);
    check_mode(mnt, 0, NVME_AREA_TMPFILE, 1);
    check_mode(mnt, NVME_TEST_NO_TMPFILE, NVME_AREA_UNLINKED, 1);
    return 0;
}
