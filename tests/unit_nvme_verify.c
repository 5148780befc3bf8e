/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_verify.c - with verify, a slot whose bytes changed on the medium reads back as
 * -EBADMSG and degrades the area, and so does a read the fault plan corrupts; without
 * verify the same changed bytes read back silently (it is verify that catches them).  The
 * area is a regular file so the test can change a byte behind the module's back.
 */
#include <fcntl.h>

#include "nvme_test.h"

/* Write slot 2, flip one byte of it in the file, read it back; the read's result. */
static int corrupt_and_read(const char *path, int verify)
{
    nvme_options_t o = nt_options(path, 8 * NT_MIB, NVME_ENGINE_AUTO);
    o.verify = verify;
    nvme_area_t *a = nt_open_opts(&o);
    uint8_t *buf = nvme_staging(a, NULL);
    nt_fill(buf, 2 * NT_MIB, 5);
    NT_EQ(nvme_write_sync(a, 2, buf, 2 * NT_MIB), 0);
    NT_EQ(nvme_read_sync(a, 2, buf, 2 * NT_MIB), 0);
    int fd = open(path, O_RDWR);
    uint8_t byte;
    off_t at = 2 * 2 * NT_MIB + 777;
    NT_CHECK(fd >= 0 && pread(fd, &byte, 1, at) == 1, "read %s", path);
    byte ^= 0x10;
    NT_CHECK(pwrite(fd, &byte, 1, at) == 1 && fsync(fd) == 0, "write %s", path);
    close(fd);
    int r = nvme_read_sync(a, 2, buf, 2 * NT_MIB);
    char why[256];
    int deg = nvme_degraded(a, why, sizeof(why));
    NT_CHECK(deg == (verify ? -EBADMSG : 0), "degraded: expected %d, got %d (%s)",
             verify ? -EBADMSG : 0, deg, why);
    if (verify)
        printf("%s\n", why);
    nvme_close(a);
    return r;
}

int main(void)
{
    nt_mkdir();
    const char *path = nt_path("swap");
    int fd = open(path, O_CREAT | O_RDWR, 0600);
    NT_CHECK(fd >= 0, "create %s", path);
    close(fd);
    NT_EQ(corrupt_and_read(path, 1), -EBADMSG);
    NT_EQ(corrupt_and_read(path, 0), 0);

    nvme_options_t o = nt_options(nt_dir, 8 * NT_MIB, NVME_ENGINE_AUTO);
    o.verify = 1;
    nvme_area_t *a = nt_open_opts(&o);
    uint8_t *buf = nvme_staging(a, NULL);
    NT_EQ(nvme_fault_plan(a, 1, 1, "corrupt"), -EINVAL);
    NT_EQ(nvme_fault_parse(a, "read:1:corrupt"), 0);
    nt_fill(buf, 2 * NT_MIB, 6);
    NT_EQ(nvme_write_sync(a, 0, buf, 2 * NT_MIB), 0);
    NT_EQ(nvme_read_sync(a, 0, buf, 2 * NT_MIB), -EBADMSG);
    NT_EQ(nvme_read_sync(a, 0, buf, 2 * NT_MIB), 0);
    NT_CHECK(nt_differs(buf, 2 * NT_MIB, 6) < 0, "slot 0 differs on the second read");
    nvme_close(a);
    return 0;
}
