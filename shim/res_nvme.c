/* SPDX-License-Identifier: MIT */
/*
 * res_nvme.c - the NVMe tier behind host memory, for the reactive engine: when the host
 * budget has no room, a host chunk whose every use the shim has seen is written to its slot
 * of the swap area (iouring/nvme.h) and its address unmapped (TIER_NVME, chunk_t.phys is the
 * slot); an operation that reaches such a chunk reads it back, synchronously, into new GPU
 * memory mapped at the same address before the operation is enqueued.  Both go through
 * staging in pieces (res_int.h, RES_NVME_PIECES): a read's piece is copied to the GPU as soon
 * as it arrived, a write's piece written as soon as its copy to staging completed.
 *
 * The area is the process's (ELIXIR_NVME_PATH, opened with the first arena), shared by every
 * device.  I/O goes through one staging pool of host memory of the shim's own, pinned
 * (cuMemHostRegister, portable) in the context of the arena that opened the area, or, when that
 * context is destroyed, in the one its arena takes (res_nvme_home_lost, res_nvme_home_taken;
 * unpinned meanwhile: copies to and from it are then synchronous), and registered with
 * io_uring: its first chunk is the reactive engine's, under a mutex (innermost: taken under a
 * device's lock, never the other way round); with ELIXIR_POLICY=plan RES_NVME_STAGES more are
 * the plan's asynchronous moves' (res_plan_nvme.c).
 *
 * "Every use seen" (DESIGN.md invariant 2).  A chunk is exposed (chunk_t.exposed) once an
 * operation the shim cannot see into (a launch whose arguments it cannot read, a graph
 * launch, arguments set with cuParamSet*) ran while the chunk was in use: that operation may
 * have left the chunk's address anywhere.  Exposed chunks stay in host memory until freed;
 * an allocation made after the last such operation is not exposed.  A pointer the
 * application itself stores in device memory and a kernel reads back is not seen (as for
 * the ordering of such a use: docs/limits.md).
 *
 * Nothing is lost (invariant 5): a chunk's host copy stays mapped and authoritative until its
 * write completed with 0; a write that fails marks the tier degraded (one log line), after
 * which nothing more goes to it and allocations beyond GPU and host fail with
 * CUDA_ERROR_OUT_OF_MEMORY.  Data already on NVMe is still read back.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "../iouring/nvme.h"
#include "res_int.h"
#include "res_nvme.h"
#include "res_ptime.h"

static struct {
    nvme_area_t *area;
    void *staging;                  /* pinned memory, registered with the area: a chunk for
                                     * the reactive engine, RES_NVME_STAGES for the plan */
    size_t staging_bytes;
    CUcontext pinned_in;            /* the context staging is pinned in (NULL: not pinned) */
    uint64_t chunk;
    pthread_mutex_t io;             /* the staging pool's user */
    _Atomic int degraded_logged;
    const char *engine;
    /* Counters (under io). */
    uint64_t writes, reads, bytes_w, bytes_r, failed, failed_reads;
    double io_s;
} nv = { .io = PTHREAD_MUTEX_INITIALIZER };

static const nvme_engine_kind_t engines[] = { NVME_ENGINE_AUTO, NVME_ENGINE_URING,
                                              NVME_ENGINE_PSYNC };

/* Host memory p of `bytes` pinned (pin) or unpinned in ctx, portable: the driver's result. */
static CUresult staging_pin(CUcontext ctx, void *p, size_t bytes, int pin)
{
    CUcontext popped;
    int pushed = DRV(cuCtxPushCurrent_v2)(ctx) == CUDA_SUCCESS;
    CUresult r = pin ? DRV(cuMemHostRegister_v2)(p, bytes, CU_MEMHOSTREGISTER_PORTABLE)
                     : DRV(cuMemHostUnregister)(p);
    if (pushed)
        DRV(cuCtxPopCurrent_v2)(&popped);
    return r;
}

/* Page-aligned host memory of the shim's own for the staging pool, pinned in d's context (it
 * outlives the context: res_nvme_home_lost); NULL on failure. */
static void *staging_alloc(res_dev_t *d, size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (staging_pin(d->ctx, p, bytes, 1) != CUDA_SUCCESS) {
        munmap(p, bytes);
        return NULL;
    }
    return p;
}

