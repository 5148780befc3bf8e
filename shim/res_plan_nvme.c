/* SPDX-License-Identifier: MIT */
/*
 * res_plan_nvme.c - the plan's NVMe moves (ELIXIR_POLICY=plan with ELIXIR_NVME_PATH): the
 * planner is given the NVMe tier (capacity and link), buffers no part of which is exposed
 * (chunk_t.exposed, the rule of res_nvme.c) may be placed there, and the moves it places are
 * executed asynchronously, through the staging chunks res_nvme.c sets aside for them.
 *
 * A move to NVMe (a demotion from host memory, or an eviction straight from GPU memory):
 *   1. the chunk's contents are copied into a staging chunk on the device's NVMe stream, after
 *      the chunk's last use, in pieces (res_nvme_piece), an event after each (F_COPY);
 *   2. each piece whose copy completed (a query, at the shim's next call) is let go to the
 *      write of the staging chunk to a slot, queued with the first, while the next pieces are
 *      still copied; once every piece is let go, F_IO;
 *   3. once the write completed with 0, the chunk's memory goes and it becomes a TIER_NVME
 *      chunk (res_nvme_now_out), provided nothing used it meanwhile.
 * Until then the chunk stays where it was, authoritative (DESIGN.md invariant 5), mapped or,
 * where the plan's eviction left it unmapped, copied through its shadow mapping:
 * a use of it cancels the move (the use's stream waits for the staging copy first, which
 * reads the chunk), and a failed write only gives the slot back (the tier is degraded, one log
 * line).  The reactive engine, needing GPU room, completes a move out of GPU memory in flight
 * (the host waits for its copy and write: res_nvme_flight_room) before it evicts a chunk of its
 * own, which would most often be that very chunk (the plan sends out what it uses last), the
 * move cancelled.  A move from NVMe to the GPU:
 *   1. the slot is read into a staging chunk (F_IO);
 *   2. once the read completed, GPU memory is mapped at the chunk's address (when the budget
 *      has room, or at a use) and the staging chunk copied into it on the shim's copy stream
 *      (F_GPU; the chunk is TIER_GPU from then, every use waits for the copy's event on its
 *      stream, as for the plan's prefetches in res_flight.c);
 *   3. once the copy completed, the slot is free.
 * A use that comes before step 2 makes room as the reactive engine does (over the budget where
 * none can be made, as the reactive engine's read goes: gpu_map) and, while the read runs,
 * maps the GPU memory and copies each piece of the read into it as it arrives
 * (in_pieces); a read that failed leaves the chunk on NVMe, where the reactive engine reads it
 * synchronously (and reports it lost when it cannot: res_nvme.c).
 *
 * Moves in flight are found from the chunk's `moving` bit through res_flight.c, which hands
 * the chunks it does not know to this file.  The flights live in one table for the process,
 * one per staging chunk (the I/O completions of every device are reaped into it under its
 * mutex, innermost); all else in a flight is its device's, under the device's lock.  Where no
 * staging chunk is free, a move waits for one of the device's moves out in flight to complete
 * (stage_free), else it is left to the reactive engine: the plan is a hint.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../iouring/nvme.h"
#include "../policy/policy.h"
#include "res_int.h"
#include "res_nvme.h"
#include "res_ptime.h"

enum { F_COPY, F_IO, F_STAGED, F_GPU };

typedef struct nvfl {
    uint8_t used;
    uint8_t out;                /* 1: to NVMe; 0: from NVMe to the GPU */
    uint8_t stage;              /* F_* */
    uint8_t cancelled;          /* a move out used (or freed) meanwhile: only its I/O is left */
    uint8_t from;               /* a move out: the chunk's tier when it was issued */
    uint8_t io_done;            /* set by whoever reaps its completion (pn.lock) */
    uint8_t busy;               /* a use is bringing it in (room made meanwhile may poll):
                                 * polls and drains leave it alone */
    uint8_t lost;               /* the waits for its I/O kept failing: given up (io_wait) */
    int io_err;
    int dev;
    uint32_t ci, slot;
    use_event_t *ev;            /* F_COPY: the copy into staging; F_GPU: the copy out of it */
    use_event_t *pev[RES_NVME_PIECES];  /* F_COPY: each piece's copy into staging */
    uint8_t npieces, let_go;    /* F_COPY: pieces, and those let go to the write */
    uint64_t start;
    use_saw_t use, fence;       /* a move out: the chunk's use and the device's fence its copy
                                 * was ordered after (a use since, which did not cancel it, keeps
                                 * the chunk where it is: out_step) */
} nvfl_t;

static struct {
    pthread_mutex_t lock;       /* used, io_done, io_err */
    nvfl_t fl[RES_NVME_STAGES]; /* flight k uses staging chunk k; its I/O's tag is k */
    CUstream s[MAX_DEVICES];    /* per device: the copies into staging */
    CUcontext sctx[MAX_DEVICES];
    /* Counters (any device's lock; read at exit). */
    _Atomic uint64_t out_issued, out_done, out_cancelled, out_failed, out_ahead;
    _Atomic uint64_t in_issued, in_done, in_waited, in_dropped, in_failed, in_taken_back;
    _Atomic uint64_t staged_for;        /* moves that waited for a staging chunk (stage_free) */
    _Atomic uint64_t lost;              /* flights whose I/O was given up (io_wait) */
    /* The link the last plan was given ([0] reads, [1] writes) and where it came from (lock). */
    double link_gbs[2];
    char link_src[2][48];
} pn = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* ---------------------------------------------------------------- the planner's machine */

