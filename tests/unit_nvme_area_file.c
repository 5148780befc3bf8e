/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_area_file.c - an area in a regular file the user named: its size is the file's
 * when none is given, a given size grows (preallocates) it, its data outlives the area (the
 * file is the user's and stays), a size that is not a whole number of slots is cut down, and
 * a second area on the same file while the first is open is -EBUSY (it would overwrite it).
 */
#include <fcntl.h>

#include "nvme_test.h"

int main(void)
{
    nt_mkdir();
    const char *path = nt_path("swap");
    int fd = open(path, O_CREAT | O_RDWR, 0600);
    NT_CHECK(fd >= 0 && ftruncate(fd, 8 * NT_MIB + 4096) == 0, "create %s", path);
    close(fd);
    nvme_area_t *a = nt_open(path, 0, NVME_ENGINE_AUTO);
    NT_EQ(nvme_area_kind(a), NVME_AREA_FILE);
    NT_EQ(nvme_size(a), 8 * NT_MIB);
    uint8_t *buf = nvme_staging(a, NULL);
    nt_fill(buf, NVME_DEFAULT_SLOT, 9);
    NT_EQ(nvme_write_sync(a, 3, buf, NVME_DEFAULT_SLOT), 0);
    nvme_close(a);

    a = nt_open(path, 16 * NT_MIB, NVME_ENGINE_AUTO);
    NT_EQ(nvme_size(a), 16 * NT_MIB);
    nvme_area_t *b = NULL;
    nvme_options_t o = nt_options(path, 0, NVME_ENGINE_AUTO);
    NT_EQ(nvme_open(&o, &b), -EBUSY);
    struct stat st;
    NT_CHECK(stat(path, &st) == 0, "stat %s", path);
    NT_EQ(st.st_size, 16 * NT_MIB);
    NT_CHECK((uint64_t)st.st_blocks * 512 >= 16 * NT_MIB, "expected 16 MiB allocated, got %llu",
             (unsigned long long)st.st_blocks * 512);
    buf = nvme_staging(a, NULL);
    memset(buf, 0, NVME_DEFAULT_SLOT);
    NT_EQ(nvme_read_sync(a, 3, buf, NVME_DEFAULT_SLOT), 0);
    long at = nt_differs(buf, NVME_DEFAULT_SLOT, 9);
    NT_CHECK(at < 0, "slot 3 written by the first area: word %ld differs", at);
    nvme_close(a);
    NT_CHECK(access(path, F_OK) == 0, "the user's file %s was removed", path);
    return 0;
}
