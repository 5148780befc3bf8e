/* SPDX-License-Identifier: MIT */
/*
 * nvme_tier.c - the NVMe tier's throughput, for bench/nvme_fio.sh to set beside fio's.
 *
 *   nvme_tier --file PATH --size BYTES --rw write|read|randwrite|randread
 *             [--qd N] [--bs BYTES] [--chunk BYTES] [--engine uring|psync] [--loops N]
 *
 * Opens PATH (a regular file or block device: the same file fio used) as an area of SIZE
 * bytes cut into chunk-sized slots (2 MiB), and moves every slot once per loop, in order or
 * in a random permutation, with N requests of BS bytes in flight (as fio's iodepth), from the
 * registered staging pool, keeping the queue full (an operation queued as soon as one
 * completes).
 * Prints one line: "MiB/s <figure> bytes <n> seconds <s> engine <name>".  Without arguments
 * it says that bench/nvme_fio.sh runs it and exits 0 (make bench runs every program).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvme.h"

typedef struct args {
    const char *file, *rw;
    uint64_t size;
    unsigned qd, bs, chunk, loops;
    nvme_engine_kind_t engine;
} args_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse(int argc, char **argv, args_t *a)
{
    static const struct option opts[] = {
        { "file", 1, 0, 'f' }, { "size", 1, 0, 's' }, { "rw", 1, 0, 'r' },
        { "qd", 1, 0, 'q' },   { "bs", 1, 0, 'b' },   { "chunk", 1, 0, 'c' },
        { "engine", 1, 0, 'e' }, { "loops", 1, 0, 'l' }, { 0, 0, 0, 0 },
    };
    *a = (args_t){ .qd = NVME_DEFAULT_QUEUE_DEPTH, .chunk = NVME_DEFAULT_SLOT, .loops = 1 };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'f': a->file = optarg; break;
        case 's': a->size = strtoull(optarg, NULL, 0); break;
        case 'r': a->rw = optarg; break;
        case 'q': a->qd = (unsigned)atoi(optarg); break;
        case 'b': a->bs = (unsigned)strtoul(optarg, NULL, 0); break;
        case 'c': a->chunk = (unsigned)strtoul(optarg, NULL, 0); break;
        case 'l': a->loops = (unsigned)atoi(optarg); break;
        case 'e': a->engine = !strcmp(optarg, "psync") ? NVME_ENGINE_PSYNC : NVME_ENGINE_URING;
                  break;
        default: return -EINVAL;
        }
    }
    if (!a->file || !a->size || !a->rw || !a->qd || !a->loops ||
        (strcmp(a->rw, "write") && strcmp(a->rw, "read") && strcmp(a->rw, "randwrite") &&
         strcmp(a->rw, "randread"))) {
        fprintf(stderr, "nvme_tier: --file, --size and --rw write|read|randwrite|randread are "
                        "needed; --qd, --loops at least 1\n");
        return -EINVAL;
    }
    return 0;
}

/* The slots in the order they are moved: 0..n-1, or a random permutation. */
static uint32_t *slot_order(uint32_t n, int random)
{
    uint32_t *o = malloc(n * sizeof(*o));
    for (uint32_t i = 0; o && i < n; i++)
        o[i] = i;
    for (uint32_t i = n - 1; o && random && i > 0; i--) {
        uint32_t j = (uint32_t)(((uint64_t)rand() << 16 ^ (uint64_t)rand()) % (i + 1)), t = o[i];
        o[i] = o[j];
        o[j] = t;
    }
    return o;
}

/* Move the n slots of order once each, keeping up to max operations queued; 0 or -errno. */
static int run(nvme_area_t *a, const uint32_t *order, uint32_t n, int write, unsigned max)
{
    uint8_t *pool = nvme_staging(a, NULL);
    uint32_t chunk = nvme_slot_size(a), next = 0, done = 0;
    nvme_done_t d[64];
    while (done < n) {
        while (next < n && next - done < max) {
            uint8_t *buf = pool + (size_t)(next % max) * chunk;
            int r = write ? nvme_write(a, order[next], buf, chunk, next)
                          : nvme_read(a, order[next], buf, chunk, next);
            if (r)
                return r;
            next++;
        }
        nvme_submit(a);
        int got = nvme_complete(a, d, 64, 1);
        if (got < 0)
            return got;
        for (int i = 0; i < got; i++)
            if (d[i].result)
                return d[i].result;
        done += (uint32_t)got;
    }
    return 0;
}

int main(int argc, char **argv)
{
    args_t g;
    if (argc == 1) {
        printf("nvme_tier: run by bench/nvme_fio.sh beside fio (see its header)\n");
        return 0;
    }
    if (parse(argc, argv, &g))
        return 2;
    unsigned per = g.chunk / (g.bs ? g.bs : g.chunk);        /* requests per chunk */
    unsigned max = (g.qd + per - 1) / per + 2;                 /* operations to keep queued */
    nvme_options_t o = { .path = g.file, .size = g.size, .slot_size = g.chunk,
                         .queue_depth = g.qd,
                         .block_size = g.bs, .max_ops = max, .engine = g.engine,
                         .staging_bytes = (size_t)max * g.chunk };
    nvme_area_t *a;
    int r = nvme_open(&o, &a);
    if (r) {
        fprintf(stderr, "nvme_tier: open %s: %s\n", g.file, strerror(-r));
        return 1;
    }
    memset(nvme_staging(a, NULL), 0xa5, (size_t)max * g.chunk);
    uint32_t n = nvme_slots_total(a);
    uint32_t *order = slot_order(n, g.rw[0] == 'r' && g.rw[1] == 'a');
    int write = strstr(g.rw, "write") != NULL;
    double t0 = now();
    for (unsigned l = 0; l < g.loops && !r; l++)
        r = run(a, order, n, write, max);
    double dt = now() - t0;
    if (r) {
        fprintf(stderr, "nvme_tier: %s: %s\n", g.rw, strerror(-r));
        return 1;
    }
    double bytes = (double)n * g.chunk * g.loops;
    printf("MiB/s %.1f bytes %.0f seconds %.3f engine %s\n", bytes / dt / (1 << 20), bytes, dt,
           nvme_engine(a, NULL, 0));
    nvme_close(a);
    free(order);
    return 0;
}
