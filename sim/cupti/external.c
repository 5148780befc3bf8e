/* SPDX-License-Identifier: MIT */
/*
 * external.c - external correlation: per-thread stacks of ids, one per external kind.
 *
 * A client pushes its own id around a region of CUDA calls; while CUPTI_ACTIVITY_KIND_
 * EXTERNAL_CORRELATION is enabled, the API record of every call in the region is preceded by
 * one CUpti_ActivityExternalCorrelation record per kind with an id pushed, carrying the
 * innermost id and the call's correlation id.  CUPTI attaches these to its driver and runtime
 * API records, so they need CUPTI_ACTIVITY_KIND_DRIVER (or RUNTIME) enabled too; the stand-in
 * makes API records (DRIVER) only for the calls that submit work (activity.c).
 * The stacks belong to the thread and are freed when it exits.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_sim.h"

#define NKINDS CUPTI_EXTERNAL_CORRELATION_KIND_SIZE

typedef struct ext_stack {
    uint64_t *ids;
    size_t n, cap;
} ext_stack_t;

static _Thread_local ext_stack_t stacks[NKINDS];
static _Thread_local size_t pushed;         /* ids pushed on this thread, all kinds */
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void free_stacks(void *unused)
{
    for (int k = 0; k < NKINDS; k++) {
        free(stacks[k].ids);
        stacks[k] = (ext_stack_t){ 0 };
    }
    pushed = 0;
}

static void make_key(void)
{
    pthread_key_create(&exit_key, free_stacks);
}

static int kind_ok(CUpti_ExternalCorrelationKind kind)
{
    return (int)kind > (int)CUPTI_EXTERNAL_CORRELATION_KIND_INVALID && kind < NKINDS;
}

int sim_cupti_ext_pushed(void)
{
    return pushed != 0;
}

void sim_cupti_ext_emit(uint32_t correlation)
{
    for (int k = 0; k < NKINDS; k++) {
        if (!stacks[k].n)
            continue;
        CUpti_ActivityExternalCorrelation r;
        memset(&r, 0, sizeof(r));
        r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
        r.externalKind = (CUpti_ExternalCorrelationKind)k;
        r.externalId = stacks[k].ids[stacks[k].n - 1];
        r.correlationId = correlation;
        sim_cupti_emit(&r, sizeof(r));
    }
}

CUPTI_EXPORT CUptiResult CUPTIAPI
cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id)
{
    if (!kind_ok(kind))
        return CUPTI_ERROR_INVALID_PARAMETER;
    ext_stack_t *s = &stacks[kind];
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        uint64_t *ids = realloc(s->ids, cap * sizeof(*ids));
        if (!ids)
            return CUPTI_ERROR_OUT_OF_MEMORY;
        if (!s->ids) {
            pthread_once(&exit_once, make_key);
            pthread_setspecific(exit_key, stacks);
        }
        s->ids = ids;
        s->cap = cap;
    }
    s->ids[s->n++] = id;
    pushed++;
    return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult CUPTIAPI
cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *lastId)
{
    if (!kind_ok(kind))
        return CUPTI_ERROR_INVALID_PARAMETER;
    ext_stack_t *s = &stacks[kind];
    if (!s->n)
        return CUPTI_ERROR_QUEUE_EMPTY;
    s->n--;
    pushed--;
    if (lastId)
        *lastId = s->ids[s->n];
    return CUPTI_SUCCESS;
}