/* The NVMe link's defaults: reads and writes of a PCIe 4.0 x4 drive of the 7/5 GB/s class,
 * the simulator's drive (sim/simconfig.c), both ways together no faster than reads, 80 us from
 * submission to completion beside the transfer: the chunk's trip through host memory is
 * bound by the drive. */
#define NVME_READ_GBS 7.0
#define NVME_WRITE_GBS 5.0
#define NVME_LATENCY_US 80.0

/* "measured over N MiB" or "default" for the log and the statistics: direction dir's rate. */
static void link_source(const res_ptime_report_t *tr, int dir, char *buf, size_t len)
{
    if (tr->nvme_gbs[dir] > 0)
        snprintf(buf, len, "measured over %llu MiB",
                 (unsigned long long)(tr->nvme_bytes[dir] >> 20));
    else
        snprintf(buf, len, "default%s", tr->nvme_bytes[dir] ? ": too few bytes timed" : "");
}

/* The rates each way measured in the profile where enough bytes were timed (res_plan_time.c),
 * else the defaults.  A measured rate includes the drive's latency per chunk (the reactive
 * engine's I/O is one chunk at a time), so with one the link's fixed cost is 0. */
void res_plan_nvme_machine(const res_dev_t *d, const res_ptime_report_t *tr, pol_machine_t *m)
{
    if (!d->nvme_on || !res_nvme_healthy())
        return;
    m->cap[POL_NVME] = res_nvme_capacity(d);
    double rd = tr->nvme_gbs[0] > 0 ? tr->nvme_gbs[0] : NVME_READ_GBS;
    double wr = tr->nvme_gbs[1] > 0 ? tr->nvme_gbs[1] : NVME_WRITE_GBS;
    int measured = tr->nvme_gbs[0] > 0 || tr->nvme_gbs[1] > 0;
    m->link[POL_NVME] = (pol_link_t){ rd, wr, rd > wr ? rd : wr,
                                      measured ? 0.0 : NVME_LATENCY_US };
    char src[2][48];
    link_source(tr, 0, src[0], sizeof(src[0]));
    link_source(tr, 1, src[1], sizeof(src[1]));
    SHIM_INFO(RES, "device %d: the plan's NVMe link: reads %.2f GB/s (%s), writes %.2f GB/s "
              "(%s)", d->device, rd, src[0], wr, src[1]);
    pthread_mutex_lock(&pn.lock);
    pn.link_gbs[0] = rd;
    pn.link_gbs[1] = wr;
    memcpy(pn.link_src, src, sizeof(src));
    pthread_mutex_unlock(&pn.lock);
}

int res_plan_nvme_ok(const res_dev_t *d, uint32_t first, uint32_t n)
{
    uint32_t count = (uint32_t)arena_chunk_count(d->arena);
    if (!d->nvme_on)
        return 0;
    for (uint32_t i = 0; i < n && first + i < count; i++)
        if (d->chunks[first + i].exposed)
            return 0;
    return 1;
}

/* ---------------------------------------------------------------- the table */

/* A free flight for d's chunk ci, marked used, or NULL. */
static nvfl_t *fl_take(res_dev_t *d, uint32_t ci, int out)
{
    nvfl_t *f = NULL;
    pthread_mutex_lock(&pn.lock);
    for (unsigned k = 0; k < RES_NVME_STAGES && !f; k++)
        if (!pn.fl[k].used)
            f = &pn.fl[k];
    if (f)
        *f = (nvfl_t){ .used = 1, .out = (uint8_t)out, .dev = d->device, .ci = ci };
    pthread_mutex_unlock(&pn.lock);
    if (f)
        d->nvme_flights++;
    return f;
}

static unsigned fl_index(const nvfl_t *f)
{
    return (unsigned)(f - pn.fl);
}

/* d's flight of chunk ci (live ones only, unless `any`), or NULL.  (Other devices take and
 * end entries meanwhile, under pn.lock; d's own stay as they are while d is locked.) */
static nvfl_t *fl_find(const res_dev_t *d, uint32_t ci, int any)
{
    nvfl_t *found = NULL;
    pthread_mutex_lock(&pn.lock);
    for (unsigned k = 0; k < RES_NVME_STAGES && !found; k++) {
        nvfl_t *f = &pn.fl[k];
        if (f->used && f->dev == d->device && f->ci == ci && (any || !f->cancelled))
            found = f;
    }
    pthread_mutex_unlock(&pn.lock);
    return found;
}

/* Is f still one of d's flights (a step of another may have ended it)? */
static int fl_still(const res_dev_t *d, const nvfl_t *f)
{
    pthread_mutex_lock(&pn.lock);
    int mine = f->used && f->dev == d->device;
    pthread_mutex_unlock(&pn.lock);
    return mine;
}

