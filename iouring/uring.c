/* SPDX-License-Identifier: MIT */
/*
 * uring.c - the io_uring engine (liburing).
 *
 * The ring has room for queue_depth requests, the area's file is registered (requests name
 * it by index: no file lookup per request), and so is the staging pool (a request whose
 * buffer lies in it is a READ_FIXED/WRITE_FIXED: the kernel pins those pages once, not on
 * every request), in pieces of at most 1 GiB, the kernel's limit per registered buffer.
 * Requests are prepared in a batch and submitted with one io_uring_enter.  The ring is set
 * up without COOP_TASKRUN, so the kernel posts completions to the shared ring on its own and
 * reaping them is a read of shared memory; a system call happens only to wait.
 * Either registration may fail (memory limits): the engine then runs unregistered.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "nvme_int.h"

#define REG_PIECE (1ul << 30)

typedef struct uring {
    struct io_uring ring;
    int fixed_file;
    unsigned nbufs;             /* registered pieces of the staging pool */
} uring_t;

/* The registered piece that holds [buf, buf + len), or -1. */
static int buf_index(const nvme_area_t *a, const uring_t *u, const void *buf, uint32_t len)
{
    const uint8_t *p = buf;
    if (!u->nbufs || p < a->staging || p + len > a->staging + a->staging_bytes)
        return -1;
    size_t first = (size_t)(p - a->staging) / REG_PIECE;
    size_t last = (size_t)(p + len - 1 - a->staging) / REG_PIECE;
    return first == last ? (int)first : -1;
}

static void prep(nvme_area_t *a, uring_t *u, struct io_uring_sqe *sqe, nvme_req_t *r)
{
    int fd = u->fixed_file ? 0 : a->fd;
    int bi = buf_index(a, u, r->buf, r->len);
    if (r->write && bi >= 0)
        io_uring_prep_write_fixed(sqe, fd, r->buf, r->len, r->off, bi);
    else if (r->write)
        io_uring_prep_write(sqe, fd, r->buf, r->len, r->off);
    else if (bi >= 0)
        io_uring_prep_read_fixed(sqe, fd, r->buf, r->len, r->off, bi);
    else
        io_uring_prep_read(sqe, fd, r->buf, r->len, r->off);
    if (u->fixed_file)
        sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data(sqe, r);
}

/* Prepare n requests and submit them in one system call; the number started.  The ring
 * holds queue_depth entries and io.c never has more in flight, so an entry is always free.
 * Should the submission itself fail, the entries stay in the ring and go with the next reap
 * (a poll or a wait). */
static int uring_submit(nvme_area_t *a, nvme_req_t **reqs, unsigned n)
{
    uring_t *u = a->eng_state;
    for (unsigned i = 0; i < n; i++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
        if (!sqe) {
            io_uring_submit(&u->ring);
            sqe = io_uring_get_sqe(&u->ring);
        }
        if (!sqe) {
            io_uring_submit(&u->ring);
            return i ? (int)i : -EBUSY;
        }
        prep(a, u, sqe, reqs[i]);
    }
    io_uring_submit(&u->ring);
    return (int)n;
}

/* Reap posted completions from the shared ring (no system call); wait for one first when
 * min is set and none is posted. */
static int uring_reap(nvme_area_t *a, nvme_req_t **out, unsigned max, unsigned min)
{
    uring_t *u = a->eng_state;
    struct io_uring_cqe *cqes[64];
    max = max < 64 ? max : 64;
    for (;;) {
        unsigned n = io_uring_peek_batch_cqe(&u->ring, cqes, max);
        for (unsigned i = 0; i < n; i++) {
            out[i] = io_uring_cqe_get_data(cqes[i]);
            out[i]->res = cqes[i]->res;
        }
        io_uring_cq_advance(&u->ring, n);
        if (!min && io_uring_sq_ready(&u->ring))
            io_uring_submit(&u->ring);  /* (entries a failed submission left: a poll sends
                                         * them too, not only a wait) */
        if (n || !min)
            return (int)n;
        int r = io_uring_submit_and_wait(&u->ring, 1);
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
            return r;
    }
}

/* Unregister first: the ring's teardown runs later in a kernel worker, and until it does a
 * registered file stays open (its space not given back, a block device still claimed). */
static void uring_fini(nvme_area_t *a)
{
    uring_t *u = a->eng_state;
    if (u->fixed_file)
        io_uring_unregister_files(&u->ring);
    if (u->nbufs)
        io_uring_unregister_buffers(&u->ring);
    io_uring_queue_exit(&u->ring);
    free(u);
    a->eng_state = NULL;
}

static const nvme_engine_ops_t uring_ops = {
    .name = "io_uring",
    .submit = uring_submit,
    .reap = uring_reap,
    .fini = uring_fini,
};

/* Register the staging pool in pieces of at most REG_PIECE; the count, or 0 if refused. */
static unsigned register_staging(nvme_area_t *a, uring_t *u)
{
    unsigned n = (unsigned)((a->staging_bytes + REG_PIECE - 1) / REG_PIECE);
    struct iovec *iov = calloc(n, sizeof(*iov));
    if (!iov)
        return 0;
    for (unsigned i = 0; i < n; i++) {
        size_t at = (size_t)i * REG_PIECE, left = a->staging_bytes - at;
        iov[i] = (struct iovec){ a->staging + at, left < REG_PIECE ? left : REG_PIECE };
    }
    int r = io_uring_register_buffers(&u->ring, iov, n);
    free(iov);
    return r == 0 ? n : 0;
}

int nvme_uring_init(nvme_area_t *a)
{
    uring_t *u = calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    int r = io_uring_queue_init(a->queue_depth, &u->ring, 0);
    if (r < 0) {
        snprintf(a->eng_why, sizeof(a->eng_why), "io_uring_setup failed: %s%s", strerror(-r),
                 r == -EPERM ? " (kernel.io_uring_disabled, or a seccomp filter)"
                 : r == -ENOSYS ? " (a kernel without io_uring, or a seccomp filter)" : "");
        free(u);
        return r;
    }
    u->fixed_file = io_uring_register_files(&u->ring, &a->fd, 1) == 0;
    if (a->staging_bytes)
        u->nbufs = register_staging(a, u);
    a->registered = u->fixed_file && u->nbufs;
    a->eng = &uring_ops;
    a->eng_state = u;
    return 0;
}
