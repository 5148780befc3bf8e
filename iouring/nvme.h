/* SPDX-License-Identifier: MIT */
/*
 * nvme.h - the NVMe tier: a swap area on a file system or block device, cut into
 * chunk-sized slots, read and written with io_uring (or pread/pwrite threads where io_uring
 * is unavailable).
 *
 * The module depends on nothing else of Elixir's and reads no environment variable: the
 * caller (the shim) parses its options and fills nvme_options_t.  One nvme_area_t is one
 * open swap area.  A chunk's slot is its home on NVMe: nvme_slot_alloc() gives one, I/O moves
 * whole slots (or a 4 KiB-aligned prefix of one) between the area and caller memory.
 *
 * I/O is asynchronous: nvme_write()/nvme_read() queue an operation, nvme_submit() hands the
 * queued operations to the kernel in one batch (each split into block-sized requests, at most
 * queue_depth of them in flight), nvme_complete() returns finished operations with their
 * result.  An operation succeeds only if every byte moved: a short transfer is an error.
 * The first failed operation (I/O error, no space, short transfer, a truncated or vanished
 * file, a read-only device, a CRC mismatch) marks the area degraded: queued and later writes
 * are refused with the error that degraded it, reads are still attempted (they may be the
 * only way back for data already there).  The caller's copy of a chunk stays authoritative
 * until its write completed with 0.
 *
 * Every function returns 0 (or a count) or a negative errno.  All functions but nvme_open()
 * and nvme_close() may be called from several threads (one lock per area).
 */
#ifndef ELIXIR_NVME_H
#define ELIXIR_NVME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NVME_ALIGN 4096u                       /* offsets, lengths and buffers (O_DIRECT) */
#define NVME_DEFAULT_SLOT (2u << 20)           /* the chunk: 2 MiB */
#define NVME_MAX_SLOT (1u << 30)             /* 1 GiB */
#define NVME_DEFAULT_QUEUE_DEPTH 16u           /* see bench/nvme_fio.sh */
#define NVME_DEFAULT_BLOCK (2u << 20)          /* one request per 2 MiB chunk */
#define NVME_DEFAULT_STAGING (64u << 20)       /* staging pool when the caller gives none */

typedef enum nvme_engine_kind {
    NVME_ENGINE_AUTO = 0,       /* io_uring, else pread/pwrite threads */
    NVME_ENGINE_URING,          /* io_uring or fail */
    NVME_ENGINE_PSYNC,          /* pread/pwrite threads */
} nvme_engine_kind_t;

typedef enum nvme_area_kind {
    NVME_AREA_TMPFILE = 1,      /* a directory: an unnamed file (O_TMPFILE) */
    NVME_AREA_UNLINKED,         /* a directory without O_TMPFILE: created, unlinked at once */
    NVME_AREA_FILE,             /* a regular file the user named (kept; locked while open) */
    NVME_AREA_BLOCKDEV,         /* a whole block device (opened exclusively) */
} nvme_area_kind_t;

/* Test-only flags (nvme_options_t.test_flags). */
#define NVME_TEST_NO_TMPFILE 1u    /* a directory: act as if O_TMPFILE were unsupported */
#define NVME_TEST_NO_LOCKS 2u      /* a directory: act as if its file system refused OFD locks */

typedef struct nvme_area nvme_area_t;

typedef struct nvme_options {
    const char *path;           /* a directory, a regular file or a block device */
    uint64_t size;              /* bytes; 0: the file's or device's size, or in a directory
                                 * what the file system can spare less a margin */
    uint32_t slot_size;         /* 0: NVME_DEFAULT_SLOT; a multiple of NVME_ALIGN, at most
                                 * NVME_MAX_SLOT (a request, at most a slot, then fits one
                                 * read or write and an int) */
    uint32_t queue_depth;       /* requests in flight; 0: NVME_DEFAULT_QUEUE_DEPTH; <= 4096 */
    uint32_t block_size;        /* bytes per request; 0: NVME_DEFAULT_BLOCK capped at the
                                 * slot; a multiple of NVME_ALIGN dividing the slot size */
    uint32_t max_ops;           /* operations queued or in flight; 0: 256 */
    int verify;                 /* keep a CRC32C per slot, check it on every read */
    nvme_engine_kind_t engine;
    void *staging;              /* page-aligned pool to register with io_uring, or NULL */
    size_t staging_bytes;       /* its size; with staging NULL, 0 means NVME_DEFAULT_STAGING
                                 * allocated by the module (nvme_staging() returns it) */
    unsigned share;             /* a directory: processes expected to share it, this one
                                 * included (0 or 1: alone); sizes the default (ledger.c) */
    unsigned test_flags;        /* NVME_TEST_* */
} nvme_options_t;