static void staging_free(CUcontext ctx, void *p, size_t bytes)
{
    staging_pin(ctx, p, bytes, 0);
    munmap(p, bytes);
}

void res_nvme_home_lost(res_dev_t *d, CUcontext ctx)
{
    if (!nv.staging || nv.pinned_in != ctx)
        return;
    pthread_mutex_lock(&nv.io);         /* (the reactive engine's I/O through it is over) */
    staging_pin(ctx, nv.staging, nv.staging_bytes, 0);
    nv.pinned_in = NULL;
    pthread_mutex_unlock(&nv.io);
    SHIM_INFO(RES, "device %d: the NVMe tier's staging memory is no longer pinned: the context "
              "it was pinned in goes", d->device);
}

void res_nvme_home_taken(res_dev_t *d)
{
    if (!nv.staging || nv.pinned_in || !d->ctx)
        return;
    pthread_mutex_lock(&nv.io);
    int pinned = !nv.pinned_in &&
                 staging_pin(d->ctx, nv.staging, nv.staging_bytes, 1) == CUDA_SUCCESS;
    if (pinned)
        nv.pinned_in = d->ctx;
    pthread_mutex_unlock(&nv.io);
    if (pinned)
        SHIM_INFO(RES, "device %d: the NVMe tier's staging memory is pinned again, in the "
                  "context the arena took", d->device);
}

/* The size ELIXIR_NVME_MEMORY asks for into *size: a size, or a percentage of what the file
 * system at a directory can spare, in whole chunks; 0 lets the module choose (auto: a file's
 * or device's size, a share of a directory's).  -ERANGE, reported (the program stops), for a
 * size under one chunk or a percentage of anything but a directory; else 0. */
static int wanted_size(const char *path, uint64_t chunk, uint64_t *size)
{
    shim_mem_t m = shim_opt_mem(SHIM_OPT_NVME_MEMORY);
    uint64_t spare = 0;
    struct stat st;
    char b[32];
    *size = 0;
    if (m.kind == SHIM_MEM_AUTO)
        return 0;
    if (m.kind == SHIM_MEM_PERCENT && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))) {
        shim_log_fatal("ELIXIR_NVME_MEMORY=\"%s\" is a percentage of what a directory's file "
                       "system can spare, but ELIXIR_NVME_PATH=%s is not a directory: expected "
                       "auto (the file's or device's size) or a size; the program stops (exit "
                       "status %d)", shim_opt_str(SHIM_OPT_NVME_MEMORY), path, SHIM_EXIT_CONFIG);
        return -ERANGE;
    }
    int err = 0;
    if (m.kind == SHIM_MEM_BYTES)
        *size = m.bytes / chunk * chunk;
    else if ((err = nvme_default_size(path, (uint32_t)chunk, &spare)) == 0)
        *size = (uint64_t)((double)spare * m.percent / 100.0) / chunk * chunk;
    if (*size)
        return 0;
    if (err && err != -ENOSPC) {
        shim_log_fatal("ELIXIR_NVME_MEMORY=\"%s\": cannot tell what the file system of %s can "
                       "spare (%s): expected auto or a size there; the program stops (exit "
                       "status %d)", shim_opt_str(SHIM_OPT_NVME_MEMORY), path, strerror(-err),
                       SHIM_EXIT_CONFIG);
        return -ERANGE;
    }
    shim_log_fatal("ELIXIR_NVME_MEMORY=\"%s\" gives the NVMe area less than one chunk (%s) "
                   "in %s: expected auto, or a size or percentage that comes to at least one "
                   "chunk; the program stops (exit status %d)",
                   shim_opt_str(SHIM_OPT_NVME_MEMORY), shim_fmt_size(chunk, b), path,
                   SHIM_EXIT_CONFIG);
    return -ERANGE;
}

/* ELIXIR_NVME_SHARE: processes expected to share a directory area's file system; auto: the
 * count of processes on this node the launcher started (torchrun, Open MPI, MPICH), else 1. */
