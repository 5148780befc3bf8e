/* SPDX-License-Identifier: MIT */
/*
 * arena.h - where application allocations live: one big reserved virtual range divided into
 * chunks (the allocation granularity), and the O(1) map from a pointer to its allocation.
 *
 * A pure data structure: no CUDA calls, no I/O, no locking (the caller holds the shim's lock;
 * arena_lookup and the other const functions only read, so concurrent readers are safe while
 * nobody writes).  The arena decides addresses and tells its caller, through callbacks, when a
 * chunk starts and stops being used, so that the caller can back it with physical memory.
 *
 * Layout.  Requests of at most min(ARENA_SMALL_MAX, chunk / 2) bytes are "small": they are
 * rounded up to a size class and sub-allocated from a slab, a chunk divided into equal slots
 * (one class per slab, a bitmap of used slots).  Size classes are multiples of 256 bytes, four
 * per power of two (256, 512, 768, 1 Ki, 1.25 Ki, 1.5 Ki, 1.75 Ki, 2 Ki, 2.5 Ki, ... 1 Mi):
 * above 1 KiB a slot wastes less than 25% of the request (half that on average), below it
 * less than 256 bytes, against up to 50% for powers of two, and GPU memory is the scarce
 * resource; the price is more classes (44), hence more partly filled slabs (each class in use
 * keeps one: up to 44 partly used chunks).  Every slot is 256-byte aligned and power-of-two
 * classes are aligned to their size.  Larger requests get whole chunks of their own,
 * contiguous and chunk-aligned, placed by address-ordered first fit (a segment tree over a
 * free-chunk bitmap: O(log n) per search or update).
 *
 * Placement depends only on which slots and chunks are in use (or cached), not on the order of
 * past events: a small request takes the lowest free slot of the highest-addressed partly
 * filled slab of its class, a new slab takes the highest chunk that is free or cached, a large
 * request the lowest run that fits.  Slabs thus gather at the top of the arena and large runs
 * stay whole at the bottom, and a training job that repeats the same allocations and frees
 * every iteration gets the same addresses every iteration (from the second one, when the
 * empty-slab cache below has settled; large ones from the first unless they reach the slabs).
 *
 * Chunk life.  A chunk is "in use" from the moment the arena hands it to a large allocation or
 * a slab (on_first) until it returns to the free pool (on_last).  Its live-allocation count
 * (arena_chunk_refs) is 1 for a chunk of a large allocation and the number of live slots for a
 * slab.  A slab whose last slot is freed is not released at once: up to a small number of
 * empty slab chunks (ARENA_CACHE_DEFAULT, see arena_set_cache_limit) stay cached, still in use
 * with 0 live allocations and no on_last, so that a free/alloc pattern that empties and refills
 * a slab does not remap physical memory every iteration.  A cached chunk may be reused by any
 * size class (without on_first).  arena_trim releases them all (on_last for each): call it when
 * physical memory is short or when a large allocation fails for lack of address space.
 *
 * Lookup.  An address belongs to an allocation when it lies in [base, base + requested size):
 * the slack after the request (the rest of its slot, or of its last chunk) belongs to nobody,
 * and one past the end is not part of it.
 */
#ifndef ELIXIR_ARENA_H
#define ELIXIR_ARENA_H

#include <stdint.h>

#define ARENA_ALIGN         256u                    /* every allocation is aligned to this */
#define ARENA_SMALL_MAX     (1024u * 1024u)         /* largest small (slab) request */
#define ARENA_CACHE_DEFAULT 4u                      /* empty slab chunks kept in use */
#define ARENA_MAX_CHUNKS    (1u << 28)              /* per arena */

typedef struct arena arena_t;

/* One allocation: its base, its requested size, and the chunks [first_chunk, +nchunks) that
 * its requested bytes touch. */
typedef struct arena_info {
    uint64_t base, size;
    uint32_t first_chunk, nchunks;
} arena_info_t;

/* Counters: current values and their peaks since arena_create. */
typedef struct arena_stats {
    uint64_t live_bytes, peak_live_bytes;   /* requested bytes of live allocations */
    uint64_t chunk_bytes, peak_chunk_bytes; /* bytes of chunks in use (cached ones included) */
    uint64_t live_allocs, peak_live_allocs; /* live allocations */
    uint64_t total_allocs, total_frees;     /* successful arena_alloc / arena_free calls */
    uint32_t slab_chunks;                   /* chunks holding slabs with live slots */
    uint32_t cached_chunks;                 /* empty slab chunks kept in use */
    uint32_t largest_free_run;              /* longest run of free chunks (fragmentation) */
} arena_stats_t;