/* One finished operation. */
typedef struct nvme_done {
    uint64_t tag;               /* as given to nvme_write()/nvme_read() */
    uint32_t slot;
    int write;                  /* 1: a write, 0: a read */
    int result;                 /* 0, or a negative errno: the data did not (fully) move */
} nvme_done_t;

/* The hook through which a caller charges I/O on a clock of its own (the simulator's).
 * submit() runs when each request goes to the kernel, with its memory and bytes, and returns
 * a token; wait() runs with the token of an operation's last request when the operation is
 * handed back, and with a request's token when nvme_read_got() reports it arrived.  done(), where
 * there is one, says whether the clock has reached a token's completion: an operation that
 * finished on the file but not yet on the clock is not handed back by a poll (nvme_complete
 * past its min_wait), as a real drive's completion that has not come yet is not. */
typedef struct nvme_clock {
    uint64_t (*submit)(void *ctx, int write, const void *buf, uint64_t bytes);
    void (*wait)(void *ctx, uint64_t token);
    int (*done)(void *ctx, uint64_t token);     /* NULL: what finished is done */
    void *ctx;
} nvme_clock_t;

/* area.c */
/* Open the swap area o->path describes; *out on success.  Errors: -EINVAL (a bad option:
 * see the options above), -ENOENT/-EACCES (path), -ENOSPC (size larger than the file system
 * can give or the device holds), -EBUSY (a block device or file another area uses),
 * -ENOSYS (engine), -EUSERS (a directory's ledger is full: 4096 areas). */
int nvme_open(const nvme_options_t *o, nvme_area_t **out);
/* Wait for what is in flight, release everything; an unnamed area's space goes back. */
void nvme_close(nvme_area_t *a);
uint64_t nvme_size(const nvme_area_t *a);
uint32_t nvme_slot_size(const nvme_area_t *a);
uint32_t nvme_block_size(const nvme_area_t *a);
nvme_area_kind_t nvme_area_kind(const nvme_area_t *a);
/* What statvfs says the file system at dir can spare less a margin (5% of its size, at
 * least min(1 GiB, 10%)), in whole slots.  A directory area's default is its share of that
 * (ledger.c). */
int nvme_default_size(const char *dir, uint32_t slot_size, uint64_t *out);

/* ledger.c: how areas in one directory split its space.  The ledger is a file of that name
 * in the directory (mode 0600, no data); it is removed when its last live area closes, and
 * may stay after a crash until the next area in the directory opens and closes. */
#define NVME_LEDGER_NAME ".elixir-nvme-ledger"
typedef struct nvme_ledger_info {
    unsigned live;              /* other live areas in the directory */
    uint64_t live_bytes;        /* bytes they reserved */
    uint64_t pending_bytes;     /* of which the file system has not given them yet */
    unsigned reclaimed;         /* records of areas that were gone, cleared */
    uint64_t spare;             /* what the file system can spare less the margin and
                                 * pending_bytes */
    unsigned share;             /* the default's divisor: the job's processes still to come,
                                 * this one included (nvme_area_ledger only) */
    int none;                   /* 0, or the errno why there is no ledger to use (the file
                                 * system refuses its locks, or it is another user's): the
                                 * area is sized as if alone */
} nvme_ledger_info_t;
/* The directory's ledger as this area found it when it opened (zeros but a directory's). */
void nvme_area_ledger(const nvme_area_t *a, nvme_ledger_info_t *out);
/* The ledger of dir now (records of areas gone cleared; zeros and the spare when none). */
int nvme_ledger_read(const char *dir, nvme_ledger_info_t *out);
/* The area's record leaves its directory's ledger (the last removes the ledger) while the
 * area stays open: for a process about to exit without nvme_close (its space goes back as it
 * ends).  Only the process that opened the area does anything; nvme_close does it too. */
