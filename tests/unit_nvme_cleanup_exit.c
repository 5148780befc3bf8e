/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_cleanup_exit.c - a process that exits normally with its area still open and
 * writes in flight (no nvme_close) leaves nothing in the directory and its space comes back
 * (tests/nvme_cleanup.h).
 */
#include "nvme_cleanup.h"

static void die(nvme_area_t *a, int ready_fd)
{
    if (write(ready_fd, "r", 1) != 1)
        _exit(13);
    exit(0);
}

int main(void)
{
    return nt_cleanup_main(die, 0, 0);
}
