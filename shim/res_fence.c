/* SPDX-License-Identifier: MIT */
/*
 * res_fence.c - a graph launch, or a launch whose arguments the shim cannot read, as a fence
 * on every device with an arena, not only on its stream's: res_launch.c takes the other
 * devices' locks here before the driver call (res_launch_begin) and gives each of them the
 * launch as its fence after it (res_launch_end).
 */
#include "res_int.h"

/*
 * A graph may hold nodes of any device: a capture that forked to another device's stream, a
 * node naming another context, a copy node between two devices' memory.  Its launch is a
 * fence on every device with an arena, not only on its stream's: each one's lock is held from
 * before the driver call until the launch is that device's fence (res_finish of an operation
 * that reached unknown memory), so that no migration of that device runs beside the graph
 * (the plan's moves in flight there complete first), and where evicted chunks are unmapped,
 * each one's chunks are brought back and pinned first (res_reach of such an operation),
 * since any node may reach any of them.  The locks are taken in device order, as NCCL calls
 * take theirs (d's dropped and taken again in its turn: nothing has been done under it yet),
 * so that two such operations never wait on each other.
 */
SHIM_COLD void res_fence_others_begin(collect_t *k)
{
    res_dev_t *d = k->d;
    shim_unlock(&d->lock);
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *o = &res_devs[i];
        if (o != d && atomic_load_explicit((_Atomic int *)&o->ready, memory_order_acquire) <= 0)
            continue;
        shim_lock(&o->lock);
        if (o->cover_slot)
            res_use_cover_flush(o);     /* (before the graph launch enqueues anything) */
        int moving = o->nflights || o->npend || o->nvme_flights;
        if (o == d) {
            /* (settle drained d before its lock was dropped: moves another thread's plan
             * issued meanwhile complete too; d's context is current) */
            if (moving)
                res_flights_drain(d);
            continue;
        }
        k->fenced |= 1u << i;
        if (!moving && o->host_mappable && !o->nvme_on && !o->unmap_on)
            continue;
        CUcontext popped;           /* o's context current for its migrations */
        int pushed = DRV(cuCtxPushCurrent_v2)(o->ctx) == CUDA_SUCCESS;
        /* (The plan's moves in flight there complete first, as on the launch's own device
         * (settle): the graph may write a chunk whose eviction copy is still reading it.) */
        if (moving)
            res_flights_drain(o);
        if (!o->host_mappable || o->nvme_on || o->unmap_on) {
            collect_t ko = { .d = o, .ctx = k->ctx, .unknown = 1 };    /* reaching nothing seen */
            res_reach(o, &ko, 1, 0, "a graph launch", "");  /* (pins everything, refuses none) */
        }
        if (pushed)
            DRV(cuCtxPopCurrent_v2)(&popped);
    }
}

/* After the driver returned r for the graph launch k on stream s: each device of k->fenced
 * gets the launch as its fence (when the driver took it and it was not captured), and its
 * lock is dropped. */
SHIM_COLD void res_fence_others_end(collect_t *k, CUresult r, CUstream s, int ptds)
{
    for (int i = 0; i < MAX_DEVICES; i++) {
        if (!(k->fenced >> i & 1))
            continue;
        res_dev_t *o = &res_devs[i];
        if (r == CUDA_SUCCESS && !k->capturing) {
            collect_t ko = { .d = o, .ctx = k->ctx, .serial = res_next_serial(o), .unknown = 1 };
            ko.ids = ko.inline_ids;
            ko.cap = INLINE_IDS;
            res_finish(o, &ko, s, ptds);
        }
        shim_unlock(&o->lock);
    }
    k->fenced = 0;
}
