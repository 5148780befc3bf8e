/* SPDX-License-Identifier: MIT */
/*
 * res_nccl.c - the buffers of NCCL operations: resident before the call, held until its use
 * is recorded.
 *
 * An NCCL call enqueues its work inside the library (or, in a group, at ncclGroupEnd), through
 * kernels whose arguments the shim may not be able to read.  So before the call every chunk
 * of its send and receive ranges is made usable by its device (brought into GPU memory as far
 * as the budget allows, or at all where evicted chunks are unmapped) and held: taken off the
 * LRU list so that nothing, the library's own launches included, evicts it.  After the call
 * (after the outermost ncclGroupEnd for a call inside a group) the operation becomes the last
 * use of those chunks on its stream, exactly as a launch's does, and the hold is released.
 * The device's lock is not held across the library's call, which launches through the shim.
 * A range of unknown size (an element type the shim does not know) holds its whole allocation.
 * On a capturing stream nothing is held: the work runs when its graph is launched, and graph
 * launches are fences (res_launch.c).
 */
#include <stdlib.h>

#include "res_int.h"

/* What one NCCL call holds on one device. */
typedef struct held_dev {
    res_dev_t *d;
    collect_t k;
} held_dev_t;

struct res_nccl {
    CUstream stream;
    int ndev;
    held_dev_t dev[2];              /* the devices owning the send and receive ranges */
};

static uint32_t chunk_of(const res_dev_t *d, uint64_t off)
{
    return (uint32_t)(d->chunk_shift >= 0 ? off >> d->chunk_shift : off / d->chunk);
}

/* The chunks in use of [p, p + bytes) into k (bytes 0: of p's whole allocation). */
static void add_range(collect_t *k, uint64_t p, uint64_t bytes)
{
    const res_dev_t *d = k->d;
    uint64_t off = p - d->base;
    if (!bytes) {
        res_collect_ptr(k, p);
        return;
    }
    uint64_t end = bytes > d->size - off ? d->size : off + bytes;
    for (uint32_t ci = chunk_of(d, off), last = chunk_of(d, end - 1); ci <= last; ci++)
        if (d->chunks[ci].tier != TIER_NONE)
            res_collect_chunk(k, ci);
}

/* The entry of h for device d (added when new; not locked yet).  Its context is the caller's:
 * NCCL's NULL stream is the legacy stream of the current context, as a launch's is. */
static held_dev_t *entry_for(res_nccl_t *h, res_dev_t *d, CUcontext ctx)
{
    for (int i = 0; i < h->ndev; i++)
        if (h->dev[i].d == d)
            return &h->dev[i];
    held_dev_t *e = &h->dev[h->ndev++];
    e->d = d;
    e->k = (collect_t){ .d = d, .ctx = ctx, .cap = INLINE_IDS };
    return e;
}

/* Take the entries' locks in device order, so that two calls never wait on each other;
 * each entry gets a new serial. */
static void lock_all(res_nccl_t *h)
{
    if (h->ndev == 2 && h->dev[0].d->device > h->dev[1].d->device) {
        held_dev_t t = h->dev[0];
        h->dev[0] = h->dev[1];
        h->dev[1] = t;
    }
    for (int i = 0; i < h->ndev; i++) {
        res_dev_t *d = h->dev[i].d;
        h->dev[i].k.ids = h->dev[i].k.ids ? h->dev[i].k.ids : h->dev[i].k.inline_ids;
        shim_lock(&d->lock);
        h->dev[i].k.serial = ++d->serial ? d->serial : ++d->serial;
    }
}

static void unlock_all(res_nccl_t *h)
{
    for (int i = h->ndev; i-- > 0;)
        shim_unlock(&h->dev[i].d->lock);
}

res_nccl_t *res_nccl_begin(const uint64_t ptr[2], const uint64_t bytes[2], CUstream s)
{
    res_dev_t *owner[2] = { NULL, NULL };
    res_nccl_t *h;
    if (res_stream_capturing(s, 0))
        return NULL;
    for (int i = 0; i < 2; i++)
        owner[i] = ptr[i] ? res_owner(ptr[i]) : NULL;
    if ((!owner[0] && !owner[1]) || !(h = calloc(1, sizeof(*h))))
        return NULL;
    CUcontext ctx = NULL;
    if (DRV(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS)
        ctx = NULL;
    h->stream = s;
    for (int i = 0; i < 2; i++)
        if (owner[i])
            entry_for(h, owner[i], ctx);
    lock_all(h);
    for (int i = 0; i < 2; i++)
        if (owner[i])
            add_range(&entry_for(h, owner[i], ctx)->k, ptr[i], bytes[i]);
    for (int i = 0; i < h->ndev; i++) {
        held_dev_t *e = &h->dev[i];
        relax_t rx = relax_begin();
        /* (Other devices' locks held.)  Not refused where it does not fit: the other ranks
         * would wait for it forever. */
        res_reach(e->d, &e->k, 1, 0, "an NCCL call",
                  "it goes ahead, and faults where it reaches them");
        relax_end(rx);
        for (size_t j = 0; j < e->k.n; j++)
            res_hold(e->d, e->k.ids[j]);
    }
    unlock_all(h);
    return h;
}

void res_nccl_end(res_nccl_t *h, int used)
{
    if (!h)
        return;
    lock_all(h);
    for (int i = 0; i < h->ndev; i++) {
        held_dev_t *e = &h->dev[i];
        if (used) {
            relax_t rx = relax_begin();
            res_finish(e->d, &e->k, h->stream, 0);
            relax_end(rx);
        }
        for (size_t j = 0; j < e->k.n; j++)
            res_unhold(e->d, e->k.ids[j]);
    }
    unlock_all(h);
    for (int i = 0; i < h->ndev; i++)
        if (h->dev[i].k.ids != h->dev[i].k.inline_ids)
            free(h->dev[i].k.ids);
    free(h);
}
