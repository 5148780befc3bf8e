/* SPDX-License-Identifier: MIT */
/*
 * nvme.c - the NVMe drive on the virtual clock: I/O that a library performs on real files is
 * charged here, so that the simulator's time sees the drive as it sees the GPU's links.
 *
 * The simulated machine has one drive (the machine model's nvme_* figures, options.c): a link
 * with a read lane (drive to host) and a write lane (host to drive), each serving requests in
 * the order they were submitted at its bandwidth, both together held to the drive's duplex
 * figure (link.c), and a fixed latency from submission to completion beside the transfer.
 *
 * The interface is three exported functions that are not CUDA's (simcuda.h documents them):
 * elixirSimIoSubmit(dir, buf, bytes) schedules a request from the host clock's now and returns
 * a ticket, and tells the race checker that the host reads buf (a write to the drive) or
 * writes it (a read) now; elixirSimIoWait(ticket) moves the host clock to the request's completion;
 * elixirSimIoDone(ticket) says whether the host clock has reached it (a poll).  A library
 * finds them with dlsym in the driver it loaded; on a real driver they do not exist, so the
 * library's own behaviour never depends on them.  The ticket is the completion time itself
 * (virtual ns + 1), so a ticket needs no storage: it may be waited for any number of times,
 * from any thread, or never.
 */
#include <stdio.h>

#include "sim.h"

static pthread_mutex_t nvme_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_link_t nvme;             /* under nvme_lock */
static uint64_t requests[2], bytes_moved[2];    /* per direction, under nvme_lock */

/*
 * Schedule `bytes` of I/O in direction `dir` (ELIXIR_SIM_IO_READ: drive to host,
 * ELIXIR_SIM_IO_WRITE: host to drive) from the host clock's now.  Charges the host nothing.
 * The request's host memory, buf (NULL: not said), is accessed by the host now as the race
 * checker sees it: written by a read, read by a write, so that I/O out of memory a copy still
 * writes, or into memory a copy still reads, is a race (the data moves between submission and
 * completion; the checker sees it at submission, the host's last act before).  Returns a ticket
 * (never 0), or 0 for a direction that is neither or before cuInit.
 */
SIM_API uint64_t elixirSimIoSubmit(int dir, const void *buf, uint64_t bytes)
{
    const sim_model_t *m = &sim_cfg.model;
    if (sim_check_init() != CUDA_SUCCESS ||
        (dir != ELIXIR_SIM_IO_READ && dir != ELIXIR_SIM_IO_WRITE))
        return 0;
    double now = sim_host_now(), start;
    double gbps = dir == ELIXIR_SIM_IO_READ ? m->nvme_read_gbps : m->nvme_write_gbps;
    pthread_mutex_lock(&nvme_lock);
    nvme.duplex_gbps = m->nvme_duplex_gbps;
    double end = sim_link_transfer(&nvme, dir, now, now, (double)bytes, gbps, &start);
    requests[dir]++;
    bytes_moved[dir] += bytes;
    pthread_mutex_unlock(&nvme_lock);
    if (buf)
        sim_host_data((uintptr_t)buf, bytes, dir == ELIXIR_SIM_IO_READ,
                      dir == ELIXIR_SIM_IO_READ ? "an NVMe read into host memory"
                                                : "an NVMe write out of host memory");
    return (uint64_t)(end + m->nvme_latency_us * 1000.0) + 1;
}

/* The host clock moves to the completion of `ticket` (elixirSimIoSubmit); 0 does nothing. */
SIM_API void elixirSimIoWait(uint64_t ticket)
{
    if (ticket && sim_check_init() == CUDA_SUCCESS)
        sim_host_advance((double)(ticket - 1), SIM_HOST_IO);
}

/* 1 when the host clock has reached the completion of `ticket` (0 counts as reached). */
SIM_API int elixirSimIoDone(uint64_t ticket)
{
    return !ticket || sim_check_init() != CUDA_SUCCESS || (double)(ticket - 1) <= sim_host_now();
}

/* ELIXIR_SIM_STATS: the requests and bytes charged on the drive, when there were any. */
void sim_nvme_stats(void)
{
    pthread_mutex_lock(&nvme_lock);
    if (requests[0] || requests[1])
        fprintf(stderr, "elixir-sim stats:   nvme read %llu bytes in %llu requests, "
                "write %llu bytes in %llu requests\n", (unsigned long long)bytes_moved[0],
                (unsigned long long)requests[0], (unsigned long long)bytes_moved[1],
                (unsigned long long)requests[1]);
    pthread_mutex_unlock(&nvme_lock);
}
