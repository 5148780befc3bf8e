/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_fault_real_readonly.c - a device that becomes read-only under the area (a loop
 * device set read-only with blockdev --setro while open): the next write fails with the
 * kernel's error, the area degrades and refuses writes, and what was written before reads
 * back intact.  Both engines; skips without loop devices.
 */
#include "nvme_test.h"

static void run(nvme_engine_kind_t engine)
{
    const char *dev = nt_loop_device(16, nt_path("disk.img"));
    nvme_area_t *a = nt_open(dev, 0, engine);
    uint8_t *buf = nvme_staging(a, NULL);
    nt_fill(buf, 2 * NT_MIB, 1);
    NT_EQ(nvme_write_sync(a, 1, buf, 2 * NT_MIB), 0);
    NT_CHECK(nt_sh("blockdev --setro %s%s", dev, "") == 0, "blockdev --setro %s", dev);
    int r = nvme_write_sync(a, 2, buf, 2 * NT_MIB);
    NT_CHECK(r == -EPERM || r == -EROFS || r == -EIO, "write to a read-only device: expected "
             "-EPERM, -EROFS or -EIO, got %d", r);
    char why[256];
    NT_EQ(nvme_degraded(a, why, sizeof(why)), r);
    NT_EQ(nvme_write_sync(a, 3, buf, 2 * NT_MIB), r);
    memset(buf, 0, 2 * NT_MIB);
    NT_EQ(nvme_read_sync(a, 1, buf, 2 * NT_MIB), 0);
    NT_CHECK(nt_differs(buf, 2 * NT_MIB, 1) < 0, "slot 1 changed");
    printf("%s: %s\n", nt_engine_name(engine), why);
    nvme_close(a);
    nt_sh("blockdev --setrw %s%s", dev, "");
    nt_sh("losetup -d %s%s", dev, "");
    nt_loop[0] = 0;
}

int main(void)
{
    nt_mkdir();
    for (int e = 0; e < NT_NENGINES; e++)
        run(nt_engines[e]);
    return 0;
}
