/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_cleanup_thread_exit.c - exit() called from another thread while the main
 * thread is waiting for the area's I/O leaves nothing in the directory and its space comes
 * back (tests/nvme_cleanup.h).
 */
#include <pthread.h>

#include "nvme_cleanup.h"

static void *exiter(void *arg)
{
    nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
    exit(3);
}

static void die(nvme_area_t *a, int ready_fd)
{
    pthread_t t;
    if (write(ready_fd, "r", 1) != 1 || pthread_create(&t, NULL, exiter, NULL))
        _exit(13);
    uint8_t *buf = nvme_staging(a, NULL);
    nvme_done_t d[8];
    for (;;) {
        nvme_complete(a, d, 8, 8);
        for (uint32_t s = 0; s < 8; s++)
            nvme_write(a, s, buf, 2 * NT_MIB, s);
        nvme_submit(a);
    }
}

int main(void)
{
    return nt_cleanup_main(die, 3, 0);
}
