/* SPDX-License-Identifier: MIT */
/*
 * io.c - the queue between the caller's operations and the engine's requests.
 *
 * nvme_write()/nvme_read() queue an operation; issue() cuts queued operations into
 * block-sized requests and hands them to the engine in batches while fewer than queue_depth
 * are in flight; nvme_complete() reaps finished requests, folds each into its operation
 * (a short transfer is an error: the caller's data counts as written only when every byte
 * was), checks or records the CRC32C (verify), refills the queue and hands finished
 * operations back.  The first failure degrades the area (nvme_degrade): from then on writes
 * are refused, so no data goes to a tier that lost some.  The test-only fault plan acts in
 * issue(), on the request it picks.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "nvme_int.h"

enum { FAULT_EIO = 1, FAULT_ENOSPC, FAULT_EROFS, FAULT_SHORT, FAULT_CORRUPT, FAULT_REAP,
       FAULT_STUCK, FAULT_AGAIN, FAULT_LAST = FAULT_AGAIN };
#define REQ_RETRIES 3       /* times a request that completed with -EAGAIN is sent again */

#define BATCH 64

int nvme_io_init(nvme_area_t *a)
{
    if (pthread_mutex_init(&a->lock, NULL))
        return -ENOMEM;
    a->lock_ok = 1;
    a->max_reqs = a->slot_size / a->block_size;
    a->ops = calloc(a->max_ops, sizeof(*a->ops));
    a->reqs = calloc((size_t)a->max_ops * a->max_reqs, sizeof(*a->reqs));
    if (a->verify)
        a->sums = calloc(a->nslots, sizeof(*a->sums));
    if (!a->ops || !a->reqs || (a->verify && !a->sums))
        return -ENOMEM;
    for (uint32_t i = 0; i < a->max_ops; i++) {
        a->ops[i].req = a->reqs + (size_t)i * a->max_reqs;
        a->ops[i].next = i + 1 < a->max_ops ? &a->ops[i + 1] : NULL;
    }
    a->op_free = a->ops;
    return 0;
}

void nvme_io_fini(nvme_area_t *a)
{
    free(a->ops);
    free(a->reqs);
    free(a->sums);
    if (a->lock_ok)
        pthread_mutex_destroy(&a->lock);
}

void nvme_degrade(nvme_area_t *a, int err, const char *fmt, ...)
{
    if (a->degraded)
        return;
    a->degraded = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->why, sizeof(a->why), fmt, ap);
    va_end(ap);
}

int nvme_degraded(nvme_area_t *a, char *why, size_t n)
{
    pthread_mutex_lock(&a->lock);
    int err = a->degraded;
    if (why && n)
        snprintf(why, n, "%s", err ? a->why : "");
    pthread_mutex_unlock(&a->lock);
    return err;
}

/* Append op to a list given by its head and tail. */
static void list_add(nvme_op_t **head, nvme_op_t **tail, nvme_op_t *op)
{
    op->next = NULL;
    if (*tail)
        (*tail)->next = op;
    else
        *head = op;
    *tail = op;
}