void nvme_ledger_leave(nvme_area_t *a);

/* slots.c */
/* A free slot's index in *slot, or -ENOSPC; nvme_slot_free() gives it back. */
int nvme_slot_alloc(nvme_area_t *a, uint32_t *slot);
int nvme_slot_free(nvme_area_t *a, uint32_t slot);
uint32_t nvme_slots_total(const nvme_area_t *a);
uint32_t nvme_slots_used(const nvme_area_t *a);

/* io.c */
/* Queue the write of len bytes at buf into slot (len and buf aligned to NVME_ALIGN, len at
 * most the slot size).  buf must stay untouched until the operation is complete.  -EAGAIN:
 * max_ops operations are pending (complete some); -EINVAL: alignment or range; -EBUSY: a
 * write tagged tag is not yet handed back (a tag names one operation of each direction at a
 * time); after degradation, the error that degraded the area. */
int nvme_write(nvme_area_t *a, uint32_t slot, const void *buf, uint32_t len, uint64_t tag);
/* Queue the read of len bytes of slot into buf; as nvme_write(). */
int nvme_read(nvme_area_t *a, uint32_t slot, void *buf, uint32_t len, uint64_t tag);

/* Operations in pieces, for a caller that pipelines a slot's trip through buf with another
 * link (the shim: GPU -> buf -> slot, slot -> buf -> GPU).  A piece is a request (the block
 * size).  The tag names the operation in the calls below: it must be unique among the
 * operations of its direction not yet handed back (-EBUSY otherwise).  With NVME_OP_WAITED
 * the operation is handed back by nvme_wait(), never by nvme_complete(). */
#define NVME_OP_WAITED 1u
/* As nvme_write(), of whose bytes only the first `ready` (a multiple of the block size, or
 * len) may be written yet: the rest waits for nvme_write_more().  The CRC32C (verify) covers
 * the bytes as they are let go, so each must hold its final data by then. */
int nvme_write_part(nvme_area_t *a, uint32_t slot, const void *buf, uint32_t len,
                    uint32_t ready, uint64_t tag, unsigned flags);
/* The first `ready` bytes of the write tagged tag may go now (issued at once where the queue
 * has room).  -ENOENT: no such write; -EINVAL: ready not a multiple of the block size. */
int nvme_write_more(nvme_area_t *a, uint64_t tag, uint32_t ready);
/* As nvme_read(), with flags. */
int nvme_read_part(nvme_area_t *a, uint32_t slot, void *buf, uint32_t len, uint64_t tag,
                   unsigned flags);
/* How many bytes at the start of the read tagged tag have arrived (whole requests, in
 * order), waiting (with `wait`) until more than `after` have or the read failed.  At most
 * one request more than `after` (a multiple of the block size) is reported, so that the
 * caller passes each on as it arrives and the clock sees each arrive.  A negative errno: the
 * read failed before more than `after` arrived, or -ENOENT, no such read.  Arrived bytes are
 * not yet checked (verify): the read's result, from nvme_wait() or nvme_complete(), says
 * whether they are good. */
int nvme_read_got(nvme_area_t *a, uint64_t tag, uint32_t after, int wait);
/* Wait for the NVME_OP_WAITED operation tagged tag (a write: all its bytes let go) and hand
 * it back: 0 or its negative errno; -ENOENT: no such operation; -EINVAL: a write not wholly
 * let go; the engine's error when reaping failed (the operation, still in flight, is never
 * handed back, and its tag is free again; the area lets it go when it finishes, and an
 * operation queued on bytes of its buffer waits for that first: buf must otherwise stay
 * untouched until then). */
int nvme_wait(nvme_area_t *a, uint64_t tag);
/* Hand the queued operations to the kernel (one batch); 0 or a negative errno. */
int nvme_submit(nvme_area_t *a);
/* Fill out[0..max) with finished operations, waiting until at least min_wait are (0: never
 * wait: completions already posted are reaped without a system call); beyond min_wait, only
 * those the clock has reached (nvme_clock_t.done).  Returns the count. */