/* Called for one chunk index; on_first may fail (negative errno), on_last must not. */
typedef int (*arena_chunk_fn)(void *ctx, uint32_t chunk);

/* A range [base, base + size) of `chunk`-byte chunks.  chunk: a power of two from 4 KiB to
 * 1 GiB; base: a multiple of chunk; size: a non-zero multiple of chunk, at most
 * ARENA_MAX_CHUNKS chunks, base + size not wrapping.  0, -EINVAL, or -ENOMEM (host memory for
 * the chunk index). */
int arena_create(uint64_t base, uint64_t size, uint64_t chunk, arena_t **out);

/* Frees the arena's own memory; reports nothing (the caller releases its chunks itself). */
void arena_destroy(arena_t *a);

/* Allocates `size` bytes (> 0, else -EINVAL), aligned to ARENA_ALIGN at least (large ones to a
 * chunk), and fills *info (info may be NULL).  Every chunk that comes into use is reported
 * through on_first (may be NULL) before the call returns, in ascending order.  If on_first
 * fails for one, the allocation is undone: the chunks already reported go to the release
 * callback (arena_set_release) in reverse order, the arena is as before, and on_first's error
 * is returned.  -ENOMEM when no address space fits (nothing changed; arena_trim may make room)
 * or host memory for slab metadata runs out. */
int arena_alloc(arena_t *a, uint64_t size, arena_chunk_fn on_first, void *ctx,
                arena_info_t *info);

/* The callback with which arena_alloc gives back the chunks it had reported when on_first
 * fails part-way; it is called with arena_alloc's ctx.  Usually the on_last that arena_free
 * is given.  None by default (then such chunks are not reported back). */
void arena_set_release(arena_t *a, arena_chunk_fn on_last);

/* Frees the allocation whose base is addr; -EINVAL (nothing changed) when addr is not the base
 * of a live allocation (interior pointer, double free, outside the arena).  Chunks that leave
 * use are reported through on_last (may be NULL), in ascending order.  *info (may be NULL)
 * receives what was freed. */
int arena_free(arena_t *a, uint64_t addr, arena_chunk_fn on_last, void *ctx, arena_info_t *info);

/* The live allocation with base <= addr < base + requested size, in O(1) (one chunk-index
 * lookup, one division for slabs); -ENOENT if none.  info may be NULL. */
int arena_lookup(const arena_t *a, uint64_t addr, arena_info_t *info);

/* The live allocation with the lowest base at or above addr, in *info (may be NULL); -ENOENT
 * if none.  Walking every allocation (from the arena's base, then from each base found plus
 * one) visits every chunk record and used slot once: O(chunks + slots) in all. */
int arena_next(const arena_t *a, uint64_t addr, arena_info_t *info);

/* Releases every cached empty slab chunk through on_last; returns how many. */
uint32_t arena_trim(arena_t *a, arena_chunk_fn on_last, void *ctx);

/* How many empty slab chunks may stay cached from now on (0: none).  Chunks already cached
 * beyond the new limit stay until arena_trim or until they are reused. */
void arena_set_cache_limit(arena_t *a, uint32_t chunks);

/* 1 when addr lies in the arena's whole range [base, base + size), else 0. */
int arena_contains(const arena_t *a, uint64_t addr);

/* The address of a chunk's first byte (chunk < arena_chunk_count). */
uint64_t arena_chunk_addr(const arena_t *a, uint32_t chunk);

/* The chunk holding addr (arena_contains(a, addr) must hold). */
uint32_t arena_chunk_of(const arena_t *a, uint64_t addr);

uint32_t arena_chunk_count(const arena_t *a);
uint64_t arena_chunk_size(const arena_t *a);

/* Live allocations touching a chunk (0 for a free or cached chunk). */
uint32_t arena_chunk_refs(const arena_t *a, uint32_t chunk);

/* 1 when a chunk is in use (between its on_first and its on_last), else 0. */
int arena_chunk_in_use(const arena_t *a, uint32_t chunk);

/* The slot size a small request of `size` bytes gets (0 if it is not small for this arena). */
uint64_t arena_small_class(const arena_t *a, uint64_t size);

void arena_stats(const arena_t *a, arena_stats_t *out);

#endif