/* d's flights into mine[] (their count), under pn.lock as fl_find. */
static unsigned fl_mine(const res_dev_t *d, nvfl_t **mine)
{
    unsigned n = 0;
    pthread_mutex_lock(&pn.lock);
    for (unsigned k = 0; k < RES_NVME_STAGES; k++)
        if (pn.fl[k].used && pn.fl[k].dev == d->device)
            mine[n++] = &pn.fl[k];
    pthread_mutex_unlock(&pn.lock);
    return n;
}

/* The staging chunks taken, by every device's flights and those given up. */
static unsigned fl_used(void)
{
    unsigned used = 0;
    pthread_mutex_lock(&pn.lock);
    for (unsigned k = 0; k < RES_NVME_STAGES; k++)
        used += pn.fl[k].used != 0;
    pthread_mutex_unlock(&pn.lock);
    return used;
}

/* Is every flight (every staging chunk) of the process in use? */
static int fl_full(void)
{
    return fl_used() == RES_NVME_STAGES;
}

/* Flight f ends: its chunk is no longer moving (unless the move was cancelled, which let it
 * go already), its event and staging chunk go. */
static void fl_end(res_dev_t *d, nvfl_t *f)
{
    if (!f->cancelled)
        d->chunks[f->ci].moving = 0;
    res_event_put(d, f->ev);
    f->ev = NULL;
    for (unsigned k = 0; k < RES_NVME_PIECES; k++) {
        res_event_put(d, f->pev[k]);
        f->pev[k] = NULL;
    }
    pthread_mutex_lock(&pn.lock);
    if (f->lost)
        f->dev = -1;        /* (no device's: its staging chunk, which the I/O may still reach,
                             * is never used again) */
    else
        f->used = 0;
    f->busy = 0;
    pthread_mutex_unlock(&pn.lock);
    d->nvme_flights--;
}

/* Hand finished I/O to its flights, waiting for one when `wait`: how many, or the wait's
 * error. */
static int reap(int wait)
{
    nvme_done_t done[RES_NVME_STAGES];
    int n = nvme_complete(res_nvme_area(), done, RES_NVME_STAGES, wait ? 1 : 0);
    if (n < 0)
        return n;
    pthread_mutex_lock(&pn.lock);
    for (int i = 0; i < n; i++)
        if (done[i].tag < RES_NVME_STAGES) {
            pn.fl[done[i].tag].io_done = 1;
            pn.fl[done[i].tag].io_err = done[i].result;
        }
    pthread_mutex_unlock(&pn.lock);
    return n;
}

static int io_done(const nvfl_t *f)
{
    pthread_mutex_lock(&pn.lock);
    int done = f->io_done;
    pthread_mutex_unlock(&pn.lock);
    return done;
}

/* The host waits until f's I/O completed.  Where the waits themselves fail IO_WAIT_TRIES
 * times in a row (the area is degraded by the first: io.c), f's I/O is given up as failed:
 * a move out leaves its chunk where it was, a move in leaves it on NVMe, and the flight is
 * lost (fl_end). */
#define IO_WAIT_TRIES 4

static void io_wait(res_dev_t *d, nvfl_t *f)
{
    double t0 = res_now_s();
    for (int failed = 0; !io_done(f);) {
        failed = reap(1) < 0 ? failed + 1 : 0;
        if (failed < IO_WAIT_TRIES)
            continue;
        pthread_mutex_lock(&pn.lock);
        f->io_done = f->lost = 1;
        f->io_err = -EIO;
        pthread_mutex_unlock(&pn.lock);
        pn.lost++;
        SHIM_WARN(RES, "device %d: the wait for the NVMe I/O of chunk %u keeps failing: given "
                  "up, its staging chunk set aside", d->device, f->ci);
    }
    d->blocked_flight_s += res_now_s() - t0;
}

/* ---------------------------------------------------------------- moves to NVMe */