static unsigned share(void)
{
    static const char *const vars[] = { "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                        "MPI_LOCALNRANKS" };
    long n = shim_opt_int(SHIM_OPT_NVME_SHARE);
    for (unsigned i = 0; !n && i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long k = v ? strtol(v, &end, 10) : 0;
        if (v && *v && !*end && k >= 1 && k <= 4096)
            n = k;
    }
    return n ? (unsigned)n : 1;
}

/* The module's options from ELIXIR_NVME_*, for chunks of d's size (no staging yet, nor its
 * size: wanted_size). */
static nvme_options_t area_options(const res_dev_t *d, const char *path)
{
    nvme_options_t o = {
        .path = path,
        .slot_size = (uint32_t)d->chunk,
        .queue_depth = (uint32_t)shim_opt_int(SHIM_OPT_NVME_QUEUE_DEPTH),
        .block_size = (uint32_t)shim_opt_int(SHIM_OPT_NVME_BLOCK),
        .verify = (int)shim_opt_int(SHIM_OPT_NVME_VERIFY),
        .engine = engines[shim_opt_int(SHIM_OPT_NVME_ENGINE)],
        .staging_bytes = (1 + (res_policy_plan ? RES_NVME_STAGES : 0)) * d->chunk,
        .share = share(),
    };
    if (o.block_size > o.slot_size)
        o.block_size = o.slot_size;
    return o;
}

/* What the directory's ledger said when the area opened, when there was anything to say. */
static void ledger_said(const char *path)
{
    nvme_ledger_info_t li;
    nvme_area_ledger(nv.area, &li);
    if (li.none)
        SHIM_WARN(RES, "NVMe tier: %s has no ledger this process can use (%s: its file system "
                  "refuses the locks, or another user's is there): processes sharing it do not "
                  "split it; give each an ELIXIR_NVME_MEMORY", path, strerror(li.none));
    else if (li.live || li.reclaimed || li.share > 1)
        SHIM_INFO(RES, "NVMe tier: the ledger of %s: other live areas %u (%llu MiB), records "
                  "of areas gone reclaimed %u; a default size is 1/%u of %llu MiB spare", path,
                  li.live, (unsigned long long)(li.live_bytes >> 20), li.reclaimed, li.share,
                  (unsigned long long)(li.spare >> 20));
}

/* The area is open: the clock hook where the simulator offers one, the test-only fault plan,
 * and one line saying what runs (a warning when io_uring was wanted and does not). */
static void area_started(const char *path)
{
    char why[256] = "";
    nvme_clock_t clock;
    nv.engine = nvme_engine(nv.area, why, sizeof(why));
    if (nvme_clock_lookup(&clock, "elixirSimIoSubmit", "elixirSimIoWait",
                          "elixirSimIoDone") == 0)
        nvme_set_clock(nv.area, &clock);
    const char *fault = shim_opt_str(SHIM_OPT_NVME_FAULT);
    if (fault[0] && nvme_fault_parse(nv.area, fault) < 0)
        SHIM_ERROR(RES, "ELIXIR_NVME_FAULT=\"%s\" is not valid: expected write:N:KIND, "
                   "read:N:KIND or any:N:KIND, N from 1 (KIND: eio, enospc, erofs, short, reap, "
                   "stuck, again; corrupt for reads)", fault);
    if (why[0])
        SHIM_WARN(RES, "NVMe tier: %llu MiB in %s, %u slots, engine %s (io_uring: %s)",
                  (unsigned long long)(nvme_size(nv.area) >> 20), path,
                  nvme_slots_total(nv.area), nv.engine, why);
    else
        SHIM_INFO(RES, "NVMe tier: %llu MiB in %s, %u slots, engine %s",
                  (unsigned long long)(nvme_size(nv.area) >> 20), path,
                  nvme_slots_total(nv.area), nv.engine);
    ledger_said(path);
}

/* Say why the area did not open (the program stops); for want of space in a directory,
 * beside whom. */
static void open_failed(const char *path, const nvme_options_t *o, int err)
{
    nvme_ledger_info_t li;
    if (err != -ENOSPC || nvme_ledger_read(path, &li) < 0 || !li.live) {
        shim_log_fatal("ELIXIR_NVME_PATH=%s: cannot open the swap area (%s): expected a "
                       "directory, regular file or block device this process can open for "
                       "O_DIRECT I/O, with room for the area%s; the program stops (exit status "
                       "%d)", path, strerror(-err),
                       o->engine == NVME_ENGINE_URING ? ", and io_uring (ELIXIR_NVME_ENGINE)"
                                                      : "", SHIM_EXIT_CONFIG);
        return;
    }
    char want[64] = "a share of one chunk or more";
    if (o->size)
        snprintf(want, sizeof(want), "%llu MiB", (unsigned long long)(o->size >> 20));
    shim_log_fatal("ELIXIR_NVME_PATH=%s: no room for %s beside the areas other processes hold "
                   "there (%u live, %llu MiB; %llu MiB spare): give each process an "
                   "ELIXIR_NVME_MEMORY that fits, or set ELIXIR_NVME_SHARE; the program stops "
                   "(exit status %d)", path, want, li.live,
                   (unsigned long long)(li.live_bytes >> 20),
                   (unsigned long long)(li.spare >> 20), SHIM_EXIT_CONFIG);
}

/* At exit the area (never closed: other threads may still use it) leaves its directory's
 * ledger, so that a run that ends normally leaves nothing there. */
static void leave_ledger(void)
{
    if (nv.area)
        nvme_ledger_leave(nv.area);
}

int res_nvme_setup(res_dev_t *d, uint64_t *bytes)
{
    const char *path = shim_opt_str(SHIM_OPT_NVME_PATH);
    *bytes = 0;
    if (nv.area && d->chunk != nv.chunk) {
        shim_log_fatal("ELIXIR_NVME_PATH=%s: device %d's chunk (%llu bytes) is not the NVMe "
                       "area's slot (%llu bytes, the first device's chunk): one area serves "
                       "devices of one granularity; the program stops (exit status %d)", path,
                       d->device, (unsigned long long)d->chunk, (unsigned long long)nv.chunk,
                       SHIM_EXIT_CONFIG);
        return -ERANGE;
    }
    if (nv.area) {
        d->nvme_on = 1;
        *bytes = nvme_size(nv.area);
        return 0;
    }
    if (!path[0])
        return 0;
    if (d->chunk % NVME_ALIGN) {
        shim_log_fatal("ELIXIR_NVME_PATH=%s: device %d's chunk (%llu bytes) is not a multiple "
                       "of %u, as O_DIRECT I/O needs: no NVMe tier can serve it; the program "
                       "stops (exit status %d)", path, d->device, (unsigned long long)d->chunk,
                       (unsigned)NVME_ALIGN, SHIM_EXIT_CONFIG);
        return -ERANGE;
    }
    nvme_options_t o = area_options(d, path);
    if (wanted_size(path, d->chunk, &o.size) < 0)
        return -ERANGE;
    if (!(o.staging = staging_alloc(d, o.staging_bytes))) {
        shim_log_fatal("ELIXIR_NVME_PATH=%s: no pinned staging memory (%llu MiB) for the NVMe "
                       "tier; the program stops (exit status %d)", path,
                       (unsigned long long)(o.staging_bytes >> 20), SHIM_EXIT_CONFIG);
        return -ERANGE;
    }
    int r = nvme_open(&o, &nv.area);
    if (r < 0) {
        open_failed(path, &o, r);
        staging_free(d->ctx, o.staging, o.staging_bytes);
        nv.area = NULL;
        return -ERANGE;
    }
    nv.staging = o.staging;
    nv.staging_bytes = o.staging_bytes;
    nv.pinned_in = d->ctx;
    nv.chunk = d->chunk;
    area_started(path);
    atexit(leave_ledger);
    d->nvme_on = 1;
    *bytes = nvme_size(nv.area);
    return 0;
}

/* The area is healthy; else the first call logs why it is not (once). */
static int healthy(void)
{
    char why[256];
    if (nvme_degraded(nv.area, why, sizeof(why)) == 0)
        return 1;
    if (!atomic_exchange(&nv.degraded_logged, 1))
        SHIM_ERROR(RES, "NVMe tier degraded, no more data goes to it: %s", why);
    return 0;
}

/* A chunk that may go to NVMe: in mapped host memory or a host piece, nothing holding,
 * pinning or waiting on it, never exposed.  (One that the operation being prepared reaches
 * may go while that operation brings its other chunks in: res_reach_away looks again.) */
static int demotable(const chunk_t *c)
{
    return c->tier == TIER_HOST && !c->held && !c->pinned && !c->waiting && !c->exposed &&
           !c->stray && !c->moving;
}

uint32_t res_nvme_piece(const res_dev_t *d)
{
    uint32_t block = nvme_block_size(nv.area), n = (uint32_t)(d->chunk / block);
    return block * ((n + RES_NVME_PIECES - 1) / RES_NVME_PIECES);
}

/* The reactive engine's tags for its I/O in pieces (the plan's are below RES_NVME_STAGES). */
enum { TAG_WRITE = 1u << 20, TAG_READ };

/* Copy d's chunk at va into staging piece by piece on d->stream, each piece written to slot
 * as soon as its copy completed while the next ones are copied (nv.io held).  0 or a
 * negative errno: on a copy that failed, -EIO (whatever reached the slot is not used). */
static int write_pieces(res_dev_t *d, CUdeviceptr va, uint32_t slot)
{
    uint32_t piece = res_nvme_piece(d), len = (uint32_t)d->chunk, n = (len + piece - 1) / piece;
    use_event_t *ev[RES_NVME_PIECES] = { 0 };
    int r = 0;
    for (uint32_t k = 0; k < n && r == 0; k++) {
        uint32_t at = k * piece, b = len - at < piece ? len - at : piece;
        if (DRVT(cuMemcpyDtoHAsync_v2)((char *)nv.staging + at, va + at, b, d->stream) !=
            CUDA_SUCCESS)
            r = -EIO;
        else
            ev[k] = res_record_own(d, d->stream);
    }
    if (r == 0)
        r = nvme_write_part(nv.area, slot, nv.staging, len, 0, TAG_WRITE, NVME_OP_WAITED);
    for (uint32_t k = 0; k < n && r == 0; k++) {
        res_event_wait(ev[k], &d->blocked_s);   /* (none: res_record_own waited) */
        nvme_write_more(nv.area, TAG_WRITE, (k + 1) * piece < len ? (k + 1) * piece : len);
    }
    if (r == 0)
        r = nvme_wait(nv.area, TAG_WRITE);
    if (DRVT(cuStreamSynchronize)(d->stream) != CUDA_SUCCESS && r == 0)
        r = -EIO;
    for (uint32_t k = 0; k < n; k++)
        res_event_put(d, ev[k]);
    return r;
}

/* Write host chunk ci to slot (the host copy untouched): from its pinned piece where host
 * memory does not map, else through staging in pieces (write_pieces) from its address, or,
 * where the plan left it unmapped, its shadow mapping (res_unmapped_addr).  0 or a negative
 * errno. */
static int write_out(res_dev_t *d, uint32_t ci, uint32_t slot)
{
    const chunk_t *c = &d->chunks[ci];
    const void *src = (const void *)(uintptr_t)c->phys;
    double t0 = res_now_s();
    CUdeviceptr from = 0;
    int r;
    if (d->host_mappable && res_unmapped_addr(d, ci, &from) != CUDA_SUCCESS)
        return -EIO;                    /* (it stays in host memory) */
    pthread_mutex_lock(&nv.io);
    int timed = res_ptime_io_begin(d);
    if (d->host_mappable)
        r = write_pieces(d, from, slot);
    else
        r = nvme_write_sync(nv.area, slot, src, (uint32_t)d->chunk);
    res_ptime_io_end(d, timed, r == 0, 1);
    nv.io_s += res_now_s() - t0;
    if (r == 0) {
        nv.writes++;
        nv.bytes_w += d->chunk;
    } else {
        nv.failed++;
    }
    pthread_mutex_unlock(&nv.io);
    return r;
}

void res_nvme_now_out(res_dev_t *d, uint32_t ci, uint32_t slot, uint64_t start)
{
    chunk_t *c = &d->chunks[ci];
    int from = c->tier == TIER_GPU ? SHIM_TIER_GPU : SHIM_TIER_HOST;
    chunk_t keep = *c;
    res_unback(d, ci);                  /* unmapped, its memory back, off its list */
    c->span_first = keep.span_first;
    c->span_n = keep.span_n;
    c->seen = keep.seen;
    c->lru = keep.lru;
    c->phys = slot;
    c->tier = TIER_NVME;
    d->resident[TIER_NVME] += d->chunk;
    d->nvme_out++;
    if (SHIM_TRACING())
        shim_trace_migration(d->device, ci, d->chunk, from, SHIM_TIER_NVME, start,
                             shim_trace_now(), shim_trace_current_op());
    SHIM_TRACE(RES, "device %d: chunk %u to NVMe slot %u", d->device, ci, slot);
}

/* Move host chunk ci to NVMe: its last use waited for, written, then its host memory goes
 * (res_nvme_now_out).  0 or -1. */
static int demote(res_dev_t *d, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    uint32_t slot;
    uint64_t start = SHIM_TRACING() ? shim_trace_now() : 0;
    if (nvme_slot_alloc(nv.area, &slot) < 0)
        return -1;
    res_wait_idle(d, c, &d->blocked_s);
    if (write_out(d, ci, slot) < 0) {
        nvme_slot_free(nv.area, slot);
        healthy();
        return -1;
    }
    res_nvme_now_out(d, ci, slot, start);
    return 0;
}

/* One host chunk to NVMe (the oldest on the host list that may go); 0 or -1. */
static int demote_one(res_dev_t *d)
{
    if (!d->nvme_on || !d->stream || !healthy() ||    /* (no stream: d lost its context,
                                                        * and its copies would go to another) */
        nvme_slots_used(nv.area) >= nvme_slots_total(nv.area))
        return -1;
    if (SHIM_UNLIKELY(d->plan != NULL)) {
        uint32_t v = res_plan_host_victim(d, demotable);
        if (v != UINT32_MAX)
            return demote(d, v);
    }
    for (uint32_t i = d->host.head; i; i = d->chunks[i - 1].next)
        if (demotable(&d->chunks[i - 1]))
            return demote(d, i - 1);
    return -1;
}

int res_nvme_room(res_dev_t *d)
{
    while (demote_one(d) == 0)
        if (d->nspare[1] ||
            atomic_load(&res_host.used) + d->chunk <= atomic_load(&res_host.budget))
            return 1;
    return 0;
}

/* Read slot into staging and on into the GPU memory at va piece by piece: each piece copied
 * on d->stream as soon as it arrived while the next ones are read (nv.io held).  0, or a
 * negative errno with *unread set when the read failed (then nothing copied counts). */
static int read_pieces(res_dev_t *d, CUdeviceptr va, uint32_t slot, int *unread)
{
    uint32_t len = (uint32_t)d->chunk, at = 0;
    int copied = 1;
    int r = nvme_read_part(nv.area, slot, nv.staging, len, TAG_READ, NVME_OP_WAITED);
    *unread = r < 0;
    if (r < 0)
        return r;
    nvme_submit(nv.area);
    while (at < len) {
        int got = nvme_read_got(nv.area, TAG_READ, at, 1);
        if (got <= (int)at)
            break;                      /* (failed: nvme_wait says how) */
        copied = copied && DRVT(cuMemcpyHtoDAsync_v2)(va + at, (char *)nv.staging + at,
                                                     (uint32_t)got - at, d->stream) ==
                               CUDA_SUCCESS;
        at = (uint32_t)got;
    }
    r = nvme_wait(nv.area, TAG_READ);
    *unread = r < 0;
    copied = DRVT(cuStreamSynchronize)(d->stream) == CUDA_SUCCESS && copied;
    return r < 0 ? r : copied ? 0 : -EIO;
}

/* Read slot into the GPU memory at va (nv.io held; the first try timed for the plan's NVMe
 * link: res_plan_time.c): a failed read is tried once more (a transient error, a corrupted
 * transfer that CRC32C caught), and the tier is marked degraded on the first failure.  0 or
 * a negative errno, *unread set when it is the read that failed. */
static int read_in(res_dev_t *d, CUdeviceptr va, uint32_t slot, int *unread)
{
    int timed = res_ptime_io_begin(d);
    int r = read_pieces(d, va, slot, unread);
    res_ptime_io_end(d, timed, r == 0, 0);
    if (r < 0 && *unread) {
        nv.failed_reads++;
        r = read_pieces(d, va, slot, unread);
        nv.failed_reads += r < 0 && *unread;
    }
    return r;
}

/* The chunk's only copy, on NVMe, could not be read: said with the allocation it belongs to
 * (the operation reaching it is refused: res_reach_away). */
static void lost(res_dev_t *d, uint32_t ci, uint32_t slot, int err)
{
    const chunk_t *c = &d->chunks[ci];
    uint32_t first = c->span_n ? c->span_first : ci, n = c->span_n ? c->span_n : 1;
    SHIM_ERROR(RES, "device %d: chunk %u (bytes %llu to %llu of the allocation at 0x%llx, "
               "%llu bytes) cannot be read back from NVMe slot %u (%s, twice): its only copy "
               "is unreadable, so operations reaching it are refused", d->device, ci,
               (unsigned long long)((ci - first) * d->chunk),
               (unsigned long long)((ci - first + 1) * d->chunk),
               (unsigned long long)arena_chunk_addr(d->arena, first),
               (unsigned long long)(n * d->chunk), slot, strerror(-err));
}

void res_nvme_now_in(res_dev_t *d, uint32_t ci, uint32_t slot, uint64_t start)
{
    nvme_slot_free(nv.area, slot);
    d->resident[TIER_NVME] -= d->chunk;
    d->nvme_in++;
    if (SHIM_TRACING())
        shim_trace_migration(d->device, ci, d->chunk, SHIM_TIER_NVME, SHIM_TIER_GPU, start,
                             shim_trace_now(), shim_trace_current_op());
}

/* Read NVMe chunk ci back into GPU memory mapped at its address (over the GPU budget where
 * nothing can be evicted: the driver has the last word).  0 or -1 (it stays on NVMe). */
static int read_back(res_dev_t *d, uint32_t ci, uint32_t serial)
{
    chunk_t *c = &d->chunks[ci];
    if (SHIM_UNLIKELY(c->moving))       /* a read of the plan's in flight (res_plan_nvme.c):
                                         * its data goes to the GPU, the host waiting for it */
        res_nvme_flight_use(d, ci, CU_STREAM_PER_THREAD, 0);
    if (c->tier != TIER_NVME)
        return 0;
    uint32_t slot = (uint32_t)c->phys;
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    uint64_t start = SHIM_TRACING() ? shim_trace_now() : 0;
    res_make_room(d, serial);
    if (c->tier != TIER_NVME)
        return 0;                       /* (freed meanwhile by a deferred free) */
    pthread_mutex_lock(&nv.io);
    double t0 = res_now_s();
    int r, unread = 0;
    chunk_t keep = *c;
    c->tier = TIER_NONE;
    if (res_back(d, ci, TIER_GPU) != CUDA_SUCCESS) {
        *c = keep;
        r = -ENOMEM;
    } else if ((r = read_in(d, va, slot, &unread)) < 0) {
        res_unback(d, ci);              /* the slot stays authoritative */
        *c = keep;
        d->nheld += keep.held != 0;     /* (res_unback let them go) */
        d->pinned += keep.pinned;
    }
    nv.io_s += res_now_s() - t0;
    if (r == 0) {
        nv.reads++;
        nv.bytes_r += d->chunk;
    }
    pthread_mutex_unlock(&nv.io);
    if (nvme_degraded(nv.area, NULL, 0))
        healthy();                      /* (one line when a read degraded the tier) */
    if (r < 0) {
        if (unread)
            lost(d, ci, slot, r);
        else
            SHIM_WARN(RES, "device %d: cannot read chunk %u back from NVMe slot %u (%s)",
                      d->device, ci, slot, strerror(-r));
        return -1;
    }
    res_nvme_now_in(d, ci, slot, start);
    return 0;
}

void res_nvme_back(res_dev_t *d, uint32_t ci)
{
    if (d->chunks[ci].tier == TIER_NVME)
        read_back(d, ci, 0);
}

void res_nvme_release(res_dev_t *d, uint32_t ci)
{
    nvme_slot_free(nv.area, (uint32_t)d->chunks[ci].phys);
    d->resident[TIER_NVME] -= d->chunk;
    d->chunks[ci].tier = TIER_NONE;     /* (out_of_use clears the rest) */
}

/* An operation the shim cannot see into: every chunk in use is exposed from now on, and
 * every chunk on NVMe comes back (the operation may reach it).  Returns the chunks left. */
static size_t unknown_reach(res_dev_t *d, uint32_t serial)
{
    uint32_t n = (uint32_t)arena_chunk_count(d->arena);
    size_t left = res_expose(d);        /* first, so that no read evicts one to NVMe */
    for (uint32_t ci = 0; ci < n && d->resident[TIER_NVME]; ci++)
        if (d->chunks[ci].tier == TIER_NVME)
            left += read_back(d, ci, serial) < 0;
    return left;
}

int res_nvme_reach(res_dev_t *d, collect_t *k)
{
    size_t left = 0, away = 0;
    if (k->unknown)
        left = unknown_reach(d, k->serial);
    for (size_t i = 0; i < k->n; i++)
        away += d->chunks[k->ids[i]].tier == TIER_NVME;
    if (!away)
        return left ? -ENOMEM : 0;
    /* (k's chunks are held meanwhile, so that the room the reads take sends none of its other
     * chunks to NVMe in turn: an operation that runs in place reads them where they are) */
    for (size_t i = 0; i < k->n; i++)
        res_hold(d, k->ids[i]);
    for (size_t i = 0; i < k->n; i++)
        if (d->chunks[k->ids[i]].tier == TIER_NVME)
            left += read_back(d, k->ids[i], k->serial) < 0;
    for (size_t i = 0; i < k->n; i++)
        res_unhold(d, k->ids[i]);
    return left ? -ENOMEM : 0;
}

uint64_t res_nvme_capacity(const res_dev_t *d)
{
    if (!d->nvme_on)
        return 0;
    uint64_t slots = nvme_degraded(nv.area, NULL, 0) ? nvme_slots_used(nv.area)
                                                     : nvme_slots_total(nv.area);
    return slots * nv.chunk;
}

nvme_area_t *res_nvme_area(void)
{
    return nv.area;
}

void *res_nvme_stage(unsigned k)
{
    return k < RES_NVME_STAGES && res_policy_plan ? (char *)nv.staging + (1 + k) * nv.chunk
                                                  : NULL;
}

int res_nvme_healthy(void)
{
    return nv.area && healthy();
}

void res_nvme_count(int write, int ok)
{
    pthread_mutex_lock(&nv.io);
    if (write && ok)
        nv.writes++, nv.bytes_w += nv.chunk;
    else if (ok)
        nv.reads++, nv.bytes_r += nv.chunk;
    else if (write)
        nv.failed++;
    else
        nv.failed_reads++;
    pthread_mutex_unlock(&nv.io);
}

void res_nvme_stats_print(void)
{
    nvme_stats_t s;
    char why[256] = "";
    if (!nv.area)
        return;
    nvme_get_stats(nv.area, &s);
    int deg = nvme_degraded(nv.area, why, sizeof(why));
    pthread_mutex_lock(&nv.io);
    shim_log_plain("NVMe: engine %s; chunks written %llu (%llu MiB), read %llu (%llu MiB), "
                   "failed writes %llu, failed reads %llu; I/O time %.3f s (device %.3f s), "
                   "most requests in flight %u; slots used %u of %u; %s%s", nv.engine,
                   (unsigned long long)nv.writes, (unsigned long long)(nv.bytes_w >> 20),
                   (unsigned long long)nv.reads, (unsigned long long)(nv.bytes_r >> 20),
                   (unsigned long long)nv.failed, (unsigned long long)nv.failed_reads, nv.io_s,
                   (double)s.io_ns / 1e9, s.max_inflight, nvme_slots_used(nv.area), nvme_slots_total(nv.area),
                   deg ? "degraded: " : "healthy", deg ? why : "");
    pthread_mutex_unlock(&nv.io);
    res_plan_nvme_stats();
}
