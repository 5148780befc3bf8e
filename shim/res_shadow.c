/* SPDX-License-Identifier: MIT */
/*
 * res_shadow.c - shadow mappings: memory that a migration copies into stays mapped at a slot
 * of its own for as long as it lives, so that the next migration into it needs no mapping
 * call (res_move.c and res_flight.c copy through them).
 */
#include <errno.h>
#include <stdlib.h>

#include "res_int.h"

/*
 * Moving a chunk copies it into new memory, which must be mapped and accessible somewhere to be
 * copied into.  Mapping it at the staging address, setting its access and unmapping it again cost
 * about 99 us of driver time per 2 MiB chunk on an H200 (docs/simulator.md), as much again as a
 * migration spends in the driver under the chunk's own address.  So memory that a migration copies
 * into stays mapped at a slot of its own, its shadow mapping, for as long as it lives (in use, or
 * as a spare).  The next migration into it needs no mapping call of its own.  The slots are one
 * reservation, made at the first migration: as many as the budgets hold chunks, plus the spares (at
 * most SHADOW_MAX).  Where anything fails the staging address serves, as it always did.
 */
#define SHADOW_MAX (1u << 20)

static uint32_t sh_home(CUmemGenericAllocationHandle h, uint32_t cap)
{
    return (uint32_t)(((uint64_t)h * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* The entry of h in the table, or the empty one where it would go (sh_cap > 0). */
static uint32_t sh_find(const res_dev_t *d, CUmemGenericAllocationHandle h)
{
    uint32_t i = sh_home(h, d->sh_cap);
    while (d->sh_vals[i] && d->sh_keys[i] != h)
        i = (i + 1) & (d->sh_cap - 1);
    return i;
}

/* Twice the table: 0, or -ENOMEM (the table is as it was). */
static int sh_grow(res_dev_t *d)
{
    uint32_t cap = d->sh_cap ? d->sh_cap * 2 : 64;
    CUmemGenericAllocationHandle *keys = malloc(cap * sizeof(*keys));
    uint32_t *vals = calloc(cap, sizeof(*vals));
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -ENOMEM;
    }
    res_dev_t t = { .sh_keys = keys, .sh_vals = vals, .sh_cap = cap };
    for (uint32_t i = 0; i < d->sh_cap; i++)
        if (d->sh_vals[i]) {
            uint32_t j = sh_find(&t, d->sh_keys[i]);
            keys[j] = d->sh_keys[i];
            vals[j] = d->sh_vals[i];
        }
    free(d->sh_keys);
    free(d->sh_vals);
    d->sh_keys = keys, d->sh_vals = vals, d->sh_cap = cap;
    return 0;
}

/* Removes entry i, moving back the entries after it that it kept from their home. */
static void sh_delete(res_dev_t *d, uint32_t i)
{
    uint32_t mask = d->sh_cap - 1;
    d->sh_vals[i] = 0;
    for (uint32_t j = (i + 1) & mask; d->sh_vals[j]; j = (j + 1) & mask) {
        uint32_t k = sh_home(d->sh_keys[j], d->sh_cap);
        int between = i < j ? (k > i && k <= j) : (k > i || k <= j);
        if (between)
            continue;                   /* j's home lies after the hole: it stays */
        d->sh_keys[i] = d->sh_keys[j];
        d->sh_vals[i] = d->sh_vals[j];
        d->sh_vals[j] = 0;
        i = j;
    }
    d->sh_n--;
}

static CUdeviceptr shadow_addr(const res_dev_t *d, uint32_t slot)
{
    return d->shadow + (uint64_t)slot * d->chunk;
}

/* h's shadow mapping, or 0 when it has none. */
CUdeviceptr res_shadow_of(const res_dev_t *d, CUmemGenericAllocationHandle h)
{
    if (!d->sh_n)
        return 0;
    uint32_t i = sh_find(d, h);
    return d->sh_vals[i] ? shadow_addr(d, d->sh_vals[i] - 1) : 0;
}

/* The reservation of the shadow slots, at the first need: 0, or -1 (staging only, for good). */
static int shadow_reserve(res_dev_t *d)
{
    if (d->shadow)
        return 0;
    if (d->shadow_off)
        return -1;
    uint64_t slots = (d->gpu_budget_set + atomic_load(&res_host.budget_set)) / d->chunk +
                     SPARES + HOST_SPARES + 2;  /* (the budgets as set up: they may come
                                                 * back up) */
    slots = slots < SHADOW_MAX ? slots : SHADOW_MAX;
    d->shadow_free = malloc(slots * sizeof(*d->shadow_free));
    if (!d->shadow_free ||
        DRV(cuMemAddressReserve)(&d->shadow, slots * d->chunk, d->chunk, 0, 0) != CUDA_SUCCESS) {
        free(d->shadow_free);
        d->shadow_free = NULL;
        d->shadow = 0;
        d->shadow_off = 1;
        SHIM_INFO(RES, "device %d: no address space for shadow mappings; migrations map their "
                  "target at the staging address", d->device);
        return -1;
    }
    d->shadow_slots = (uint32_t)slots;
    return 0;
}

/* Maps h, accessible as the arena is (map_at), at a free shadow slot: its address, or 0 when
 * it cannot be (no slot left, a driver error). */
CUdeviceptr res_shadow_add(res_dev_t *d, CUmemGenericAllocationHandle h)
{
    if (shadow_reserve(d) < 0 || ((d->sh_n + 1) * 2 > d->sh_cap && sh_grow(d) < 0))
        return 0;
    uint32_t slot;
    if (d->nshadow_free)
        slot = d->shadow_free[--d->nshadow_free];
    else if (d->shadow_top < d->shadow_slots)
        slot = d->shadow_top++;
    else
        return 0;
    CUdeviceptr va = shadow_addr(d, slot);
    if (res_map_at(d, va, h) != CUDA_SUCCESS) {
        d->shadow_free[d->nshadow_free++] = slot;
        return 0;
    }
    uint32_t i = sh_find(d, h);
    d->sh_keys[i] = h;
    d->sh_vals[i] = slot + 1;
    d->sh_n++;
    return va;
}

void res_shadow_drop(res_dev_t *d, CUmemGenericAllocationHandle h)
{
    if (!d->sh_n)
        return;
    uint32_t i = sh_find(d, h);
    if (!d->sh_vals[i])
        return;
    uint32_t slot = d->sh_vals[i] - 1;
    DRVT(cuMemUnmap)(shadow_addr(d, slot), d->chunk);
    sh_delete(d, i);
    d->shadow_free[d->nshadow_free++] = slot;
}
