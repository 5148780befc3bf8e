/* SPDX-License-Identifier: MIT */
/*
 * nvme_int.h - what the files of iouring/ share: the area, operations and requests, and
 * the engine interface that io_uring (uring.c) and pread/pwrite threads (psync.c) provide.
 *
 * An operation (nvme_op_t) is one slot's read or write as the caller asked for it; it is cut
 * into requests (nvme_req_t) of block_size bytes, the unit an engine performs.  io.c owns
 * the queue: it issues requests while fewer than queue_depth are in flight, reaps them from
 * the engine, folds their results into their operation and hands finished operations back.
 */
#ifndef ELIXIR_NVME_INT_H
#define ELIXIR_NVME_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "nvme.h"

typedef struct nvme_op nvme_op_t;

/* The CRC32C of what a slot holds (verify); len 0: unknown. */
typedef struct nvme_sum {
    uint32_t crc, len;
} nvme_sum_t;

/* One request to the kernel: len bytes at offset off of the area from or to buf. */
typedef struct nvme_req {
    void *buf;
    uint64_t off;
    uint32_t len;
    int write;
    uint32_t want;              /* bytes the caller's operation needs moved (len unless a
                                 * fault plan shortened the request) */
    int corrupt;                /* fault plan: flip a byte of what a read returns */
    int32_t res;                /* bytes moved or a negative errno (set by the engine) */
    uint8_t retries;            /* times it was sent again after -EAGAIN */
    uint8_t again;              /* fault plan "again": completions still to read -EAGAIN */
    int finished;               /* folded into its operation */
    uint64_t clock_token;       /* clock.submit's, when the clock runs */
    nvme_op_t *op;
    struct nvme_req *next;      /* free list, engine queues, immediate completions */
} nvme_req_t;

struct nvme_op {
    uint64_t tag;
    uint32_t slot, len;
    int write;
    uint8_t *buf;
    uint32_t crc;               /* of the data written (verify) */
    nvme_req_t *req;            /* its requests: max_reqs of them */
    unsigned nreq, issued, done;
    uint32_t ready;             /* a write: bytes the caller let go so far (nvme_write_more);
                                 * only requests wholly inside them are issued */
    uint32_t crc_at;            /* bytes the CRC (verify) covers so far */
    int sync;                   /* waited for (nvme_*_sync, NVME_OP_WAITED), not handed out */
    int untagged;               /* nvme_*_sync's: found by no tag */
    int abandoned;              /* its wait failed (reap_some): released as it finishes,
                                 * and no operation on its buffer is queued before */
    int live;                   /* queued, in flight or finished, not yet released */
    int finished;
    int err;                    /* first error of its requests */
    uint64_t clock_token;       /* the latest completion clock.submit gave its requests (0:
                                 * none) */
    unsigned clock_waited;      /* leading requests clock.wait saw (nvme_read_got) */
    uint64_t start_ns;          /* when its first request was issued */
    nvme_op_t *next;            /* free list, submit queue, done list */
};

/* An engine: one per area. */
typedef struct nvme_engine_ops {
    const char *name;
    /* Start n requests; how many started (the first ones), or a negative errno (none). */
    int (*submit)(nvme_area_t *a, nvme_req_t **reqs, unsigned n);
    /* Finished requests into out[0..max), waiting for at least min; the count or -errno. */
    int (*reap)(nvme_area_t *a, nvme_req_t **out, unsigned max, unsigned min);
    void (*fini)(nvme_area_t *a);
} nvme_engine_ops_t;

typedef struct nvme_fault {
    int armed;
    int write;                  /* 1, 0, or -1: either */
    unsigned nth;               /* requests of that direction still to let through, plus 1 */
    int kind;                   /* FAULT_* in io.c */
    int reap_fails;             /* FAULT_REAP hit: the next wait for completions fails (1);
                                 * FAULT_STUCK: every one from then on (2) */
} nvme_fault_t;

struct nvme_area {
    /* area.c */
    int fd;
    nvme_area_kind_t kind;
    uint64_t size;
    uint32_t slot_size, block_size, queue_depth, max_ops;
    int verify;
    char path[4096];
    /* ledger.c (a directory) */
    int ledger_fd;              /* -1: none */
    int ledger_locked;          /* its mutex is held */
    long ledger_rec;            /* this area's record, or -1 */
    long ledger_pid;            /* the process that wrote it (a forked child leaves it be) */
    nvme_ledger_info_t ledger;
    /* slots.c */
    uint64_t *slot_bits;
    uint32_t nslots, slot_hint;
    _Atomic uint32_t slots_used;        /* (changed under lock; read without it) */
    /* io.c */
    pthread_mutex_t lock;
    nvme_op_t *ops, *op_free, *sq_head, *sq_tail, *done_head, *done_tail;
    unsigned nabandoned;        /* live operations whose wait failed (nvme_op.abandoned) */
    nvme_req_t *reqs, *imm;     /* imm: requests finished without reaching the kernel */
    unsigned max_reqs;          /* requests per operation: slot_size / block_size */
    unsigned inflight, pending; /* requests with the engine; operations not yet handed out */
    nvme_sum_t *sums;           /* per slot, with verify */
    int lock_ok;
    int degraded;
    char why[256];
    nvme_clock_t clock;
    nvme_fault_t fault;
    nvme_stats_t stats;
    /* staging pool */
    uint8_t *staging;
    size_t staging_bytes;
    int staging_owned;
    /* engine */
    const nvme_engine_ops_t *eng;
    void *eng_state;
    int registered;
    char eng_why[160];
};

/* area.c */
int nvme_area_open_file(nvme_area_t *a, const nvme_options_t *o);

/* ledger.c */
/* Open dir's ledger, its mutex held, records of areas gone cleared, the others in a->ledger. */
int nvme_ledger_begin(nvme_area_t *a, const char *dir, unsigned test_flags);
/* The size of an area in dir (a->slot_size set): want checked, or 0's share; -ENOSPC. */
int nvme_ledger_size(nvme_area_t *a, const char *dir, uint64_t want, unsigned share,
                     uint64_t *out);
/* Record the area (preallocated: a->fd, a->size) and let the mutex go. */
int nvme_ledger_commit(nvme_area_t *a);
/* Clear the area's record; the last live one removes the ledger.  Safe when none began or
 * it ended; in a forked child it only closes the child's descriptor. */
void nvme_ledger_end(nvme_area_t *a);

/* slots.c */
int nvme_slots_init(nvme_area_t *a);
void nvme_slots_fini(nvme_area_t *a);

/* io.c */
int nvme_io_init(nvme_area_t *a);
void nvme_io_fini(nvme_area_t *a);
void nvme_degrade(nvme_area_t *a, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* crc32c.c */
/* nvme_crc32c() without the crc32 instruction (the tests compare the two). */
uint32_t nvme_crc32c_portable(uint32_t crc, const void *buf, size_t len);

/* uring.c */
/* Start io_uring on a (registered file, registered staging buffers); -errno when the kernel
 * refuses it (ENOSYS, EPERM: disabled or filtered), with the reason in a->eng_why. */
int nvme_uring_init(nvme_area_t *a);

/* psync.c */
int nvme_psync_init(nvme_area_t *a);

#endif
