/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_fault_vanish.c - the user's file removed while it is the area: the next write
 * is refused with -ENOENT and the area degrades (its space goes back once the area closes,
 * so nothing more should go there), and what is already there still reads back intact (the
 * open file keeps it).  Both engines.
 */
#include <fcntl.h>

#include "nvme_test.h"

int main(void)
{
    nt_mkdir();
    const char *path = nt_path("swap");
    for (int e = 0; e < NT_NENGINES; e++) {
        int fd = open(path, O_CREAT | O_RDWR, 0600);
        NT_CHECK(fd >= 0, "create %s", path);
        close(fd);
        nvme_area_t *a = nt_open(path, 8 * NT_MIB, nt_engines[e]);
        uint8_t *buf = nvme_staging(a, NULL);
        nt_fill(buf, 2 * NT_MIB, 8);
        NT_EQ(nvme_write_sync(a, 1, buf, 2 * NT_MIB), 0);
        NT_CHECK(unlink(path) == 0, "unlink %s", path);
        NT_EQ(nvme_write_sync(a, 2, buf, 2 * NT_MIB), -ENOENT);
        char why[256];
        NT_EQ(nvme_degraded(a, why, sizeof(why)), -ENOENT);
        memset(buf, 0, 2 * NT_MIB);
        NT_EQ(nvme_read_sync(a, 1, buf, 2 * NT_MIB), 0);
        NT_CHECK(nt_differs(buf, 2 * NT_MIB, 8) < 0, "slot 1 changed");
        printf("%s: %s\n", nt_engine_name(nt_engines[e]), why);
        nvme_close(a);
    }
    return 0;
}