int nvme_complete(nvme_area_t *a, nvme_done_t *out, unsigned max, unsigned min_wait);
/* Write or read one slot and wait for it: nvme_write/read + submit + complete.  When the wait
 * itself fails (the engine's error), the operation may still be in flight: as for nvme_wait,
 * buf stays in use until it finishes, and an operation queued on its bytes waits for that. */
int nvme_write_sync(nvme_area_t *a, uint32_t slot, const void *buf, uint32_t len);
int nvme_read_sync(nvme_area_t *a, uint32_t slot, void *buf, uint32_t len);
/* Operations queued or in flight. */
unsigned nvme_pending(nvme_area_t *a);
/* 0 while healthy; else the negative errno that degraded the area, and its reason (one line,
 * naming the operation, slot and error) in why[0..n) when why is not NULL. */
int nvme_degraded(nvme_area_t *a, char *why, size_t n);
/* The clock hook (NULL: none).  Set it before the first I/O. */
void nvme_set_clock(nvme_area_t *a, const nvme_clock_t *clock);
/* Look up submit_sym, wait_sym and done_sym (may be NULL) with dlsym(RTLD_DEFAULT):
 * functions `uint64_t submit(int write, const void *buf, uint64_t bytes)`, `void wait(uint64_t token)` and
 * `int done(uint64_t token)`.  Fills *clock when the first two exist (the simulator; done
 * where it does too), else -ENOENT (a real driver: no hook). */
int nvme_clock_lookup(nvme_clock_t *clock, const char *submit_sym, const char *wait_sym,
                      const char *done_sym);
/* The staging pool: registered with io_uring when that runs; *bytes its size. */
void *nvme_staging(nvme_area_t *a, size_t *bytes);

/* Which engine runs: "io_uring" or "psync" (pread/pwrite threads); when io_uring was
 * wanted but could not run, why[0..n) says why (else it is empty). */
const char *nvme_engine(const nvme_area_t *a, char *why, size_t n);
/* Whether requests use registered buffers and a registered file (io_uring only). */
int nvme_registered(const nvme_area_t *a);

/* Counters since nvme_open(). */
typedef struct nvme_stats {
    uint64_t writes, reads;             /* operations finished without error */
    uint64_t bytes_written, bytes_read;
    uint64_t errors;                    /* operations finished with an error */
    uint64_t requests;                  /* requests handed to the engine */
    uint64_t submits;                   /* batches handed to the engine (system calls) */
    uint64_t retried;                   /* requests sent again after -EAGAIN */
    uint64_t io_ns;                     /* sum over operations of issue-to-finish time */
    unsigned max_inflight;              /* most requests in flight at once */
} nvme_stats_t;
void nvme_get_stats(nvme_area_t *a, nvme_stats_t *s);

/* Test-only fault plan: the nth (1-based) request of the given direction (1 write, 0 read,
 * -1 either) after this call fails as spec says: "eio", "enospc", "erofs" (it fails without
 * reaching the kernel), "short" (it transfers half its bytes, then stops), "corrupt" (a read
 * returns its data with one byte flipped), "reap" (it runs, but the next wait for a completion
 * fails once with EIO, as a failing io_uring_submit_and_wait would: the area degrades, since
 * what was in flight may still use its slot and buffer), "stuck" (as "reap", but every wait
 * for completions fails from then on; polls still reap), "again" (it runs, and its first
 * three completions read -EAGAIN, as an older kernel answers a large O_DIRECT request it
 * could not start: each time it is sent again, and the third retry is its last).  Spec text "write:N:KIND" / "read:N:KIND" /
 * "any:N:KIND" is parsed by nvme_fault_parse() (the form an ELIXIR_NVME_FAULT option takes). */
int nvme_fault_plan(nvme_area_t *a, int write, unsigned nth, const char *kind);
int nvme_fault_parse(nvme_area_t *a, const char *spec);

/* crc32c.c */
/* CRC32C (Castagnoli) of len bytes, continuing from crc (0 to start). */
uint32_t nvme_crc32c(uint32_t crc, const void *buf, size_t len);
/* "sse4.2" or "table": which implementation nvme_crc32c() uses on this CPU. */
const char *nvme_crc32c_impl(void);

#ifdef __cplusplus
}
#endif
#endif
