/* SPDX-License-Identifier: MIT */
/*
 * wrap_nccl.c - wrappers of NCCL's operations: their buffers are resident (and held) while
 * the library enqueues them, and each is recorded in the trace.
 *
 * The wrappers are exported under NCCL's names (hooks_nccl.h), so a program linked with
 * -lnccl reaches them first, and the dlsym override hands them out for NCCL's names.  The
 * real functions are found lazily: the one the dlsym override saw (a library opened with
 * RTLD_LOCAL), else the next definition after libelixir.so (RTLD_NEXT), else a loaded
 * libnccl.so.2.  A program that never uses NCCL never resolves anything.
 *
 * Each operation's send and receive ranges are computed from its count, element type and
 * (for all-gather, reduce-scatter, all-to-all, gather and scatter) the communicator's size,
 * and handed to residency (res_nccl.c) before the call.  NCCL enqueues an operation called
 * inside ncclGroupStart/ncclGroupEnd only at the outermost ncclGroupEnd, so the uses of the
 * calls of a group are recorded, and their buffers released, after that call returns.
 *
 * A call on a non-blocking communicator may answer ncclInProgress and enqueue its work later,
 * from NCCL's own thread; the program must then poll the communicator with
 * ncclCommGetAsyncError until it reports ncclSuccess before it calls NCCL again ("If any NCCL
 * function returns ncclInProgress, users must query the communicator state until it becomes
 * ncclSuccess", NCCL's documentation).  Such a call is parked: its buffers stay held and its
 * use is not recorded, so that nothing moves them, until a poll of its communicator reports
 * anything but ncclInProgress (or the communicator is aborted or destroyed, or finalized
 * without ncclInProgress); its use is recorded then, on a stream its work is enqueued on by
 * then.  A group that fails parks the calls whose communicator is still in progress and ends
 * the others.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "shim.h"
#include "hooks_nccl.h"
/* nccl.h declares ncclGroupStart() and friends without (void). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

enum {
#define X(sym) SHIM_NCCL_##sym,
    SHIM_NCCL_HOOKS(X) SHIM_NCCL_CALLS(X)
#undef X
    SHIM_NCCL_N
};

#define X(sym) typedef __typeof__(sym) *shim_nccl_pfn_##sym##_t;
SHIM_NCCL_HOOKS(X)
SHIM_NCCL_CALLS(X)
#undef X

static const char *const names[SHIM_NCCL_N] = {
#define X(sym) [SHIM_NCCL_##sym] = #sym,
    SHIM_NCCL_HOOKS(X) SHIM_NCCL_CALLS(X)
#undef X
};

static void *const wrappers[SHIM_NCCL_N] = {
#define X(sym) [SHIM_NCCL_##sym] = (void *)sym,
    SHIM_NCCL_HOOKS(X)
#undef X
};

static void *_Atomic real_fn[SHIM_NCCL_N];
static _Atomic int missing_logged;
static _Atomic unsigned long long calls[SHIM_NCCL_N];   /* wrappers entered */

/* ---------------------------------------------------------------- the real functions */

SHIM_NO_SANITIZE int shim_nccl_find(const char *name)
{
    for (int i = 0; i < SHIM_NCCL_N; i++)
        if (wrappers[i] && shim_same_name(names[i], name))
            return i;
    return -1;
}

void *shim_nccl_lookup(void *(*rdlsym)(void *, const char *), void *handle, const char *name,
                       int h)
{
    void *sym = rdlsym(handle, name);
    if (sym && shim_is_own(sym)) {     /* (as the driver's names: dlsym.c's hooked_lookup) */
        void *next = rdlsym(RTLD_NEXT, name);
        return shim_disabled() || !next ? next : sym;
    }
    if (!sym || shim_disabled())
        return sym;
    void *expected = NULL;
    atomic_compare_exchange_strong(&real_fn[h], &expected, sym);
    return wrappers[h];
}

/* NCCL's function i: seen by dlsym, the next definition, or a loaded libnccl.so.2's. */
static void *real(int i)
{
    void *f = atomic_load_explicit(&real_fn[i], memory_order_acquire);
    if (f)
        return f;
    void *(*rdlsym)(void *, const char *) = shim_real_dlsym();
    if (rdlsym)
        f = rdlsym(RTLD_NEXT, names[i]);
    if ((!f || shim_is_own(f)) && rdlsym) {
        void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
        f = lib ? rdlsym(lib, names[i]) : NULL;
        if (lib)
            dlclose(lib);
    }
    if (!f || shim_is_own(f)) {
        if (!atomic_exchange(&missing_logged, 1))
            SHIM_ERROR(LAUNCH, "%s called, but no NCCL library is loaded to serve it",
                       names[i]);
        return NULL;
    }
    atomic_store_explicit(&real_fn[i], f, memory_order_release);
    return f;
}

