/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_fault_real_nospace.c - a real device that runs out of space under the area: a
 * 32 MiB loop device over a sparse file on an 8 MiB tmpfs accepts writes until the tmpfs is
 * full, then the kernel fails them (ENOSPC or EIO, as the loop driver reports it).  The
 * failing write reports the error, the area degrades and refuses writes, and every slot
 * written before reads back intact.  Both engines; skips without mount or loop devices.
 */
#include "nvme_test.h"

static void run(const char *mnt, nvme_engine_kind_t engine)
{
    char img[300];
    snprintf(img, sizeof(img), "%s/disk-%d.img", mnt, (int)engine);
    const char *dev = nt_loop_device(32, img);
    nvme_area_t *a = nt_open(dev, 0, engine);
    uint8_t *buf = nvme_staging(a, NULL);
    uint32_t s;
    int r = 0;
    for (s = 0; s < 16 && r == 0; s++) {
        nt_fill(buf, 2 * NT_MIB, s);
        r = nvme_write_sync(a, s, buf, 2 * NT_MIB);
    }
    NT_CHECK(r == -ENOSPC || r == -EIO, "writing 32 MiB over 8 MiB: expected -ENOSPC or -EIO, "
             "got %d after %u slots", r, s);
    char why[256];
    NT_EQ(nvme_degraded(a, why, sizeof(why)), r);
    NT_EQ(nvme_write_sync(a, 0, buf, 2 * NT_MIB), r);
    for (uint32_t k = 0; k + 1 < s; k++) {
        memset(buf, 0, 2 * NT_MIB);
        NT_EQ(nvme_read_sync(a, k, buf, 2 * NT_MIB), 0);
        NT_CHECK(nt_differs(buf, 2 * NT_MIB, k) < 0, "slot %u changed", k);
    }
    printf("%s: after %u slots: %s\n", nt_engine_name(engine), s - 1, why);
    nvme_close(a);
    nt_sh("losetup -d %s%s", dev, "");
    nt_loop[0] = 0;
    unlink(img);
}

int main(void)
{
    nt_mkdir();
    const char *mnt = nt_mount_tmpfs(8);
    for (int e = 0; e < NT_NENGINES; e++)
        run(mnt, nt_engines[e]);
    return 0;
}