/* Take op, which follows prev (NULL: the head), out of a list. */
static void list_unlink(nvme_op_t **head, nvme_op_t **tail, nvme_op_t *prev, nvme_op_t *op)
{
    if (prev)
        prev->next = op->next;
    else
        *head = op->next;
    if (*tail == op)
        *tail = prev;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Count a finished operation. */
static void op_count(nvme_area_t *a, const nvme_op_t *op)
{
    nvme_stats_t *s = &a->stats;
    if (op->err)
        s->errors++;
    else if (op->write)
        s->writes++, s->bytes_written += op->len;
    else
        s->reads++, s->bytes_read += op->len;
    if (op->start_ns)
        s->io_ns += now_ns() - op->start_ns;
}

static void op_release(nvme_area_t *a, nvme_op_t *op);

/* An operation is over: record or check its CRC, then hand it out (done list or its
 * synchronous waiter), or release it where its waiter gave up (abandoned). */
static void op_finish(nvme_area_t *a, nvme_op_t *op)
{
    if (a->verify && op->write)
        a->sums[op->slot] = op->err ? (nvme_sum_t){ 0, 0 } : (nvme_sum_t){ op->crc, op->len };
    if (a->verify && !op->write && !op->err && a->sums[op->slot].len == op->len &&
        nvme_crc32c(0, op->buf, op->len) != a->sums[op->slot].crc) {
        op->err = -EBADMSG;
        nvme_degrade(a, -EBADMSG, "read of slot %u: CRC32C mismatch (the data on %s changed)",
                     op->slot, a->path);
    }
    op->finished = 1;
    op_count(a, op);
    if (op->abandoned) {
        a->nabandoned--;
        op->clock_token = 0;            /* (nobody waits for it: the clock goes on) */
        op_release(a, op);
    } else if (!op->sync) {
        list_add(&a->done_head, &a->done_tail, op);
    }
}

/* Fold a finished request into its operation. */
static void req_finish(nvme_area_t *a, nvme_req_t *r)
{
    nvme_op_t *op = r->op;
    int err = r->res < 0 ? r->res : (uint32_t)r->res != r->want ? -EIO : 0;
    if (r->corrupt && r->res > 0)
        ((uint8_t *)r->buf)[0] ^= 0x5a;
    if (err && !op->err) {
        op->err = err;
        if (r->res >= 0)
            nvme_degrade(a, err, "%s of slot %u on %s was short: %d of %u bytes at offset %llu",
                         r->write ? "write" : "read", op->slot, a->path, r->res, r->want,
                         (unsigned long long)r->off);
        else
            nvme_degrade(a, err, "%s of slot %u on %s failed: %s", r->write ? "write" : "read",
                         op->slot, a->path, strerror(-err));
    }
    r->finished = 1;
    if (++op->done == op->nreq)
        op_finish(a, op);
}

/* Whether the fault plan picks request r; disarms it when it does. */
static int fault_hits(nvme_area_t *a, const nvme_req_t *r)
{
    nvme_fault_t *f = &a->fault;
    if (!f->armed || (f->write >= 0 && f->write != r->write) || --f->nth)
        return 0;
    f->armed = 0;
    return 1;
}

/* Apply the fault plan to r: 1 when r finished at once (on a->imm), else 0. */
static int fault_apply(nvme_area_t *a, nvme_req_t *r)
{
    static const int errs[] = { [FAULT_EIO] = -EIO, [FAULT_ENOSPC] = -ENOSPC,
                                [FAULT_EROFS] = -EROFS };
    if (!fault_hits(a, r))
        return 0;
    if (a->fault.kind == FAULT_REAP || a->fault.kind == FAULT_STUCK) {
        /* (r goes on: the wait for completions fails once, or every time from now on) */
        a->fault.reap_fails = a->fault.kind == FAULT_STUCK ? 2 : 1;
        return 0;
    }
    if (a->fault.kind == FAULT_AGAIN) {
        r->again = REQ_RETRIES;         /* (r goes on; each completion reads -EAGAIN) */
        return 0;
    }
    if (a->fault.kind == FAULT_SHORT)
        r->len = r->len / 2 / NVME_ALIGN * NVME_ALIGN;
    if (a->fault.kind == FAULT_CORRUPT)
        r->corrupt = 1;
    if (a->fault.kind == FAULT_SHORT ? r->len : a->fault.kind == FAULT_CORRUPT)
        return 0;
    r->res = a->fault.kind == FAULT_SHORT ? 0 : errs[a->fault.kind];
    r->next = a->imm;
    a->imm = r;
    return 1;
}

/* Degrade the area when its file was truncated or (a file the user named) removed. */
static void check_file(nvme_area_t *a)
{
    struct stat st;
    if (a->degraded || a->kind == NVME_AREA_BLOCKDEV)
        return;
    if (fstat(a->fd, &st) < 0)
        nvme_degrade(a, -errno, "%s: fstat failed: %s", a->path, strerror(errno));
    else if (a->kind == NVME_AREA_FILE && st.st_nlink == 0)
        nvme_degrade(a, -ENOENT, "%s was removed while in use as the NVMe swap area", a->path);
    else if ((uint64_t)st.st_size < a->size)
        nvme_degrade(a, -EIO, "the NVMe swap area in %s was truncated to %lld of %llu bytes",
                     a->path, (long long)st.st_size, (unsigned long long)a->size);
}

/* Hand n requests to the engine; those it could not start finish with its error. */
static void engine_submit(nvme_area_t *a, nvme_req_t **batch, unsigned n)
{
    if (!n)
        return;
    int r = a->eng->submit(a, batch, n);
    unsigned started = r < 0 ? 0 : (unsigned)r;
    int err = r < 0 ? r : -EBUSY;
    a->inflight += started;
    a->stats.requests += started;
    a->stats.submits += started > 0;
    if (a->inflight > a->stats.max_inflight)
        a->stats.max_inflight = a->inflight;
    for (unsigned i = started; i < n; i++) {
        batch[i]->res = err;
        batch[i]->next = a->imm;
        a->imm = batch[i];
    }
}

/* Whether op's next request may be issued: its bytes were let go (a write's may not be yet:
 * nvme_write_more). */
static int req_ready(const nvme_area_t *a, const nvme_op_t *op)
{
    uint32_t end = (op->issued + 1) * a->block_size;
    return op->issued < op->nreq && (end <= op->ready || op->ready == op->len);
}

/* The next request of op, which has one ready (req_ready).  With a clock, each request is
 * charged as it goes, so that a write let go piece by piece is charged as its pieces go. */
static nvme_req_t *next_req(nvme_area_t *a, nvme_op_t *op)
{
    nvme_req_t *r = &op->req[op->issued];
    uint32_t at = op->issued * a->block_size;
    r->buf = op->buf + at;
    r->off = (uint64_t)op->slot * a->slot_size + at;
    r->len = r->want = op->len - at < a->block_size ? op->len - at : a->block_size;
    r->write = op->write;
    r->corrupt = 0;
    r->res = 0;
    r->retries = r->again = 0;
    r->finished = 0;
    r->clock_token = 0;
    r->op = op;
    if (op->issued++ == 0)
        op->start_ns = now_ns();
    if (a->clock.submit)
        op->clock_token = r->clock_token = a->clock.submit(a->clock.ctx, op->write, r->buf,
                                                              r->len);
    return r;
}

/* A write partly issued when the area degraded: what is not issued yet never is, and the
 * operation fails (with the area's error) once what was issued finished. */
static void cut_short(nvme_area_t *a, nvme_op_t *op)
{
    if (!op->err)
        op->err = a->degraded;
    op->nreq = op->issued;
    if (op->done == op->nreq)
        op_finish(a, op);
}

/* Refuse a write queued before the area degraded. */
static void refuse(nvme_area_t *a, nvme_op_t *op)
{
    op->err = a->degraded;
    op->done = op->issued = op->nreq;
    op_finish(a, op);
}

/* Start queued operations' requests while fewer than queue_depth are in flight, and
 * none finished without reaching the kernel (an error to fold in first: it may degrade
 * the area, which refuses the writes behind it).  Operations start in the order they were
 * queued; a write whose next bytes were not let go yet lets the ones behind it pass. */
static void issue(nvme_area_t *a)
{
    nvme_req_t *batch[BATCH];
    unsigned n = 0;
    int checked = 0;
    nvme_op_t *prev = NULL, *op = a->sq_head;
    while (op && !a->imm && a->inflight + n < a->queue_depth) {
        nvme_op_t *next = op->next;
        if (op->write && op->issued == 0 && !checked++)
            check_file(a);
        if (op->write && op->issued == 0 && a->degraded) {
            list_unlink(&a->sq_head, &a->sq_tail, prev, op);
            refuse(a, op);
            op = next;
            continue;
        }
        if (op->write && a->degraded) {  /* (begun before: the rest is refused, it fails) */
            list_unlink(&a->sq_head, &a->sq_tail, prev, op);
            cut_short(a, op);
            op = next;
            continue;
        }
        while (req_ready(a, op) && !a->imm && a->inflight + n < a->queue_depth) {
            nvme_req_t *r = next_req(a, op);
            if (!fault_apply(a, r))
                batch[n++] = r;
            if (n == BATCH) {
                engine_submit(a, batch, n);
                n = 0;
            }
        }
        if (op->issued == op->nreq)
            list_unlink(&a->sq_head, &a->sq_tail, prev, op);
        else
            prev = op;
        op = next;
    }
    engine_submit(a, batch, n);
}

static int reap_some(nvme_area_t *a, int wait);

/* Check what the caller asks of an operation. */
static int op_check(const nvme_area_t *a, uint32_t slot, const void *buf, uint32_t len)
{
    if (slot >= a->nslots || !len || len > a->slot_size || len % NVME_ALIGN ||
        (uintptr_t)buf % NVME_ALIGN)
        return -EINVAL;
    return 0;
}

static nvme_op_t *op_find(nvme_area_t *a, uint64_t tag, int write);

/* An operation whose wait failed may still be in flight, its request writing (a read) or
 * reading (a write) its buffer: before another operation on bytes of that buffer is queued,
 * it is waited for (a->lock held).  0, or the engine's error when that wait fails too (the
 * caller's operation is refused rather than share the buffer). */
static int abandoned_wait(nvme_area_t *a, const void *buf, uint32_t len)
{
    const uint8_t *lo = buf, *hi = lo + len;
    for (unsigned i = 0; a->nabandoned && i < a->max_ops; i++) {
        const nvme_op_t *op = &a->ops[i];
        while (op->live && op->abandoned && op->buf < hi && op->buf + op->len > lo) {
            int r = reap_some(a, 1);
            if (r < 0)
                return r;
            if (r == 0 && op->live && !a->inflight)
                return -EIO;            /* (nothing in flight will finish it) */
        }
    }
    return 0;
}

/* Queue an operation, of whose bytes the first `ready` may go (a write; reads: all);
 * *out (when not NULL) is it.  sync: Q_WAITED (handed back by nvme_wait), Q_SYNC (op_sync's,
 * untagged), else 0.  A tag already live in that direction is refused (-EBUSY): the calls
 * that name an operation by its tag would reach the other one. */
enum { Q_WAITED = 1, Q_SYNC = 2 };

static int queue_op(nvme_area_t *a, int write, uint32_t slot, void *buf, uint32_t len,
                    uint32_t ready, uint64_t tag, int sync, nvme_op_t **out)
{
    int err = op_check(a, slot, buf, len);
    if (err)
        return err;
    ready = write && ready < len ? ready : len;
    uint32_t crc = write && a->verify ? nvme_crc32c(0, buf, ready) : 0;
    pthread_mutex_lock(&a->lock);
    if (sync != Q_SYNC && op_find(a, tag, write)) {
        pthread_mutex_unlock(&a->lock);
        return -EBUSY;
    }
    err = write && a->degraded ? a->degraded : abandoned_wait(a, buf, len);
    nvme_op_t *op = err ? NULL : a->op_free;
    if (op) {
        a->op_free = op->next;
        *op = (nvme_op_t){ .tag = tag, .slot = slot, .len = len, .write = write, .buf = buf,
                           .crc = crc, .crc_at = ready, .ready = ready, .req = op->req,
                           .sync = sync != 0, .untagged = sync == Q_SYNC, .live = 1,
                           .nreq = (len + a->block_size - 1) / a->block_size };
        list_add(&a->sq_head, &a->sq_tail, op);
        a->pending++;
        if (out)
            *out = op;
    }
    err = op ? 0 : err ? err : -EAGAIN;
    pthread_mutex_unlock(&a->lock);
    return err;
}

int nvme_write(nvme_area_t *a, uint32_t slot, const void *buf, uint32_t len, uint64_t tag)
{
    return queue_op(a, 1, slot, (void *)buf, len, len, tag, 0, NULL);
}

int nvme_read(nvme_area_t *a, uint32_t slot, void *buf, uint32_t len, uint64_t tag)
{
    return queue_op(a, 0, slot, buf, len, len, tag, 0, NULL);
}

int nvme_submit(nvme_area_t *a)
{
    pthread_mutex_lock(&a->lock);
    issue(a);
    pthread_mutex_unlock(&a->lock);
    return 0;
}

int nvme_write_part(nvme_area_t *a, uint32_t slot, const void *buf, uint32_t len,
                    uint32_t ready, uint64_t tag, unsigned flags)
{
    if (ready % a->block_size && ready < len)
        return -EINVAL;
    return queue_op(a, 1, slot, (void *)buf, len, ready, tag,
                    flags & NVME_OP_WAITED ? Q_WAITED : 0, NULL);
}

int nvme_read_part(nvme_area_t *a, uint32_t slot, void *buf, uint32_t len, uint64_t tag,
                   unsigned flags)
{
    return queue_op(a, 0, slot, buf, len, len, tag, flags & NVME_OP_WAITED ? Q_WAITED : 0,
                    NULL);
}

/* The live operation of that direction with that tag (a->lock held), or NULL. */
static nvme_op_t *op_find(nvme_area_t *a, uint64_t tag, int write)
{
    for (uint32_t i = 0; i < a->max_ops; i++)
        if (a->ops[i].live && !a->ops[i].untagged && a->ops[i].tag == tag &&
            a->ops[i].write == write)
            return &a->ops[i];
    return NULL;
}

int nvme_write_more(nvme_area_t *a, uint64_t tag, uint32_t ready)
{
    pthread_mutex_lock(&a->lock);
    nvme_op_t *op = op_find(a, tag, 1);
    int err = !op ? -ENOENT : ready % a->block_size && ready < op->len ? -EINVAL : 0;
    if (!err && ready > op->ready) {
        ready = ready < op->len ? ready : op->len;
        if (a->verify)
            op->crc = nvme_crc32c(op->crc, op->buf + op->crc_at, ready - op->crc_at);
        op->crc_at = op->ready = ready;
        issue(a);
    }
    pthread_mutex_unlock(&a->lock);
    return err;
}

/* Bytes of read op that arrived in order: its leading requests finished without error. */
static uint32_t op_got(const nvme_area_t *a, nvme_op_t *op, unsigned *nreq)
{
    unsigned k = 0;
    while (k < op->issued && op->req[k].finished && op->req[k].res >= 0 &&
           (uint32_t)op->req[k].res == op->req[k].want)
        k++;
    *nreq = k;
    return k * a->block_size < op->len ? k * a->block_size : op->len;
}

int nvme_read_got(nvme_area_t *a, uint64_t tag, uint32_t after, int wait)
{
    unsigned k = 0;
    uint32_t got = 0;
    pthread_mutex_lock(&a->lock);
    nvme_op_t *op = op_find(a, tag, 0);
    issue(a);
    while (op && (got = op_got(a, op, &k)) <= after && !op->finished && wait &&
           reap_some(a, 1) >= 0)
        ;
    if (got > after && k * a->block_size > after + a->block_size) {
        k = after / a->block_size + 1;  /* one request at a time: the clock sees each */
        got = k * a->block_size < op->len ? k * a->block_size : op->len;
    }
    int r = !op ? -ENOENT : got > after ? (int)got : op->finished && op->err ? op->err : (int)got;
    if (op && k > op->clock_waited && a->clock.wait) {
        uint64_t last = 0;              /* (a piece sent again ends after those behind it) */
        for (unsigned i = op->clock_waited; i < k; i++)
            last = op->req[i].clock_token > last ? op->req[i].clock_token : last;
        a->clock.wait(a->clock.ctx, last);
        op->clock_waited = k;
    }
    pthread_mutex_unlock(&a->lock);
    return r;
}

int nvme_wait(nvme_area_t *a, uint64_t tag)
{
    pthread_mutex_lock(&a->lock);
    nvme_op_t *op = op_find(a, tag, 1);
    op = op && op->sync ? op : op_find(a, tag, 0);
    int err = !op || !op->sync ? -ENOENT : op->ready < op->len ? -EINVAL : 0;
    issue(a);
    while (!err && !op->finished) {
        int r = reap_some(a, 1);
        if (r < 0) {
            err = r;
            op->untagged = 1;           /* (left in flight: its tag goes, for the next) */
            op->abandoned = 1;
            a->nabandoned++;
        }
    }
    if (!err) {
        err = op->err;
        op_release(a, op);
    }
    pthread_mutex_unlock(&a->lock);
    return err;
}

/* Request r goes to the drive again: the clock charges it again, and its operation ends no
 * sooner than it does (a token is a completion time: the later one stands). */
static void recharge(nvme_area_t *a, nvme_req_t *r)
{
    if (!a->clock.submit || !r->clock_token)
        return;
    r->clock_token = a->clock.submit(a->clock.ctx, r->write, r->buf, r->len);
    if (r->op->clock_token && r->clock_token > r->op->clock_token)
        r->op->clock_token = r->clock_token;
}

/* Finish what the engine (waiting for one when wait) and the fault plan have finished; the
 * number of requests or a negative errno. */
static int reap_some(nvme_area_t *a, int wait)
{
    nvme_req_t *got[BATCH];
    int n = 0;
    while (a->imm) {
        nvme_req_t *r = a->imm;
        a->imm = r->next;
        req_finish(a, r);
        n++;
    }
    int r = !a->inflight ? 0
            : a->fault.reap_fails && wait && !n ? (a->fault.reap_fails &= 2, -EIO)
                                                : a->eng->reap(a, got, BATCH, wait && !n);
    if (r < 0 && !n)
        /* What is in flight stays there, its buffer and slot perhaps still in use: no write
         * goes to this area any more, so no slot is written while an old write may land. */
        nvme_degrade(a, r, "waiting for I/O on %s failed: %s", a->path, strerror(-r));
    if (r < 0)
        return n ? n : r;
    a->inflight -= (unsigned)r;
    for (int i = 0; i < r; i++) {
        if (got[i]->again) {            /* (the fault plan's "again") */
            got[i]->again--;
            got[i]->res = -EAGAIN;
        }
        if (got[i]->res == -EAGAIN && got[i]->retries < REQ_RETRIES) {
            got[i]->retries++;          /* (an O_DIRECT request the kernel could not start
                                         * then, as older kernels answer for large ones on a
                                         * block device: sent again, not an error) */
            a->stats.retried++;
            recharge(a, got[i]);
            engine_submit(a, &got[i], 1);
            continue;
        }
        req_finish(a, got[i]);
    }
    issue(a);
    return n + r;
}

/* Give a finished operation back to the free list, after the clock has seen it. */
static void op_release(nvme_area_t *a, nvme_op_t *op)
{
    if (op->clock_token && a->clock.wait)
        a->clock.wait(a->clock.ctx, op->clock_token);
    op->live = 0;
    a->pending--;
    op->next = a->op_free;
    a->op_free = op;
}

/* Has the clock reached op's completion (always, without a clock that can say)? */
static int op_due(const nvme_area_t *a, const nvme_op_t *op)
{
    return !a->clock.done || !op->clock_token || a->clock.done(a->clock.ctx, op->clock_token);
}

/* Move finished operations from the done list to out[0..max), only those the clock has
 * reached when `due_only`; the count. */
static unsigned take_done(nvme_area_t *a, nvme_done_t *out, unsigned max, int due_only)
{
    unsigned n = 0;
    nvme_op_t *prev = NULL, *op = a->done_head;
    while (n < max && op) {
        nvme_op_t *next = op->next;
        if (due_only && !op_due(a, op)) {
            prev = op;
            op = next;
            continue;
        }
        list_unlink(&a->done_head, &a->done_tail, prev, op);
        out[n++] = (nvme_done_t){ op->tag, op->slot, op->write, op->err };
        op_release(a, op);
        op = next;
    }
    return n;
}

/* Is an operation the clock has reached on the done list? */
static int done_due(const nvme_area_t *a)
{
    for (const nvme_op_t *op = a->done_head; op; op = op->next)
        if (op_due(a, op))
            return 1;
    return 0;
}

int nvme_complete(nvme_area_t *a, nvme_done_t *out, unsigned max, unsigned min_wait)
{
    unsigned n = 0;
    int err = 0;
    min_wait = min_wait < max ? min_wait : max;
    pthread_mutex_lock(&a->lock);
    issue(a);
    for (;;) {
        /* (Past min_wait, a poll: what the clock has not reached yet is not done for it.) */
        n += take_done(a, out + n, max - n, n >= min_wait);
        if (n >= max)
            break;
        int r = reap_some(a, n < min_wait);
        if (r < 0) {
            err = r;
            break;
        }
        if (r == 0 && (n >= min_wait ? !done_due(a) : !a->done_head && !a->inflight))
            break;
    }
    pthread_mutex_unlock(&a->lock);
    return n ? (int)n : err;
}

/* Queue one operation and wait for it alone; others finished meanwhile stay for
 * nvme_complete(). */
static int op_sync(nvme_area_t *a, int write, uint32_t slot, void *buf, uint32_t len)
{
    nvme_op_t *op;
    int err = queue_op(a, write, slot, buf, len, len, 0, Q_SYNC, &op);
    if (err)
        return err;
    pthread_mutex_lock(&a->lock);
    issue(a);
    while (!op->finished) {
        int r = reap_some(a, 1);
        if (r < 0) {
            err = r;
            op->abandoned = 1;          /* (left in flight) */
            a->nabandoned++;
            break;
        }
    }
    if (op->finished) {
        err = op->err;
        op_release(a, op);
    }
    pthread_mutex_unlock(&a->lock);
    return err;
}

int nvme_write_sync(nvme_area_t *a, uint32_t slot, const void *buf, uint32_t len)
{
    return op_sync(a, 1, slot, (void *)buf, len);
}

int nvme_read_sync(nvme_area_t *a, uint32_t slot, void *buf, uint32_t len)
{
    return op_sync(a, 0, slot, buf, len);
}

unsigned nvme_pending(nvme_area_t *a)
{
    pthread_mutex_lock(&a->lock);
    unsigned n = a->pending;
    pthread_mutex_unlock(&a->lock);
    return n;
}

void nvme_get_stats(nvme_area_t *a, nvme_stats_t *s)
{
    pthread_mutex_lock(&a->lock);
    *s = a->stats;
    pthread_mutex_unlock(&a->lock);
}

void nvme_set_clock(nvme_area_t *a, const nvme_clock_t *clock)
{
    pthread_mutex_lock(&a->lock);
    a->clock = clock ? *clock : (nvme_clock_t){ 0 };
    pthread_mutex_unlock(&a->lock);
}

/* The simulator's functions, called through nvme_clock_t's ctx-taking signatures. */
typedef struct sym_clock {
    uint64_t (*submit)(int write, const void *buf, uint64_t bytes);
    void (*wait)(uint64_t token);
    int (*done)(uint64_t token);
} sym_clock_t;

static sym_clock_t sym_clock;

static uint64_t sym_submit(void *ctx, int write, const void *buf, uint64_t bytes)
{
    return ((sym_clock_t *)ctx)->submit(write, buf, bytes);
}

static void sym_wait(void *ctx, uint64_t token)
{
    ((sym_clock_t *)ctx)->wait(token);
}

static int sym_done(void *ctx, uint64_t token)
{
    return ((sym_clock_t *)ctx)->done(token);
}

int nvme_clock_lookup(nvme_clock_t *clock, const char *submit_sym, const char *wait_sym,
                      const char *done_sym)
{
    void *s = dlsym(RTLD_DEFAULT, submit_sym), *w = dlsym(RTLD_DEFAULT, wait_sym);
    void *d = done_sym ? dlsym(RTLD_DEFAULT, done_sym) : NULL;
    if (!s || !w)
        return -ENOENT;
    *(void **)&sym_clock.submit = s;
    *(void **)&sym_clock.wait = w;
    *(void **)&sym_clock.done = d;
    *clock = (nvme_clock_t){ sym_submit, sym_wait, d ? sym_done : NULL, &sym_clock };
    return 0;
}

int nvme_fault_plan(nvme_area_t *a, int write, unsigned nth, const char *kind)
{
    static const char *const names[] = { [FAULT_EIO] = "eio", [FAULT_ENOSPC] = "enospc",
                                         [FAULT_EROFS] = "erofs", [FAULT_SHORT] = "short",
                                         [FAULT_CORRUPT] = "corrupt", [FAULT_REAP] = "reap",
                                         [FAULT_STUCK] = "stuck", [FAULT_AGAIN] = "again" };
    int k = 0;
    for (int i = 1; i <= FAULT_LAST; i++)
        if (kind && strcmp(kind, names[i]) == 0)
            k = i;
    if (!k || !nth || write < -1 || write > 1 || (k == FAULT_CORRUPT && write == 1))
        return -EINVAL;
    pthread_mutex_lock(&a->lock);
    a->fault = (nvme_fault_t){ 1, write, nth, k, 0 };
    pthread_mutex_unlock(&a->lock);
    return 0;
}

int nvme_fault_parse(nvme_area_t *a, const char *spec)
{
    char dir[8], kind[16];
    unsigned nth;
    int end = 0;
    const char *colon = spec ? strchr(spec, ':') : NULL;
    if (!colon || !isdigit((unsigned char)colon[1]) ||     /* (%u takes "-1" and blanks) */
        sscanf(spec, "%7[a-z]:%u:%15[a-z]%n", dir, &nth, kind, &end) != 3 || spec[end])
        return -EINVAL;
    int write = !strcmp(dir, "write") ? 1 : !strcmp(dir, "read") ? 0 : !strcmp(dir, "any") ? -1
                                                                                          : -2;
    return nvme_fault_plan(a, write, nth, kind);
}
