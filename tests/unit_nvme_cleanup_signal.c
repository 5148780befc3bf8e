/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_cleanup_signal.c - a process killed by a fatal signal (abort(): SIGABRT, no core
 * file; not SIGSEGV, which the sanitizers catch) with writes in flight leaves nothing in the
 * directory and its space comes back (tests/nvme_cleanup.h).
 */
#include "nvme_cleanup.h"

static void die(nvme_area_t *a, int ready_fd)
{
    if (write(ready_fd, "r", 1) != 1)
        _exit(13);
    abort();
}

int main(void)
{
    return nt_cleanup_main(die, 128 + SIGABRT, 0);
}