/* First statement of a wrapper: counts the call; `var` is NCCL's `sym`; without one,
 * ncclSystemError. */
#define NCCL_ENTER(sym, var)                                                                   \
    atomic_fetch_add_explicit(&calls[SHIM_NCCL_##sym], 1, memory_order_relaxed);             \
    shim_nccl_pfn_##sym##_t var = (shim_nccl_pfn_##sym##_t)real(SHIM_NCCL_##sym);          \
    if (!var)                                                                                  \
        return ncclSystemError

long long shim_nccl_calls(int h)
{
    return h >= 0 && h < SHIM_NCCL_N ? (long long)atomic_load(&calls[h]) : -1;
}

void shim_nccl_stats_print(void)
{
    for (int i = 0; i < SHIM_NCCL_N; i++) {
        unsigned long long n = atomic_load(&calls[i]);
        if (n)
            shim_log_plain("  call %-34s %10llu", names[i], n);
    }
}

void shim_nccl_stats_reset(void)
{
    for (int i = 0; i < SHIM_NCCL_N; i++)
        atomic_store(&calls[i], 0);
}

/* ---------------------------------------------------------------- one operation */

/* One NCCL operation as its wrapper saw it. */
typedef struct op {
    const char *name;               /* the trace's name of the operation */
    ncclComm_t comm;
    const void *send;
    void *recv;
    uint64_t send_bytes, recv_bytes;    /* 0: not known (the whole allocation is held) */
    int recv_whole;                 /* its receive range is written whole on every rank */
    int peer;                       /* root or peer; -1: none */
    cudaStream_t stream;
    res_nccl_t *held;
} op_t;

/* Operations of the calling thread's open group, held until its outermost ncclGroupEnd, and
 * their communicators. */
static SHIM_TLS int group_depth;
static SHIM_TLS res_nccl_t **group_held;
static SHIM_TLS ncclComm_t *group_comm;
static SHIM_TLS size_t group_n, group_cap;

/* Calls answered ncclInProgress, until their communicator's state is known (any thread may
 * poll it: PyTorch's watchdog does). */
typedef struct parked {
    ncclComm_t comm;
    res_nccl_t *held;
} parked_t;

static struct {
    pthread_mutex_t lock;
    parked_t *a;
    size_t n, cap;
    _Atomic size_t count;           /* n, read without the lock */
} parked = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t type_bytes(ncclDataType_t t)
{
    switch ((int)t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

/* Ranks of comm (0 when NCCL cannot say: the ranges are then whole allocations). */
static uint64_t comm_size(ncclComm_t comm)
{
    shim_nccl_pfn_ncclCommCount_t count =
        (shim_nccl_pfn_ncclCommCount_t)real(SHIM_NCCL_ncclCommCount);
    int n = 0;
    return count && count(comm, &n) == ncclSuccess && n > 0 ? (uint64_t)n : 0;
}

/* The device of comm, or -1. */
static int comm_device(ncclComm_t comm)
{
    shim_nccl_pfn_ncclCommCuDevice_t dev =
        (shim_nccl_pfn_ncclCommCuDevice_t)real(SHIM_NCCL_ncclCommCuDevice);
    int d = -1;
    return dev && dev(comm, &d) == ncclSuccess ? d : -1;
}

static op_t op_new(const char *name, ncclComm_t comm, const void *send, uint64_t send_bytes,
                   void *recv, uint64_t recv_bytes, int peer, cudaStream_t stream)
{
    return (op_t){ .name = name, .comm = comm, .send = send, .recv = recv,
                   .send_bytes = send_bytes, .recv_bytes = recv_bytes, .recv_whole = 1,
                   .peer = peer, .stream = stream };
}

/* Before NCCL is called for o (which the call's own launches are part of, until end). */
static void begin(op_t *o)
{
    o->held = NULL;
    if (!shim_disabled()) {     /* (ELIXIR_DISABLE: NCCL is not asked about the communicator) */
        res_nccl_op_t r = { .name = o->name,
                            .ptr = { (uint64_t)(uintptr_t)o->send,
                                     (uint64_t)(uintptr_t)o->recv },
                            .bytes = { o->send_bytes, o->recv_bytes },
                            .recv_whole = o->recv_whole,
                            .device = comm_device(o->comm) };
        o->held = res_nccl_begin(&r, (CUstream)o->stream);
    }
    res_nccl_library(1);
}

/* Keep h until the group's end; 0, or -1 when there is no room (then end it now). */
static int group_keep(res_nccl_t *h, ncclComm_t comm)
{
    if (group_n == group_cap) {
        size_t cap = group_cap ? 2 * group_cap : 16;
        res_nccl_t **a = realloc(group_held, cap * sizeof(*a));
        if (a)
            group_held = a;
        ncclComm_t *c = a ? realloc(group_comm, cap * sizeof(*c)) : NULL;
        if (!c)
            return -1;
        group_comm = c;
        group_cap = cap;
    }
    group_held[group_n] = h;
    group_comm[group_n++] = comm;
    return 0;
}

/* Call h of comm answered ncclInProgress: not timed, held until comm's state is known.
 * Where there is no room to park it, it ends as before: its use recorded now. */
static void park(ncclComm_t comm, res_nccl_t *h)
{
    if (!h)
        return;
    res_nccl_untime(h);
    pthread_mutex_lock(&parked.lock);
    if (parked.n == parked.cap) {
        size_t cap = parked.cap ? 2 * parked.cap : 16;
        parked_t *a = realloc(parked.a, cap * sizeof(*a));
        if (!a) {
            pthread_mutex_unlock(&parked.lock);
            SHIM_WARN(LAUNCH, "an NCCL call in progress: out of memory to hold its buffers "
                      "until its communicator is done; its use is recorded now");
            res_nccl_end(h, RES_NCCL_PENDING);
            return;
        }
        parked.a = a;
        parked.cap = cap;
    }
    parked.a[parked.n++] = (parked_t){ comm, h };
    atomic_store(&parked.count, parked.n);
    pthread_mutex_unlock(&parked.lock);
}

/* comm's parked calls: their work is enqueued (or never will be): uses recorded, released.
 * One at a time, not under the lock (res_nccl_end takes devices' locks). */
static void unpark(ncclComm_t comm)
{
    while (atomic_load(&parked.count)) {
        res_nccl_t *h = NULL;
        pthread_mutex_lock(&parked.lock);
        for (size_t i = 0; i < parked.n && !h; i++)
            if (parked.a[i].comm == comm) {
                h = parked.a[i].held;
                parked.a[i] = parked.a[--parked.n];
            }
        atomic_store(&parked.count, parked.n);
        pthread_mutex_unlock(&parked.lock);
        if (!h)
            return;
        res_nccl_end(h, RES_NCCL_DONE);
    }
}

/* After NCCL returned r for o; returns r. */
static ncclResult_t end(op_t *o, ncclResult_t r)
{
    res_nccl_library(0);
    int ok = r == ncclSuccess || r == ncclInProgress;
    if (ok && SHIM_TRACING())
        shim_trace_nccl(o->name, (uintptr_t)o->send, (uintptr_t)o->recv,
                        o->send_bytes > o->recv_bytes ? o->send_bytes : o->recv_bytes,
                        (uintptr_t)o->comm, o->peer, (CUstream)o->stream, comm_device(o->comm));
    SHIM_TRACE(LAUNCH, "%s(%p, %p, comm %p, stream %p) = %d", o->name, o->send, o->recv,
               (void *)o->comm, (void *)o->stream, (int)r);
    if (!o->held)
        return r;
    if (ok && group_depth > 0) {
        if (group_keep(o->held, o->comm) != 0) /* its use cannot be recorded: held for good */
            SHIM_WARN(LAUNCH, "%s inside a group: out of memory to track its buffers, which "
                      "stay resident from now on", o->name);
        return r;
    }
    if (r == ncclInProgress)
        park(o->comm, o->held);
    else
        res_nccl_end(o->held, r == ncclSuccess ? RES_NCCL_DONE : RES_NCCL_FAILED);
    return r;
}


/* ---------------------------------------------------------------- the wrappers */

SHIM_EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                       cudaStream_t stream)
{
    NCCL_ENTER(ncclAllReduce, fn);
    uint64_t b = count * type_bytes(datatype);
    op_t o = op_new("allReduce", comm, sendbuff, b, recvbuff, b, -1, stream);
    begin(&o);
    return end(&o, fn(sendbuff, recvbuff, count, datatype, op, comm, stream));
}

SHIM_EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                       ncclDataType_t datatype, int root, ncclComm_t comm,
                                       cudaStream_t stream)
{
    NCCL_ENTER(ncclBroadcast, fn);
    uint64_t b = count * type_bytes(datatype);
    op_t o = op_new("broadcast", comm, sendbuff, b, recvbuff, b, root, stream);
    begin(&o);
    return end(&o, fn(sendbuff, recvbuff, count, datatype, root, comm, stream));
}

SHIM_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                                   ncclComm_t comm, cudaStream_t stream)
{
    NCCL_ENTER(ncclBcast, fn);
    uint64_t b = count * type_bytes(datatype);
    op_t o = op_new("broadcast", comm, buff, b, buff, b, root, stream);
    begin(&o);
    return end(&o, fn(buff, count, datatype, root, comm, stream));
}

SHIM_EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                    ncclDataType_t datatype, ncclRedOp_t op, int root,
                                    ncclComm_t comm, cudaStream_t stream)
{
    NCCL_ENTER(ncclReduce, fn);
    uint64_t b = count * type_bytes(datatype);
    op_t o = op_new("reduce", comm, sendbuff, b, recvbuff, b, root, stream);
    o.recv_whole = 0;               /* (written on the root only) */
    begin(&o);
    return end(&o, fn(sendbuff, recvbuff, count, datatype, op, root, comm, stream));
}

