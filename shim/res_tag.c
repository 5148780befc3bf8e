/* SPDX-License-Identifier: MIT */
/*
 * res_tag.c - allocation tags: what the shim remembers of a few of the arena's allocations.
 *
 * The arena keeps only where each allocation lies; what the shim must remember of a few of
 * them lives in a table keyed by base (d locked), an entry made when first needed and dropped
 * when the allocation's range goes back to the arena, so that an allocation handed the same
 * addresses later starts afresh.  CU_POINTER_ATTRIBUTE_CONTEXT is "the CUcontext in which ptr
 * was allocated", and every context of a device allocates from the device's one arena: an
 * allocation made in another context than the arena's has its context tagged.  Of
 * CU_POINTER_ATTRIBUTE_BUFFER_ID, cuda.h says "every memory allocation ... will have a unique
 * ID over a process lifetime.  Subsequent allocations do not reuse IDs from previous freed
 * allocations", and the arena hands freed addresses out again, so an allocation's ID is taken
 * from a count of the shim's own, in the upper half of the range, away from the driver's IDs
 * of the memory it serves itself (pinned host memory, pools).
 */
#include <errno.h>
#include <stdlib.h>

#include "res_int.h"

static _Atomic uint64_t next_buffer_id = 1;

static uint32_t tag_home(uint64_t base, uint32_t cap)
{
    return (uint32_t)((base * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* The entry of base in table `tags` of cap entries, or the free slot where it would go. */
static uint32_t tag_slot(const alloc_tag_t *tags, uint32_t cap, uint64_t base)
{
    uint32_t i = tag_home(base, cap);
    while (tags[i].base && tags[i].base != base)
        i = (i + 1) & (cap - 1);
    return i;
}

/* The entry of base in d's table, or the free slot where it would go (tags_cap > 0). */
static uint32_t tag_find(const res_dev_t *d, uint64_t base)
{
    return tag_slot(d->tags, d->tags_cap, base);
}

/* Twice the table: 0, or -ENOMEM (the table is as it was). */
static int tag_grow(res_dev_t *d)
{
    uint32_t cap = d->tags_cap ? d->tags_cap * 2 : 64;
    alloc_tag_t *tags = calloc(cap, sizeof(*tags));
    if (!tags)
        return -ENOMEM;
    for (uint32_t i = 0; i < d->tags_cap; i++)
        if (d->tags[i].base)
            tags[tag_slot(tags, cap, d->tags[i].base)] = d->tags[i];
    free(d->tags);
    d->tags = tags;
    d->tags_cap = cap;
    return 0;
}

/* The tag of the allocation at base, made (all zero) if it has none; NULL out of memory. */
static alloc_tag_t *tag_get(res_dev_t *d, uint64_t base)
{
    if ((d->tags_n + 1) * 2 > d->tags_cap && tag_grow(d) < 0)
        return NULL;
    alloc_tag_t *t = &d->tags[tag_find(d, base)];
    if (!t->base) {
        *t = (alloc_tag_t){ .base = base };
        d->tags_n++;
    }
    return t;
}

/* The tag of the allocation at base, or NULL. */
const alloc_tag_t *res_tag_of(const res_dev_t *d, uint64_t base)
{
    if (!d->tags_n)
        return NULL;
    const alloc_tag_t *t = &d->tags[tag_find(d, base)];
    return t->base ? t : NULL;
}

/* The allocation at base was made in context ctx (NULL: the arena's) and, when it is
 * stream-ordered, stands for an allocation from pool `pool`.  Without room to remember it,
 * its queries name the arena's context and no pool. */
void res_tag_origin(res_dev_t *d, uint64_t base, CUcontext ctx, CUmemoryPool pool)
{
    alloc_tag_t *t = tag_get(d, base);
    if (t) {
        t->ctx = ctx;
        t->pool = pool;
    }
}

/* The allocation at base left the arena: its tag goes, and the entries after it that it kept
 * from their home move back. */
void res_tag_drop(res_dev_t *d, uint64_t base)
{
    uint32_t mask = d->tags_cap - 1, i = tag_find(d, base);
    if (!d->tags[i].base)
        return;
    d->tags[i].base = 0;
    for (uint32_t j = (i + 1) & mask; d->tags[j].base; j = (j + 1) & mask) {
        uint32_t k = tag_home(d->tags[j].base, d->tags_cap);
        if (i < j ? (k > i && k <= j) : (k > i || k <= j))
            continue;                   /* j's home lies after the hole: it stays */
        d->tags[i] = d->tags[j];
        d->tags[j].base = 0;
        i = j;
    }
    d->tags_n--;
}

/* The buffer ID of the allocation at base (d locked).  Without room to remember it, a new
 * one each time: never another allocation's, though not the same twice. */
uint64_t res_buffer_id(res_dev_t *d, uint64_t base)
{
    alloc_tag_t *t = tag_get(d, base);
    if (t && t->id)
        return t->id;
    uint64_t id = 1ull << 63 | atomic_fetch_add(&next_buffer_id, 1);
    if (t)
        t->id = id;
    return id;
}

/* Every live allocation made in d's context, which no tag names a context for, is tagged
 * with it (d locked, before d's context changes), so that its queries and its context's
 * destruction (res_free_ctx) still find it once d has another context or none.  Without room
 * for a tag, the allocation counts as the next context's. */
void res_tags_own(res_dev_t *d)
{
    arena_info_t info;
    for (uint64_t at = d->base; d->ctx && arena_next(d->arena, at, &info) == 0;
         at = info.base + 1) {
        const alloc_tag_t *t = res_tag_of(d, info.base);
        alloc_tag_t *own = t && t->ctx ? NULL : tag_get(d, info.base);
        if (own)
            own->ctx = d->ctx;
    }
}
