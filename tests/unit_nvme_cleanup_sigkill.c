/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_cleanup_sigkill.c - a process that SIGKILL ends while it keeps writes in flight
 * leaves nothing in the directory and its space comes back (tests/nvme_cleanup.h).
 */
#include "nvme_cleanup.h"

static void die(nvme_area_t *a, int ready_fd)
{
    uint8_t *buf = nvme_staging(a, NULL);
    nvme_done_t d[8];
    if (write(ready_fd, "r", 1) != 1)
        _exit(13);
    for (;;) {
        nvme_complete(a, d, 8, 8);
        for (uint32_t s = 0; s < 8; s++)
            nvme_write(a, s, buf, 2 * NT_MIB, s);
        nvme_submit(a);
    }
}

int main(void)
{
    return nt_cleanup_main(die, 128 + SIGKILL, 1);
}