/* d's stream for copies into staging, made in d's context at the first; NULL when none. */
static CUstream copy_stream(res_dev_t *d)
{
    CUcontext cur = NULL, popped;
    if (!d->ctx)
        return NULL;
    if (pn.s[d->device] && pn.sctx[d->device] == d->ctx)
        return pn.s[d->device];
    int push = DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur != d->ctx &&
               DRV(cuCtxPushCurrent_v2)(d->ctx) == CUDA_SUCCESS;
    CUstream s = NULL;
    if (DRV(cuStreamCreate)(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        s = NULL;
    if (push)
        DRV(cuCtxPopCurrent_v2)(&popped);
    pn.s[d->device] = s;
    pn.sctx[d->device] = d->ctx;
    return s;
}

/* A chunk's contents at va (its address, or its shadow mapping: res_unmapped_addr) into
 * staging on stream s, piece by piece, an event after each (f->ev: the last one's); 0, or -1
 * when a copy could not be enqueued (after those that were completed). */
static int copy_pieces(res_dev_t *d, nvfl_t *f, CUdeviceptr va, CUstream s, void *stage)
{
    uint32_t piece = res_nvme_piece(d), len = (uint32_t)d->chunk;
    f->npieces = (uint8_t)((len + piece - 1) / piece);
    for (unsigned k = 0; k < f->npieces; k++) {
        uint32_t at = k * piece, b = len - at < piece ? len - at : piece;
        if (DRVT(cuMemcpyDtoHAsync_v2)((char *)stage + at, va + at, b, s) != CUDA_SUCCESS) {
            DRVT(cuStreamSynchronize)(s);
            return -1;
        }
        f->pev[k] = res_record_own(d, s);       /* (NULL: the host waited for s) */
    }
    f->ev = res_event_ref(f->pev[f->npieces - 1]);
    return 0;
}

/* Chunk ci of d, in host or GPU memory, starts going to NVMe (see the file's comment): 0,
 * -EAGAIN when every staging chunk is taken, else -1. */
static int go_out(res_dev_t *d, uint32_t ci, uint32_t serial)
{
    chunk_t *c = &d->chunks[ci];
    nvme_area_t *a = res_nvme_area();
    if ((c->tier != TIER_HOST && c->tier != TIER_GPU) || c->moving || c->pinned || c->held ||
        c->waiting || c->exposed || c->stray || c->seen == serial || !d->host_mappable ||
        !res_nvme_healthy())
        return -1;
    CUdeviceptr from;
    if (res_unmapped_addr(d, ci, &from) != CUDA_SUCCESS)
        return -1;                      /* (copied from there below) */
    CUstream s = copy_stream(d);
    uint32_t slot;
    if (!s)
        return -1;
    nvfl_t *f = fl_take(d, ci, 1);
    if (!f)
        return -EAGAIN;
    void *stage = res_nvme_stage(fl_index(f));
    if (nvme_slot_alloc(a, &slot) < 0) {
        fl_end(d, f);
        return -1;
    }
    f->use = res_use_saw(&c->use);
    f->fence = res_use_saw(&d->fence);
    if (res_stream_after_use(d, s, c) < 0 || copy_pieces(d, f, from, s, stage) < 0) {
        nvme_slot_free(a, slot);
        fl_end(d, f);
        return -1;
    }
    f->stage = F_COPY;
    f->from = c->tier;
    f->slot = slot;
    f->start = SHIM_TRACING() ? shim_trace_now() : 0;
    c->moving = 1;
    pn.out_issued++;
    return 0;
}

/* A move out stops: the chunk stays, the flight lives on until its I/O is over. */
static void stop(res_dev_t *d, nvfl_t *f)
{
    d->chunks[f->ci].moving = 0;
    f->cancelled = 1;
}

/* A move out is cancelled (its chunk used, freed or wanted where it is), and counted so. */
static void cancel(res_dev_t *d, nvfl_t *f)
{
    stop(d, f);
    pn.out_cancelled++;
}

/* The pieces of f's copy into staging that completed go to its write, queued with the
 * first (a cancelled move whose write is not queued yet queues none): the count let go, or
 * -1 when the write could not be queued. */
static int let_go(res_dev_t *d, nvfl_t *f)
{
    uint32_t piece = res_nvme_piece(d), len = (uint32_t)d->chunk;
    unsigned k = f->let_go;
    while (k < f->npieces && (!f->pev[k] || res_event_done(f->pev[k])))
        k++;
    if (k == f->let_go || (f->cancelled && f->let_go == 0))
        return 0;
    uint32_t ready = k * piece < len ? k * piece : len;
    if (f->let_go == 0 && nvme_write_part(res_nvme_area(), f->slot,
                                          res_nvme_stage(fl_index(f)), len, ready,
                                          fl_index(f), 0) < 0)
        return -1;
    if (f->let_go > 0)                  /* (-ENOENT: it ended already, refused: reap) */
        nvme_write_more(res_nvme_area(), fl_index(f), ready);
    int n = (int)(k - f->let_go);
    f->let_go = (uint8_t)k;
    return n;
}

/* A move out's next step; returns 1 when a write was queued or grew. */
static int out_step(res_dev_t *d, nvfl_t *f)
{
    nvme_area_t *a = res_nvme_area();
    chunk_t *c = &d->chunks[f->ci];
    if (f->stage == F_COPY) {
        int n = let_go(d, f);
        if (n >= 0 && f->let_go == f->npieces) {    /* the whole write is queued */
            /* Its events, all done, go now: the write may outlive the context they belong
             * to (a cancelled move's, when that context goes: res_nvme_flights_drain). */
            res_event_put(d, f->ev);
            f->ev = NULL;
            for (unsigned k = 0; k < f->npieces; k++) {
                res_event_put(d, f->pev[k]);
                f->pev[k] = NULL;
            }
            f->stage = F_IO;
            return 1;
        }
        /* Decided from what let_go let go, never from a later query of f->ev, which may find
         * done a piece that let_go found running: a write queued in part lives until the
         * rest of it is let go, so the flight (its tag, its staging chunk) must not end. */
        int unqueued = n < 0 || (f->cancelled && f->let_go == 0);
        if (!unqueued || (n >= 0 && f->ev && !res_event_done(f->ev)))
            return n > 0;
        res_event_wait(f->ev, &d->blocked_flight_s);    /* (no write: failed, or cancelled) */
        nvme_slot_free(a, f->slot);
        if (!f->cancelled) {            /* (the write could not be queued) */
            stop(d, f);
            pn.out_failed++;
        }
        fl_end(d, f);
        return 0;
    }
    if (!io_done(f))
        return 0;
    res_nvme_count(1, f->io_err == 0);
    int stays = f->io_err || f->cancelled || c->tier != f->from || c->held || c->pinned ||
                c->waiting || c->exposed || !res_idle_since(d, c, &f->use, &f->fence);
    if (f->io_err) {
        pn.out_failed++;
        res_nvme_healthy();             /* (says once that the tier is degraded) */
    }
    if (stays) {
        nvme_slot_free(a, f->slot);
        if (f->io_err)
            stop(d, f);                 /* (counted as failed) */
        else if (!f->cancelled)
            cancel(d, f);
        fl_end(d, f);
        return 0;
    }
    uint32_t ci = f->ci, slot = f->slot;   /* (f is another device's once it ends) */
    uint64_t start = f->start;
    fl_end(d, f);                       /* (not moving: res_unback must not settle it) */
    res_nvme_now_out(d, ci, slot, start);
    pn.out_done++;
    return 0;
}

/* ---------------------------------------------------------------- moves from NVMe */

/* Chunk ci of d, on NVMe, starts coming to the GPU: its slot read into staging.  0, -EAGAIN
 * when every staging chunk is taken, else -1. */
static int come_in(res_dev_t *d, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    nvme_area_t *a = res_nvme_area();
    if (c->tier != TIER_NVME || c->moving || !d->stream)
        return -1;
    nvfl_t *f = fl_take(d, ci, 0);
    if (!f)
        return -EAGAIN;
    f->slot = (uint32_t)c->phys;
    f->start = SHIM_TRACING() ? shim_trace_now() : 0;
    if (nvme_read(a, f->slot, res_nvme_stage(fl_index(f)), (uint32_t)d->chunk,
                  fl_index(f)) < 0) {
        fl_end(d, f);
        return -1;
    }
    nvme_submit(a);
    f->stage = F_IO;
    c->moving = 1;
    pn.in_issued++;
    return 0;
}

/* Room for one more GPU chunk: parked chunks go first, then the plan's evictions in flight
 * complete; with `force`, the reactive engine evicts.  1 when there is room. */
static int gpu_room(res_dev_t *d, int force)
{
    while (!res_has_room(d, TIER_GPU)) {
        if (res_park_drop(d) == 0)
            continue;
        uint32_t i = 0;
        while (i < d->nflights && d->flights[i].in)
            i++;
        if (i < d->nflights) {
            res_flight_settle(d, d->flights[i].ci, 0);
            continue;
        }
        return force && res_make_room(d, d->serial) == 0;
    }
    return 1;
}

/* GPU memory mapped at f's chunk's address, for its staged contents (the chunk is TIER_GPU
 * from then, not yet written; *keep, the chunk as it was): 0, or -1 when there is no room
 * or the driver refused (the chunk stays on NVMe), or -2 when f ended while room was made
 * (a deferred free that the room reclaimed let its chunk go: res_unback settled f), and
 * the caller must not touch it.  With `force` (a use of the chunk), room
 * that cannot be made within the budget (every GPU chunk reached by the operation, or held)
 * is taken over it, as the reactive engine's read would take it (res_nvme.c: read_back)
 * after reading the chunk again: measured on bench/nvme_train's pooled job, 80 chunks read
 * twice in 8 steps when the staged data was dropped instead. */
static int gpu_map(res_dev_t *d, nvfl_t *f, int force, chunk_t *keep)
{
    uint32_t ci = f->ci;
    int room = gpu_room(d, force);
    if (!fl_still(d, f) || f->ci != ci)
        return -2;
    chunk_t *c = &d->chunks[ci];
    if ((!room && !force) || c->tier != TIER_NVME)
        return -1;
    *keep = *c;
    c->tier = TIER_NONE;
    if (res_back(d, f->ci, TIER_GPU) != CUDA_SUCCESS) {
        *c = *keep;
        return -1;
    }
    return 0;
}

/* The GPU memory gpu_map mapped goes (no copy into it runs): the chunk is on NVMe again, its
 * slot authoritative. */
static void gpu_unmap(res_dev_t *d, nvfl_t *f, const chunk_t *keep)
{
    chunk_t *c = &d->chunks[f->ci];
    c->moving = 0;
    res_unback(d, f->ci);
    *c = *keep;
    d->nheld += keep->held != 0;        /* (res_unback let them go) */
    d->pinned += keep->pinned;
}

/* The copies out of f's staging chunk are enqueued on the shim's copy stream: F_GPU, every
 * use of the chunk waiting for them on its stream, as for the plan's prefetches. */
static void gpu_copying(res_dev_t *d, nvfl_t *f)
{
    chunk_t *c = &d->chunks[f->ci];
    f->ev = res_record_own(d, d->stream);
    if (f->ev && !c->use.prior)             /* a free or a migration waits for it as for a use */
        c->use.prior = res_event_ref(f->ev);
    d->resident[TIER_NVME] -= d->chunk;
    f->stage = F_GPU;
}

/* The staged contents of f's chunk go into GPU memory mapped at its address, on the shim's
 * copy stream: 0, or -1 when there is no room (none is without `force`: see gpu_map) or the
 * driver refused (the chunk stays on NVMe), or -2 when f ended meanwhile (gpu_map). */
static int to_gpu(res_dev_t *d, nvfl_t *f, int force)
{
    chunk_t keep;
    int rc = gpu_map(d, f, force, &keep);
    if (rc < 0)
        return rc;
    if (DRVT(cuMemcpyHtoDAsync_v2)(arena_chunk_addr(d->arena, f->ci),
                                  res_nvme_stage(fl_index(f)), d->chunk, d->stream) !=
        CUDA_SUCCESS) {
        gpu_unmap(d, f, &keep);
        return -1;
    }
    gpu_copying(d, f);
    return 0;
}

/* A move in whose chunk is in GPU memory, its copy done: the slot goes. */
static void in_end(res_dev_t *d, nvfl_t *f)
{
    uint32_t ci = f->ci, slot = f->slot;
    uint64_t start = f->start;
    fl_end(d, f);
    nvme_slot_free(res_nvme_area(), slot);
    d->nvme_in++;
    pn.in_done++;
    if (SHIM_TRACING())
        shim_trace_migration(d->device, ci, d->chunk, SHIM_TIER_NVME, SHIM_TIER_GPU, start,
                             shim_trace_now(), shim_trace_current_op());
}

/* A move in whose staged data is not wanted: the chunk stays on NVMe. */
static void in_drop(res_dev_t *d, nvfl_t *f)
{
    pn.in_dropped++;
    fl_end(d, f);
}

/* A move in's read completed: F_STAGED, or dropped when it failed (0). */
static int in_read(res_dev_t *d, nvfl_t *f)
{
    res_nvme_count(0, f->io_err == 0);
    if (f->io_err) {
        pn.in_failed++;                 /* (on NVMe it stays) */
        res_nvme_healthy();
        fl_end(d, f);
        return 0;
    }
    f->stage = F_STAGED;
    return 1;
}

/*
 * A use of f's chunk while its read is still running (F_IO): GPU memory is mapped at the
 * chunk's address first and each piece of the read copied into it as soon as it arrived,
 * while the next ones are read, as the reactive engine's reads do (the copy after the last
 * piece is one piece's, not the chunk's).  Arrived bytes are checked only once the whole read
 * completed (ELIXIR_NVME_VERIFY): a read that failed then takes the GPU memory back, the
 * copies into it waited for, and nothing copied counts.  Afterwards f is F_GPU, or F_STAGED
 * (the driver refused GPU memory or a copy: to_gpu's turn), or dropped (0: the read failed,
 * or f ended while room was made: gpu_map).
 */
static int in_pieces(res_dev_t *d, nvfl_t *f)
{
    uint32_t len = (uint32_t)d->chunk, at = 0;
    char *stage = res_nvme_stage(fl_index(f));
    CUdeviceptr va = arena_chunk_addr(d->arena, f->ci);
    chunk_t keep;
    int rc = gpu_map(d, f, 1, &keep);
    if (rc == -2)
        return 0;                       /* (ended meanwhile: see gpu_map) */
    int mapped = rc == 0, copied = mapped;
    while (copied && at < len) {
        int got = nvme_read_got(res_nvme_area(), fl_index(f), at, 1);
        if (got <= (int)at)
            break;                      /* (failed, or reaped already: io_wait says) */
        copied = DRVT(cuMemcpyHtoDAsync_v2)(va + at, stage + at, (uint32_t)got - at,
                                           d->stream) == CUDA_SUCCESS;
        at = (uint32_t)got;
    }
    io_wait(d, f);
    if (copied && at < len && !f->io_err)       /* (reaped by another device's call) */
        copied = DRVT(cuMemcpyHtoDAsync_v2)(va + at, stage + at, len - at, d->stream) ==
                 CUDA_SUCCESS;
    if (mapped && (!copied || f->io_err)) {
        DRVT(cuStreamSynchronize)(d->stream);    /* (the copies read staging) */
        gpu_unmap(d, f, &keep);
        mapped = 0;
        pn.in_taken_back += f->io_err && at > 0;
    }
    if (!in_read(d, f))
        return 0;
    if (mapped)
        gpu_copying(d, f);
    return 1;
}

/* A move in's next step, without waiting. */
static void in_step(res_dev_t *d, nvfl_t *f)
{
    if (f->stage == F_IO && (!io_done(f) || !in_read(d, f)))
        return;
    if (f->stage == F_STAGED && to_gpu(d, f, 0) < 0)
        return;
    if (f->stage == F_GPU && (!f->ev || res_event_done(f->ev)))
        in_end(d, f);
}

/* Does the host budget have a chunk of room without a move to NVMe (res_has_room would make
 * one, synchronously, of the oldest host chunk)? */
static int host_free(const res_dev_t *d)
{
    return d->nspare[1] || atomic_load(&res_host.used) + d->chunk <= atomic_load(&res_host.budget);
}

/* One of d's moves out in flight, not cancelled, from tier `from` (-1: any), of a chunk that
 * operation `serial` (0: none) does not reach; NULL when there is none. */
static nvfl_t *out_flight(res_dev_t *d, int from, uint32_t serial)
{
    nvfl_t *mine[RES_NVME_STAGES];
    unsigned n = fl_mine(d, mine);
    for (unsigned k = 0; k < n; k++)
        if (mine[k]->out && !mine[k]->cancelled && (from < 0 || mine[k]->from == from) &&
            (serial == 0 || d->chunks[mine[k]->ci].seen != serial))
            return mine[k];
    return NULL;
}

/* The plan's move out f (of d) completes: the host waits for its copy into staging and for its
 * write.  1 when the flight ended (its chunk on NVMe, or where it was when the write could
 * not be queued or the move was cancelled meanwhile), 0 when it cannot get on (a copy that
 * never completes). */
static int out_finish(res_dev_t *d, nvfl_t *f)
{
    if (f->stage == F_COPY) {
        res_event_wait(f->ev, &d->blocked_flight_s);
        int queued = out_step(d, f);
        if (!fl_still(d, f))
            return 1;                   /* (the write could not be queued: the move ended) */
        if (f->stage != F_IO)
            return 0;
        if (queued)
            nvme_submit(res_nvme_area());
    }
    if (f->stage != F_IO)
        return 0;
    io_wait(d, f);
    out_step(d, f);
    return 1;
}

/* Host memory for the plan's eviction GPU -> host where the budget has none: the plan made
 * its room with moves host -> NVMe issued before it, which are completed now (the host waits
 * for their copies and writes) until there is room.  Where none is in flight, the reactive
 * engine's demotion makes it (res_has_room). */
static void host_room(res_dev_t *d)
{
    nvfl_t *f;
    while (!host_free(d))
        if (!(f = out_flight(d, TIER_HOST, 0)) || !out_finish(d, f))
            return;                     /* (then res_has_room's turn) */
}

int res_nvme_flight_room(res_dev_t *d, uint32_t serial)
{
    nvfl_t *f = out_flight(d, TIER_GPU, serial);
    return f && out_finish(d, f) ? 0 : -1;
}

/* Every staging chunk is in use, and d's move of the plan needs one: one of d's moves out in
 * flight, of a chunk that operation `serial` (0: none) does not reach, completes (the host
 * waits for its copy and write), which frees its staging chunk.
 * Measured on bench/nvme_train's pooled job: 97.4 -> 90.8 ms a step (the plan's moves
 * host -> NVMe no longer left to the reactive engine's synchronous demotions).  0 when a
 * staging chunk is free now, -1 when none could be freed. */
static int stage_free(res_dev_t *d, uint32_t serial)
{
    nvfl_t *f;
    if (!fl_full())
        return 0;
    if (!(f = out_flight(d, -1, serial)) || !out_finish(d, f))
        return -1;
    pn.staged_for++;
    return 0;
}

/* ---------------------------------------------------------------- the executor's entries */

/* (res_plan.c hands over every move with NVMe at one end, every move of a chunk on NVMe, and,
 * with the tier on, the evictions to host memory.) */
int res_plan_nvme_move(res_dev_t *d, uint32_t ci, int from, int to, uint32_t serial)
{
    int tier = d->chunks[ci].tier;
    if (from == POL_GPU && to == POL_HOST && (!res_nvme_area() || !res_nvme_stage(0)))
        return res_evict_async(d, ci, serial);
    if (!d->nvme_on || !res_nvme_area() || !res_nvme_stage(0) || fl_find(d, ci, 1))
        return -1;
    if (to == POL_NVME && (from == POL_HOST || from == POL_GPU)) {
        if (tier == TIER_GPU && d->chunks[ci].moving)
            res_flight_settle(d, ci, 1);        /* (its eviction to host: cancelled) */
        int r = go_out(d, ci, serial);
        if (r != -EAGAIN)
            return r == 0 ? 0 : -1;
        return stage_free(d, serial) == 0 && go_out(d, ci, serial) == 0 ? 0 : -1;
    }
    if (to == POL_GPU && tier == TIER_NVME) {   /* (from the host in the plan: demoted since) */
        int r = come_in(d, ci);
        if (r != -EAGAIN)
            return r == 0 ? 0 : -1;
        return stage_free(d, serial) == 0 && come_in(d, ci) == 0 ? 0 : -1;
    }
    if (to == POL_GPU && tier == TIER_HOST)
        return res_prefetch(d, ci);     /* (from NVMe in the plan: not demoted) */
    if (from == POL_GPU && to == POL_HOST && tier == TIER_GPU) {
        host_room(d);
        return res_evict_async(d, ci, serial);
    }
    return -1;
}

int res_plan_nvme_ahead(res_dev_t *d, uint32_t ci, uint32_t serial)
{
    if (!d->nvme_on || !res_nvme_area() || !res_nvme_stage(0) ||
        d->chunks[ci].tier != TIER_HOST || fl_used() >= RES_NVME_STAGES / 2 ||
        fl_find(d, ci, 1) || go_out(d, ci, serial) < 0)
        return -1;
    pn.out_ahead++;
    return 0;
}

void res_nvme_flight_use(res_dev_t *d, uint32_t ci, CUstream s, int ptds)
{
    nvfl_t *f = fl_find(d, ci, 0);
    if (!f) {
        d->chunks[ci].moving = 0;
        return;
    }
    int host_waits = s == CU_STREAM_PER_THREAD || (!s && ptds);
    if (f->out) {
        /* Cancelled (the use may write the chunk) once its copy into staging read the chunk:
         * s waits for the copy, or the host where s cannot.  As for an eviction to the host
         * (res_flight_use), the copy becomes part of the chunk's use: until s's use is
         * recorded (or ever, where the operation is refused) nothing else orders what comes
         * next for the chunk (a move, a free, its memory taken) after the copy. */
        use_t *u = &d->chunks[ci].use;
        if (f->stage == F_COPY && f->ev && !res_event_done(f->ev)) {
            if (host_waits || DRVT(cuStreamWaitEvent)(s, f->ev->ev, 0) != CUDA_SUCCESS)
                res_event_wait(f->ev, &d->blocked_flight_s);
            else if (!u->prior)
                u->prior = res_event_ref(f->ev);
            else
                res_event_wait(f->ev, &d->blocked_flight_s);    /* (a prior already: rare) */
        }
        cancel(d, f);
        return;
    }
    f->busy = 1;                        /* (until it is in GPU memory, or dropped) */
    if (f->stage == F_IO && !io_done(f)) {
        pn.in_waited++;
        if (!in_pieces(d, f))
            return;
    }
    if (f->stage == F_IO) {
        io_wait(d, f);
        if (!in_read(d, f))
            return;
    }
    int rc = f->stage == F_STAGED ? to_gpu(d, f, 1) : 0;
    if (rc == -2)
        return;                         /* (ended meanwhile: see gpu_map) */
    if (rc < 0) {
        in_drop(d, f);                  /* the reactive engine reads it */
        return;
    }
    f->busy = 0;
    if (!f->ev || res_event_done(f->ev)) {
        in_end(d, f);
        return;
    }
    if (host_waits || DRVT(cuStreamWaitEvent)(s, f->ev->ev, 0) != CUDA_SUCCESS) {
        res_event_wait(f->ev, &d->blocked_flight_s);
        in_end(d, f);
    }
}

void res_nvme_flight_settle(res_dev_t *d, uint32_t ci, int gone)
{
    (void)gone;                         /* (the same either way: see below) */
    nvfl_t *f = fl_find(d, ci, 0);
    if (!f) {
        d->chunks[ci].moving = 0;
        return;
    }
    if (f->out) {                       /* the chunk stays where it is */
        if (f->stage == F_COPY)
            res_event_wait(f->ev, &d->blocked_flight_s);
        cancel(d, f);
        return;
    }
    if (f->stage == F_GPU) {            /* in GPU memory: its copy completes */
        res_event_wait(f->ev, &d->blocked_flight_s);
        in_end(d, f);
        return;
    }
    if (f->stage == F_IO) {
        io_wait(d, f);                  /* (the staging chunk is being written) */
        if (!in_read(d, f))
            return;                     /* (failed: dropped) */
    }
    in_drop(d, f);                      /* on NVMe it stays */
}

void res_nvme_flights_poll(res_dev_t *d)
{
    nvfl_t *mine[RES_NVME_STAGES];
    int queued = 0;
    reap(0);
    unsigned n = fl_mine(d, mine);
    for (unsigned k = 0; k < n; k++) {
        nvfl_t *f = mine[k];
        if (!fl_still(d, f) || f->busy)
            continue;
        if (f->out)
            queued += out_step(d, f);
        else
            in_step(d, f);
    }
    if (queued)
        nvme_submit(res_nvme_area());
}

void res_nvme_flights_drain(res_dev_t *d)
{
    nvfl_t *mine[RES_NVME_STAGES];
    unsigned n = fl_mine(d, mine);
    for (unsigned k = 0; k < n; k++) {
        nvfl_t *f = mine[k];
        if (fl_still(d, f) && f->busy)
            continue;                   /* (its use brings it in) */
        if (fl_still(d, f) && !f->cancelled)
            res_nvme_flight_settle(d, f->ci, 0);
        if (fl_still(d, f) && f->stage == F_COPY) {     /* (its copy uses d's context) */
            res_event_wait(f->ev, &d->blocked_flight_s);
            out_step(d, f);
        }
    }
    res_nvme_flights_poll(d);
}

void res_plan_nvme_stats(void)
{
    if (!res_policy_plan || pn.out_issued + pn.in_issued == 0)
        return;
    shim_log_plain("NVMe plan: moves to NVMe %llu (completed %llu, cancelled %llu, failed %llu; "
                   "issued ahead of their place %llu); reads ahead %llu (completed %llu, "
                   "waited for %llu, failed %llu, %llu of them after pieces reached GPU memory; "
                   "dropped %llu); moves that waited for a staging chunk %llu; given up (their "
                   "waits failing) %llu",
                   (unsigned long long)pn.out_issued, (unsigned long long)pn.out_done,
                   (unsigned long long)pn.out_cancelled, (unsigned long long)pn.out_failed,
                   (unsigned long long)pn.out_ahead,
                   (unsigned long long)pn.in_issued, (unsigned long long)pn.in_done,
                   (unsigned long long)pn.in_waited, (unsigned long long)pn.in_failed,
                   (unsigned long long)pn.in_taken_back, (unsigned long long)pn.in_dropped,
                   (unsigned long long)pn.staged_for, (unsigned long long)pn.lost);
    pthread_mutex_lock(&pn.lock);
    if (pn.link_gbs[0] > 0)
        shim_log_plain("NVMe plan: link reads %.2f GB/s (%s), writes %.2f GB/s (%s)",
                       pn.link_gbs[0], pn.link_src[0], pn.link_gbs[1], pn.link_src[1]);
    pthread_mutex_unlock(&pn.lock);
}
