/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_area_errors.c - nvme_open() refuses bad options with -EINVAL (no path, a slot or
 * block size not a multiple of 4 KiB, a block size that does not divide the slot, a staging
 * pool not aligned), a path that does not exist with -ENOENT, something neither a directory,
 * a regular file nor a block device with -EINVAL, and an area larger than its file system
 * with -ENOSPC, leaving nothing behind.
 */
#include "nvme_test.h"

static void expect(nvme_options_t o, int want, const char *what)
{
    nvme_area_t *a = NULL;
    int got = nvme_open(&o, &a);
    NT_CHECK(got == want, "%s: expected %d (%s), got %d (%s)", what, want, strerror(-want), got,
             strerror(-got));
    NT_CHECK(!a, "%s: an area came back with the error", what);
}

int main(void)
{
    const char *dir = nt_mkdir();
    nvme_options_t o = nt_options(dir, 8 * NT_MIB, NVME_ENGINE_AUTO);
    nvme_options_t bad = o;
    bad.path = NULL;
    expect(bad, -EINVAL, "no path");
    bad = o, bad.slot_size = 1000;
    expect(bad, -EINVAL, "slot size 1000");
    bad = o, bad.block_size = 768 * 1024;
    expect(bad, -EINVAL, "block size 768 KiB with 2 MiB slots");
    char *pool = nt_alloc(8192);
    bad = o, bad.staging = pool + 512, bad.staging_bytes = 4096;
    expect(bad, -EINVAL, "staging pool at an odd address");
    free(pool);
    bad = o, bad.path = nt_path("missing");
    expect(bad, -ENOENT, "a path that does not exist");
    bad = o, bad.path = "/dev/null";
    expect(bad, -EINVAL, "a character device");
    const char *mnt = nt_mount_tmpfs(16);
    bad = o, bad.path = mnt, bad.size = 64 * NT_MIB;
    expect(bad, -ENOSPC, "64 MiB on a 16 MiB file system");
    NT_EQ(nt_entries(mnt), 0);
    NT_CHECK(nt_avail(mnt) > 15 * NT_MIB, "space not given back after the failed open");
    return 0;
}