SHIM_EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                       ncclDataType_t datatype, ncclComm_t comm,
                                       cudaStream_t stream)
{
    NCCL_ENTER(ncclAllGather, fn);
    uint64_t b = sendcount * type_bytes(datatype);
    op_t o = op_new("allGather", comm, sendbuff, b, recvbuff, b * comm_size(comm), -1, stream);
    begin(&o);
    return end(&o, fn(sendbuff, recvbuff, sendcount, datatype, comm, stream));
}

SHIM_EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff,
                                           size_t recvcount, ncclDataType_t datatype,
                                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    NCCL_ENTER(ncclReduceScatter, fn);
    uint64_t b = recvcount * type_bytes(datatype);
    op_t o = op_new("reduceScatter", comm, sendbuff, b * comm_size(comm), recvbuff, b, -1,
                    stream);
    begin(&o);
    return end(&o, fn(sendbuff, recvbuff, recvcount, datatype, op, comm, stream));
}

SHIM_EXPORT ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                      ncclDataType_t datatype, ncclComm_t comm,
                                      cudaStream_t stream)
{
    NCCL_ENTER(ncclAlltoAll, fn);
    uint64_t b = count * type_bytes(datatype) * comm_size(comm);
    op_t o = op_new("allToAll", comm, sendbuff, b, recvbuff, b, -1, stream);
    begin(&o);
    return end(&o, fn(sendbuff, recvbuff, count, datatype, comm, stream));
}

