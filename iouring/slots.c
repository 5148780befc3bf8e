/* SPDX-License-Identifier: MIT */
/*
 * slots.c - the slot allocator: the area cut into slot_size pieces, one per chunk that lives
 * on NVMe, tracked by a bitmap.
 *
 * A chunk keeps its slot for as long as the caller holds it (its home on NVMe: a chunk that
 * comes back to memory unchanged need not be written again), so the allocator only has to
 * be quick, not clever: next fit from the last slot given, 64 slots per bitmap word.
 */
#include <errno.h>
#include <stdlib.h>

#include "nvme_int.h"

int nvme_slots_init(nvme_area_t *a)
{
    uint64_t n = a->size / a->slot_size;
    if (n == 0 || n > UINT32_MAX)
        return n ? -EFBIG : -ENOSPC;
    a->nslots = (uint32_t)n;
    a->slot_bits = calloc((n + 63) / 64, sizeof(uint64_t));
    return a->slot_bits ? 0 : -ENOMEM;
}

void nvme_slots_fini(nvme_area_t *a)
{
    free(a->slot_bits);
    a->slot_bits = NULL;
}

/* The first clear bit in word w at or after bit `from` whose slot exists, or -1. */
static int free_bit(const nvme_area_t *a, uint32_t w, unsigned from)
{
    uint64_t bits = ~a->slot_bits[w] & (~0ull << from);
    if (!bits)
        return -1;
    uint64_t slot = (uint64_t)w * 64 + (unsigned)__builtin_ctzll(bits);
    return slot < a->nslots ? (int)(slot - (uint64_t)w * 64) : -1;
}

int nvme_slot_alloc(nvme_area_t *a, uint32_t *slot)
{
    int err = -ENOSPC;
    pthread_mutex_lock(&a->lock);
    uint32_t words = (uint32_t)(((uint64_t)a->nslots + 63) / 64), start = a->slot_hint / 64;
    for (uint32_t i = 0; i <= words && a->slots_used < a->nslots; i++) {
        uint32_t w = (start + i) % words;
        int b = free_bit(a, w, i == 0 ? a->slot_hint % 64 : 0);
        if (b < 0)
            continue;
        a->slot_bits[w] |= 1ull << b;
        *slot = w * 64 + (uint32_t)b;
        a->slot_hint = *slot + 1 < a->nslots ? *slot + 1 : 0;
        a->slots_used++;
        err = 0;
        break;
    }
    pthread_mutex_unlock(&a->lock);
    return err;
}

/* -EINVAL for a slot out of range or not allocated (a double free). */
int nvme_slot_free(nvme_area_t *a, uint32_t slot)
{
    int err = -EINVAL;
    pthread_mutex_lock(&a->lock);
    if (slot < a->nslots && (a->slot_bits[slot / 64] >> (slot % 64) & 1)) {
        a->slot_bits[slot / 64] &= ~(1ull << (slot % 64));
        a->slots_used--;
        err = 0;
    }
    pthread_mutex_unlock(&a->lock);
    return err;
}

uint32_t nvme_slots_total(const nvme_area_t *a) { return a->nslots; }
uint32_t nvme_slots_used(const nvme_area_t *a)
{
    return atomic_load_explicit(&a->slots_used, memory_order_relaxed);
}
