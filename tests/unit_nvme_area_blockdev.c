/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_area_blockdev.c - an area on a block device (a loop device here): its size is
 * the device's, a larger size is -ENOSPC, it is opened exclusively (a second area on the same
 * device is -EBUSY), and data round-trips.  Skips when loop devices are not permitted.
 */
#include "nvme_test.h"

int main(void)
{
    nt_mkdir();
    const char *dev = nt_loop_device(16, nt_path("disk.img"));
    nvme_area_t *a = nt_open(dev, 0, NVME_ENGINE_AUTO), *b = NULL;
    NT_EQ(nvme_area_kind(a), NVME_AREA_BLOCKDEV);
    NT_EQ(nvme_size(a), 16 * NT_MIB);
    nvme_options_t o = nt_options(dev, 0, NVME_ENGINE_AUTO);
    NT_EQ(nvme_open(&o, &b), -EBUSY);
    uint8_t *buf = nvme_staging(a, NULL);
    nt_fill(buf, NVME_DEFAULT_SLOT, 4);
    NT_EQ(nvme_write_sync(a, 7, buf, NVME_DEFAULT_SLOT), 0);
    memset(buf, 0, NVME_DEFAULT_SLOT);
    NT_EQ(nvme_read_sync(a, 7, buf, NVME_DEFAULT_SLOT), 0);
    NT_CHECK(nt_differs(buf, NVME_DEFAULT_SLOT, 4) < 0, "slot 7 did not read back");
    nvme_close(a);
    o.size = 32 * NT_MIB;
    NT_EQ(nvme_open(&o, &b), -ENOSPC);
    return 0;
}