SHIM_EXPORT ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                    ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream)
{
    NCCL_ENTER(ncclGather, fn);
    uint64_t b = count * type_bytes(datatype);
    op_t o = op_new("gather", comm, sendbuff, b, recvbuff, b * comm_size(comm), root, stream);
    o.recv_whole = 0;               /* (written on the root only) */
    begin(&o);
    return end(&o, fn(sendbuff, recvbuff, count, datatype, root, comm, stream));
}

SHIM_EXPORT ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                     ncclDataType_t datatype, int root, ncclComm_t comm,
                                     cudaStream_t stream)
{
    NCCL_ENTER(ncclScatter, fn);
    uint64_t b = count * type_bytes(datatype);
    op_t o = op_new("scatter", comm, sendbuff, b * comm_size(comm), recvbuff, b, root, stream);
    begin(&o);
    return end(&o, fn(sendbuff, recvbuff, count, datatype, root, comm, stream));
}

SHIM_EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype,
                                  int peer, ncclComm_t comm, cudaStream_t stream)
{
    NCCL_ENTER(ncclSend, fn);
    op_t o = op_new("send", comm, sendbuff, count * type_bytes(datatype), NULL, 0, peer, stream);
    begin(&o);
    return end(&o, fn(sendbuff, count, datatype, peer, comm, stream));
}

SHIM_EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype,
                                  int peer, ncclComm_t comm, cudaStream_t stream)
{
    NCCL_ENTER(ncclRecv, fn);
    op_t o = op_new("recv", comm, NULL, 0, recvbuff, count * type_bytes(datatype), peer, stream);
    begin(&o);
    return end(&o, fn(recvbuff, count, datatype, peer, comm, stream));
}

