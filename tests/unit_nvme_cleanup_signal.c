/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_cleanup_signal.c - a process killed by a fatal signal (SIGSEGV, no handler, no
 * core file) with writes in flight leaves nothing in the directory and its space comes back
 * (tests/nvme_cleanup.h).
 */
#include "nvme_cleanup.h"

static void die(nvme_area_t *a, int ready_fd)
{
    if (write(ready_fd, "r", 1) != 1)
        _exit(13);
    raise(SIGSEGV);
}

int main(void)
{
    return nt_cleanup_main(die, 128 + SIGSEGV, 0);
}
