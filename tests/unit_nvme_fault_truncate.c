/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_fault_truncate.c - the area's file truncated under it (for real, by another
 * open of the user's file): the next write is refused with -EIO and the area degrades with a
 * reason that says so, a read past the new end comes back short (-EIO), a slot still inside
 * the file reads back intact.  Both engines.
 */
#include <fcntl.h>

#include "nvme_test.h"

static void run(const char *path, nvme_engine_kind_t engine)
{
    nvme_area_t *a = nt_open(path, 16 * NT_MIB, engine);
    uint8_t *buf = nvme_staging(a, NULL);
    for (uint32_t s = 0; s < 4; s++) {
        nt_fill(buf, 2 * NT_MIB, s);
        NT_EQ(nvme_write_sync(a, s, buf, 2 * NT_MIB), 0);
    }
    NT_CHECK(truncate(path, 4 * NT_MIB) == 0, "truncate %s: %s", path, strerror(errno));
    NT_EQ(nvme_write_sync(a, 5, buf, 2 * NT_MIB), -EIO);
    char why[256];
    NT_EQ(nvme_degraded(a, why, sizeof(why)), -EIO);
    NT_CHECK(strstr(why, "truncated"), "the reason does not say truncated: \"%s\"", why);
    NT_EQ(nvme_read_sync(a, 3, buf, 2 * NT_MIB), -EIO);
    NT_EQ(nvme_read_sync(a, 1, buf, 2 * NT_MIB), 0);
    NT_CHECK(nt_differs(buf, 2 * NT_MIB, 1) < 0, "slot 1 changed");
    printf("%s: %s\n", nt_engine_name(engine), why);
    nvme_close(a);
}

int main(void)
{
    nt_mkdir();
    const char *path = nt_path("swap");
    for (int e = 0; e < NT_NENGINES; e++) {
        int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
        NT_CHECK(fd >= 0, "create %s", path);
        close(fd);
        run(path, nt_engines[e]);
    }
    return 0;
}