/* fn(), NCCL's group call, with the launches it makes counted as the group's. */
static ncclResult_t group_call(ncclResult_t (*fn)(void))
{
    res_nccl_library(1);
    ncclResult_t r = fn();
    res_nccl_library(0);
    return r;
}

SHIM_EXPORT ncclResult_t ncclGroupStart(void)
{
    NCCL_ENTER(ncclGroupStart, fn);
    ncclResult_t r = group_call(fn);
    if (r == ncclSuccess)
        group_depth++;
    return r;
}

/* Is comm's state ncclInProgress (a non-blocking communicator with work still to enqueue)? */
static int comm_pending(ncclComm_t comm)
{
    shim_nccl_pfn_ncclCommGetAsyncError_t get =
        (shim_nccl_pfn_ncclCommGetAsyncError_t)real(SHIM_NCCL_ncclCommGetAsyncError);
    ncclResult_t state = ncclSuccess;
    return get && get(comm, &state) == ncclSuccess && state == ncclInProgress;
}

/* After a group end: the outermost one enqueued the group's operations, whose uses are
 * recorded (whatever it returned: an operation it did enqueue must not be raced, and
 * recording the use of one it did not costs only an event); `how` (res_nccl_end's) says
 * whether their work was enqueued when it returned.  After an error, a call whose
 * communicator is still in progress is parked as after ncclInProgress; the others end now,
 * rather than stay held until their communicator's state is polled. */
static void group_ended(int how)
{
    if (group_depth > 0 && --group_depth == 0) {
        if (how == RES_NCCL_PENDING)
            for (size_t i = 0; i < group_n; i++)
                park(group_comm[i], group_held[i]);
        else if (how == RES_NCCL_FAILED)
            for (size_t i = 0; i < group_n; i++)
                if (group_held[i] && comm_pending(group_comm[i]))
                    park(group_comm[i], group_held[i]);
                else
                    res_nccl_end(group_held[i], RES_NCCL_FAILED);
        else
            res_nccl_group_end(group_held, group_n, how);
        group_n = 0;
    }
}

SHIM_EXPORT ncclResult_t ncclGroupEnd(void)
{
    NCCL_ENTER(ncclGroupEnd, fn);
    ncclResult_t r = group_call(fn);
    group_ended(r == ncclSuccess      ? RES_NCCL_DONE
                : r == ncclInProgress ? RES_NCCL_PENDING
                                      : RES_NCCL_FAILED);
    return r;
}

/* Ends the group as ncclGroupEnd does, NCCL's way (its depth goes down whatever simInfo
 * holds); with simInfo it runs nothing ("simulate a ncclGroupEnd() call", nccl.h).  The
 * group's holds end with it: otherwise every later operation of the thread would count as
 * grouped, its buffers held for good and its uses never recorded. */
SHIM_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    NCCL_ENTER(ncclGroupSimulateEnd, fn);
    res_nccl_library(1);
    ncclResult_t r = fn(simInfo);
    res_nccl_library(0);
    group_ended(RES_NCCL_NOTHING);
    return r;
}

/* ---------------------------------------------------------------- a communicator's state */

/* Once comm's state is anything but ncclInProgress, NCCL has enqueued (or dropped) every
 * operation it accepted: the parked ones of comm are released. */
SHIM_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    NCCL_ENTER(ncclCommGetAsyncError, fn);
    ncclResult_t r = fn(comm, asyncError);
    if (r == ncclSuccess && asyncError && *asyncError != ncclInProgress)
        unpark(comm);
    return r;
}

/* A communicator that goes releases its parked calls once NCCL is done with it (aborted or
 * destroyed, every operation enqueued or dropped): their uses are recorded on their streams,
 * after whatever NCCL enqueued there (released before, a call still in progress could be
 * enqueued after its buffers were let go).  comm is only a key by then. */
SHIM_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    NCCL_ENTER(ncclCommAbort, fn);
    ncclResult_t r = fn(comm);
    unpark(comm);
    return r;
}

SHIM_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    NCCL_ENTER(ncclCommDestroy, fn);
    ncclResult_t r = fn(comm);
    unpark(comm);
    return r;
}

/* (A non-blocking communicator's finalize may still be in progress: its parked calls then go
 * when its state is polled, ncclCommGetAsyncError.) */
SHIM_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    NCCL_ENTER(ncclCommFinalize, fn);
    ncclResult_t r = fn(comm);
    if (r != ncclInProgress)
        unpark(comm);
    return r;
}
