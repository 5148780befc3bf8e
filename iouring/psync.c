/* SPDX-License-Identifier: MIT */
/*
 * psync.c - the fallback engine: pread/pwrite on worker threads, behind the same interface
 * as io_uring, for kernels where io_uring cannot run (too old, kernel.io_uring_disabled, a
 * container's seccomp filter).
 *
 * min(queue_depth, 32) threads take requests from one queue and post finished ones to
 * another; each request is one pread or pwrite, not retried, so a short transfer reaches
 * io.c as it does from io_uring.  The threads block every signal: the program's handlers
 * never run on them.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "nvme_int.h"

#define MAX_THREADS 32

typedef struct psync {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    nvme_req_t *sq, *sq_tail, *cq, *cq_tail;
    int stop;
    int fd;
    unsigned nthreads;
    pthread_t threads[MAX_THREADS];
} psync_t;

static void push(nvme_req_t **head, nvme_req_t **tail, nvme_req_t *r)
{
    r->next = NULL;
    if (*tail)
        (*tail)->next = r;
    else
        *head = r;
    *tail = r;
}

static nvme_req_t *pop(nvme_req_t **head, nvme_req_t **tail)
{
    nvme_req_t *r = *head;
    if (r && !(*head = r->next))
        *tail = NULL;
    return r;
}

static void *worker(void *arg)
{
    psync_t *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && !p->sq)
            pthread_cond_wait(&p->work, &p->lock);
        nvme_req_t *r = pop(&p->sq, &p->sq_tail);
        if (!r)
            break;
        pthread_mutex_unlock(&p->lock);
        ssize_t n = r->write ? pwrite(p->fd, r->buf, r->len, (off_t)r->off)
                             : pread(p->fd, r->buf, r->len, (off_t)r->off);
        r->res = n < 0 ? -errno : (int32_t)n;
        pthread_mutex_lock(&p->lock);
        push(&p->cq, &p->cq_tail, r);
        pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static int psync_submit(nvme_area_t *a, nvme_req_t **reqs, unsigned n)
{
    psync_t *p = a->eng_state;
    pthread_mutex_lock(&p->lock);
    for (unsigned i = 0; i < n; i++)
        push(&p->sq, &p->sq_tail, reqs[i]);
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    return (int)n;
}

static int psync_reap(nvme_area_t *a, nvme_req_t **out, unsigned max, unsigned min)
{
    psync_t *p = a->eng_state;
    unsigned n = 0;
    pthread_mutex_lock(&p->lock);
    while (min && !p->cq)
        pthread_cond_wait(&p->done, &p->lock);
    while (n < max && p->cq)
        out[n++] = pop(&p->cq, &p->cq_tail);
    pthread_mutex_unlock(&p->lock);
    return (int)n;
}

static void psync_fini(nvme_area_t *a)
{
    psync_t *p = a->eng_state;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p);
    a->eng_state = NULL;
}

static const nvme_engine_ops_t psync_ops = {
    .name = "psync",
    .submit = psync_submit,
    .reap = psync_reap,
    .fini = psync_fini,
};

/* Start the threads with every signal blocked (they inherit the mask). */
static int start_threads(psync_t *p, unsigned n)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = 0;
    for (; p->nthreads < n && !err; p->nthreads++)
        err = pthread_create(&p->threads[p->nthreads], NULL, worker, p);
    if (err)
        p->nthreads--;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -err;
}

int nvme_psync_init(nvme_area_t *a)
{
    psync_t *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->fd = a->fd;
    a->eng = &psync_ops;
    a->eng_state = p;
    int err = start_threads(p, a->queue_depth < MAX_THREADS ? a->queue_depth : MAX_THREADS);
    if (err) {
        psync_fini(a);
        a->eng = NULL;
    }
    return err;
}
