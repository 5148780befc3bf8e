/* SPDX-License-Identifier: MIT */
/*
 * sim.h - internal interface of the simulated CUDA driver.
 *
 * The simulator is a libcuda.so.1 built from the real cuda.h.  Device memory is host memory in the
 * same address space; work submitted to streams becomes operations (sim_op_t) in one global FIFO
 * that a single executor thread runs in submission order, which is always an order that respects
 * every stream, event and legacy-stream dependency, but for what depends on a stream memory wait
 * whose condition does not hold yet (set aside until it does).  While it runs them the executor
 * keeps the virtual clock (per-device engines, per-stream completion times) and feeds the race
 * checker with vector clocks.  Prototypes are grouped under the file that defines them.
 */
#ifndef SIM_SIM_H
#define SIM_SIM_H

/* Declare every ABI variant (legacy, _v2, _ptds/_ptsz) under its own name, as a driver must. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#include "simcuda.h"
#include "simconfig.h"
#include "race.h"
#include "ptx.h"

#define SIM_API __attribute__((visibility("default")))
#define SIM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------- options.c */

enum sim_engine { SIM_ENG_COMPUTE, SIM_ENG_H2D, SIM_ENG_D2H, SIM_ENG_PEER, SIM_ENG_COUNT };

extern sim_config_t sim_cfg;

void sim_config_load(void);

/* ------------------------------------------------------------------------- log.c */

void sim_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define SIM_ERR(...) sim_log(0, __VA_ARGS__)
#define SIM_WARN(...) sim_log(1, __VA_ARGS__)
#define SIM_INFO(...) do { if (sim_cfg.log_level >= 2) sim_log(2, __VA_ARGS__); } while (0)

/* ------------------------------------------------------------------------- link.c */

typedef struct sim_seg {
    double s, e;            /* [s, e), virtual ns */
    double rate;            /* bytes per ns (GB/s) */
} sim_seg_t;

typedef struct sim_lane {
    sim_seg_t *seg;         /* the stretches its transfers occupy, in time order */
    size_t n, cap;
    double free;            /* when its last transfer ends */
} sim_lane_t;

/* Two directions of one link, whose rates together are held to duplex_gbps (0: not held). */
typedef struct sim_link {
    sim_lane_t lane[2];
    double duplex_gbps;
} sim_link_t;

double sim_link_transfer(sim_link_t *link, int dir, double start, double floor, double bytes,
                         double gbps, double *t_start);

/* ------------------------------------------------------------------------- nvme.c */

void sim_nvme_stats(void);      /* ELIXIR_SIM_STATS lines of the NVMe drive */

/* ------------------------------------------------------------------------- init.c */

typedef struct sim_device {
    int ordinal;
    uint64_t total;
    _Atomic uint64_t used;          /* bytes of device memory allocated, all kinds */
    uint64_t others;                /* of which other processes hold (sim_other_process_memory) */
    CUuuid uuid;
    struct CUctx_st *primary;       /* created on first retain, kept for the process */
    int primary_refs;
    unsigned primary_flags;
    double engine_free[SIM_ENG_COUNT];  /* virtual time an engine is next free (executor) */
    sim_link_t pcie;                /* its host link: the H2D and D2H lanes (executor) */
    struct CUmemPoolHandle_st *default_pool;
    struct CUmemPoolHandle_st *current_pool;
    char *arena;                    /* reserved VA for cuMemAlloc */
    uint64_t arena_size;
    uint64_t arena_next;            /* next-fit cursor, offset into arena */
} sim_device_t;

extern sim_device_t *sim_devs;
extern int sim_ndevs;
extern int sim_initialized;
extern pthread_mutex_t sim_lock;    /* protects queues, streams, events, contexts */

CUresult sim_check_init(void);
CUresult sim_device_get(CUdevice dev, sim_device_t **out);
int sim_reserve_charge(int device, uint64_t bytes);   /* 0 or -ENOMEM */
void sim_reserve_uncharge(int device, uint64_t bytes);
int sim_pinned_charge(uint64_t bytes);   /* page-locked host memory: 0 or -ENOMEM */
void sim_pinned_uncharge(uint64_t bytes);

/* ------------------------------------------------------------------------- context.c */

#define SIM_CTX_MAGIC 0x43545853u
#define SIM_MAX_PEERS 8     /* peer contexts one context may enable (CUDA_ERROR_TOO_MANY_PEERS) */

struct CUctx_st {
    uint32_t magic;
    int device;
    unsigned flags;
    int is_primary;
    int destroyed;
    _Atomic int sticky;             /* CUresult of a sticky fault, 0 while healthy */
    struct CUstream_st *legacy;     /* the legacy default stream (NULL / CU_STREAM_LEGACY) */
    struct CUstream_st *streams;    /* all streams of the context, list by ctx_next */
    struct CUevent_st *events;      /* its live events, list by ctx_next (sim_lock) */
    uint64_t id;
    size_t limits[16];
    /* Contexts whose cuMemAlloc memory this one's kernels may reach (cuCtxEnablePeerAccess);
     * read by the executor, written under the context module's peer lock. */
    _Atomic(struct CUctx_st *) peers[SIM_MAX_PEERS];
    struct CUctx_st *all_next;      /* every context ever created (never freed), newest first */
    uint64_t aside_blocking_gen;    /* executor only: a blocking stream of it has work set
                                     * aside (exec_aside.c), in that generation */
};

CUcontext sim_ctx_current(void);
CUresult sim_ctx_get(CUcontext *out);           /* current context, or the error to return */
CUresult sim_ctx_check(CUcontext ctx);          /* valid and not in a sticky error */
void sim_ctx_fault(CUcontext ctx, CUresult err);
CUresult sim_ctx_create(int device, unsigned flags, int primary, CUcontext *out);
/* Has ctx enabled peer access to peer (cuCtxEnablePeerAccess)? */
int sim_ctx_peer_enabled(CUcontext ctx, CUcontext peer);

/* ------------------------------------------------------------------------- mem.c */

enum sim_range_kind {
    SIM_RANGE_DEVICE = 1,   /* cuMemAlloc / cuMemAllocPitch */
    SIM_RANGE_POOL,         /* cuMemAllocAsync / cuMemAllocFromPoolAsync */
    SIM_RANGE_HOST,         /* cuMemHostAlloc / cuMemAllocHost */
    SIM_RANGE_REGISTERED,   /* cuMemHostRegister */
    SIM_RANGE_RESERVED,     /* cuMemAddressReserve (mappings inside) */
    SIM_RANGE_GLOBAL,       /* a module's .global variable */
};

typedef struct sim_mapping sim_mapping_t;

typedef struct sim_range {
    uint64_t base, size;
    int kind;
    int device;             /* owning device (host kinds: -1 unless portable/known) */
    CUcontext ctx;
    unsigned flags;         /* host alloc / register flags */
    uint64_t buffer_id;
    struct CUmemPoolHandle_st *pool;
    sim_mapping_t *maps;    /* RESERVED: its mappings, sorted by address */
    size_t nmaps, capmaps;
    uint32_t *pages;        /* RESERVED: per granule, 1 + the index in maps of the mapping
                             * holding it (0: none); NULL before the first mapping, or for
                             * reservations too large to index (then maps is searched) */
} sim_range_t;

/* What an address is, as far as copies and launches are concerned. */
typedef struct sim_ptr_info {
    int kind;               /* enum sim_range_kind, 0 for unknown (pageable host) */
    int device;
    uint64_t base, size;    /* the allocation or mapping containing the address */
    int mapped;             /* for RESERVED: 1 if inside a mapping */
    unsigned access;        /* bitmask of devices allowed (RESERVED); all for others */
    int host_location;      /* mapping backed by host memory */
} sim_ptr_info_t;

extern pthread_rwlock_t sim_reg_lock;              /* protects the range registry */
sim_range_t *sim_range_lookup_locked(uint64_t addr);  /* valid while sim_reg_lock is held */
int sim_range_add(const sim_range_t *r);            /* 0, -EEXIST, -ENOMEM */
int sim_range_remove(uint64_t base, sim_range_t *out);
int sim_range_find(uint64_t addr, sim_range_t *out); /* 0 or -ENOENT; copy of the record */
int sim_ptr_info(uint64_t addr, sim_ptr_info_t *out); /* 0 or -ENOENT (pageable host) */
uint64_t sim_next_buffer_id(void);
void *sim_map_anon(void *addr, size_t size, int prot);  /* MAP_FIXED when addr != NULL */
int sim_device_alloc(int device, uint64_t size, uint64_t *out); /* arena allocation */
CUresult sim_alloc_device(uint64_t bytes, int kind, struct CUmemPoolHandle_st *pool, int device,
                          CUdeviceptr *dptr);
CUresult sim_free_device(uint64_t base, int want_kind);   /* no synchronisation */
void sim_device_free(int device, uint64_t base, uint64_t size);
/* Free the cuMemAlloc and cuMemHostAlloc memory of a destroyed or reset context, and undo
 * its cuMemHostRegister registrations. */
void sim_mem_free_ctx(CUcontext ctx);

/* ------------------------------------------------------------------------- vmm.c */

struct sim_mapping {
    uint64_t va, size;
    struct sim_phys *phys;
    unsigned access;        /* bit d: device d may access (read, or read and write) */
    unsigned writable;      /* bit d: device d may write */
};

/* Look up the mapping of a reserved range that contains addr (caller holds the registry). */
const sim_mapping_t *sim_vmm_lookup(const sim_range_t *r, uint64_t addr);
/* May a kernel of context ctx not reach addr?  Mapped VMM memory its device has no access to,
 * or cuMemAlloc memory of another device's context that ctx has not enabled peer access to.
 * (What a launch checks of each pointer argument; other memory is not its concern.) */
int sim_launch_denied(uint64_t addr, CUcontext ctx);
int sim_vmm_phys_is_host(const struct sim_phys *p);
/* The race checker's view of the bytes [addr, +len) when they lie in one reserved range,
 * wholly mapped: up to `max` pieces of physical memory, each a key of its own key space
 * (SIM_PHYS_KEY: one per physical allocation, never reused) and a length, so that two
 * mappings of the same memory are seen as the same bytes.  Returns the number of pieces (`max`
 * with more to come: the caller asks again from the end of the last), or 0 for bytes outside
 * VMM mappings, which are checked by their address.  Takes the registry's lock. */
typedef struct sim_phys_piece {
    uint64_t key, len;
} sim_phys_piece_t;
size_t sim_vmm_phys_pieces(uint64_t addr, uint64_t len, sim_phys_piece_t *out, size_t max);
/* A race report's name of [addr, +len): the physical allocation and offset of a key, else the
 * address range (sim_race_name_fn). */
void sim_vmm_name_bytes(uint64_t addr, uint64_t len, char *buf, size_t size);
/* Histories of physical memory that is gone are dropped from the race checker (after the
 * registry's lock is released: the checker's lock is taken after it, never inside). */
void sim_vmm_forget_dead(void);
/* Bytes of [addr, +bytes) in host memory (VMM mappings of host-located memory, pinned or
 * registered host memory): what a kernel touching that range moves over the host link. */
uint64_t sim_host_bytes(uint64_t addr, uint64_t bytes);
const CUmemAllocationProp *sim_vmm_phys_prop(const struct sim_phys *p);
uint64_t sim_vmm_phys_id(const struct sim_phys *p);

/* ------------------------------------------------------------------------- pool.c */

void sim_pool_note_free(struct CUmemPoolHandle_st *pool, uint64_t size);

/* ------------------------------------------------------------------------- stream.c */

#define SIM_STREAM_MAGIC 0x4d525453u

enum sim_stream_kind { SIM_STREAM_USER, SIM_STREAM_LEGACY, SIM_STREAM_PTDS };

struct sim_graph_capture;

struct CUstream_st {
    uint32_t magic;
    int kind;                       /* enum sim_stream_kind */
    CUcontext ctx;
    unsigned flags;                 /* CU_STREAM_DEFAULT / CU_STREAM_NON_BLOCKING */
    int priority;
    uint64_t id;
    int refs;                       /* under sim_lock: handle + queued ops + events */
    int destroyed;
    uint64_t enq_seq;               /* last operation submitted (sim_lock) */
    uint64_t done_seq;              /* last operation completed (sim_lock) */
    double t_end;                   /* virtual completion time of the last op (executor) */
    double t_done;                  /* t_end as of done_seq (sim_lock) */
    uint32_t race_tid;
    sim_vc_t *vc_done;              /* race clock as of done_seq (sim_lock) */
    sim_vc_t *vc_exec;              /* race clock after its last executed op (executor) */
    struct CUstream_st *ctx_next;
    struct sim_graph_capture *capture;  /* non-NULL while capturing */
    /* Executor only: this stream has operations set aside behind a blocked stream memory wait
     * (exec_aside.c) when aside_gen is the executor's current generation; aside_seq is the
     * position of its first one. */
    uint64_t aside_gen, aside_seq;
};

CUresult sim_stream_resolve(CUstream h, int ptds, CUstream *out);
int sim_stream_blocking(const struct CUstream_st *s);
void sim_stream_unref_locked(CUstream s);
CUresult sim_ctx_wait_idle(CUcontext ctx);      /* host waits for all work of ctx */
uint64_t sim_stream_tail(CUstream s);           /* position of the last submitted op */
/* Work that ended at *t with race clock *vc (read under sim_lock) is seen complete by the host. */
void sim_host_after(const double *t, sim_vc_t *const *vc, int why);

/* ------------------------------------------------------------------------- event.c */

#define SIM_EVENT_MAGIC 0x544e5645u

struct CUevent_st {
    uint32_t magic;
    CUcontext ctx;
    unsigned flags;
    CUstream stream;            /* stream of the last record (holds a ref), NULL if never */
    uint64_t seq;               /* operation number of the last record within that stream */
    double t;                   /* virtual time of the last executed record (executor) */
    sim_vc_t *vc;               /* race clock of the last executed record (executor) */
    int recorded;               /* a record has executed */
    int capture_ended;          /* under sim_lock: the latest record was in an ended capture */
    int refs;                   /* under sim_lock: handle + queued ops that name it */
    int destroyed;
    struct CUevent_st *ctx_next;    /* next event of its context (sim_lock) */
    struct CUevent_st **ctx_prevp;  /* the link that points at it (sim_lock): O(1) unlinking */
    uint64_t rec_opno;          /* under sim_lock: operation number of the last record submitted */
    uint64_t exec_opno;         /* executor: the record whose t and vc are held (the newest run) */
    uint64_t taken_gen, taken_opno; /* executor: a record taken off the ops set aside
                                     * (exec_aside.c) */
};

void sim_event_unref_locked(struct CUevent_st *e);

/* ------------------------------------------------------------------------- exec.c */

enum sim_op_kind {
    SIM_OP_KERNEL = 1,
    SIM_OP_COPY,
    SIM_OP_MEMSET,
    SIM_OP_HOSTFN,
    SIM_OP_EVENT_RECORD,
    SIM_OP_EVENT_WAIT,
    SIM_OP_FREE,            /* stream-ordered free (cuMemFreeAsync) */
    SIM_OP_WAIT_VALUE,      /* cuStreamWaitValue32/64 (memop.c) */
    SIM_OP_WRITE_VALUE,     /* cuStreamWriteValue32/64 */
    SIM_OP_NOP,
};

typedef struct sim_copy {
    uint64_t dst, src;
    size_t width, height, depth;        /* bytes per row, rows, slices */
    size_t dpitch, spitch;              /* row pitches */
    size_t dheight, sheight;            /* rows per slice (pitch of slices = pitch * height) */
    int engine;                         /* enum sim_engine, or -1 for host-to-host */
    double gbps;                        /* bandwidth for the virtual clock */
    void *staging;                      /* owned copy of a pageable source, freed after */
    signed char src_where, dst_where;   /* enum sim_where of each side (activity reports) */
    unsigned char async;                /* submitted by an asynchronous entry point */
} sim_copy_t;

typedef struct sim_memset {
    uint64_t dst;
    unsigned value;
    unsigned elem;                      /* 1, 2 or 4 bytes */
    size_t width, height, pitch;        /* elements per row, rows, row pitch in bytes */
    signed char where;                  /* enum sim_where of dst (activity reports) */
    unsigned char async;                /* submitted by an asynchronous entry point */
} sim_memset_t;

struct CUfunc_st;

typedef struct sim_kernel_op {
    struct CUfunc_st *func;
    sim_kernel_fn fn;
    sim_launch_t launch;
    void **params;          /* nparams pointers into args */
    unsigned char *args;    /* packed private copy */
    size_t args_size;
    size_t params_end;      /* end of the last parameter: the size an `extra` buffer has */
} sim_kernel_op_t;

/* Where a satisfied stream memory wait found its value: which ordering it acquires. */
enum sim_memop_src { SIM_MEMOP_SRC_NONE, SIM_MEMOP_SRC_WRITER, SIM_MEMOP_SRC_HOST };

typedef struct sim_memop {
    uint64_t addr;
    uint64_t value;
    unsigned size;                      /* 4 or 8 bytes */
    unsigned cond;                      /* wait: CU_STREAM_WAIT_VALUE_GEQ/EQ/AND/NOR */
    /* Wait, set by the executor once satisfied: the stream write that wrote the value seen
     * (its end and race clock) or the host (its clock when seen). */
    int src;                            /* enum sim_memop_src */
    double src_t;
    sim_vc_t *src_vc;
} sim_memop_t;

typedef struct sim_op {
    struct sim_op *next;
    int kind;
    uint32_t act_corr;      /* correlation id given by the activity observer */
    const sim_activity_ops_t *act;  /* non-NULL: report completion to this observer */
    CUstream stream;
    CUcontext ctx;          /* the context it runs in when not its stream's (a graph node of
                             * another context: sim_op_ctx); NULL: its stream's */
    uint64_t seq;           /* position in its stream */
    uint64_t opno;          /* global number */
    double t_submit;        /* host virtual time at submission */
    uint64_t poison;        /* non-zero: a bad address found at submission; faults when run */
    sim_vc_t *host_vc;      /* host clock at submission (race checking) */
    union {
        sim_kernel_op_t kernel;
        sim_copy_t copy;
        sim_memset_t memset;
        struct { CUhostFn fn; void *data; CUstreamCallback cb; CUstream handle; } host;
        struct {
            struct CUevent_st *event;
            /* EVENT_WAIT, set at submission: the record waited for (its stream, holding a
             * reference, its position there and its operation number; stream NULL when the
             * event was never recorded), and a copy of its time and clock taken by the
             * executor while the wait was set aside (snap), since a later record may run
             * before the wait does and replace the event's. */
            CUstream wait_stream;
            uint64_t wait_seq, wait_opno;
            int snap;
            double snap_t;
            sim_vc_t *snap_vc;
        };
        struct { uint64_t base; int device; uint64_t size; } free;
        sim_memop_t memop;
    } u;
} sim_op_t;

sim_op_t *sim_op_new(int kind);
/* The context op runs in: whose device executes it and checks its accesses, and whose
 * sticky error it takes. */
static inline CUcontext sim_op_ctx(const sim_op_t *op)
{
    return op->ctx ? op->ctx : op->stream->ctx;
}
void sim_op_discard(sim_op_t *op);      /* free an op that was never submitted */
/*
 * Submit op on stream s (takes sim_lock) and take ownership of it; *seq, when not NULL,
 * receives its position in the stream (0 when it went into a stream capture instead).
 */
CUresult sim_submit(CUstream s, sim_op_t *op, uint64_t *seq);
/*
 * Wait until stream s has completed operation seq; the host clock then moves to its end and,
 * when `acquire` is set, the host happens after it.  Returns the context's sticky error.
 */
CUresult sim_wait_seq(CUstream s, uint64_t seq, int acquire);
/* Wait until every operation submitted so far, on every stream, has completed. */
void sim_wait_all(void);
void sim_exec_acquire_all(void);
int sim_seq_done(CUstream s, uint64_t seq);      /* poll; nudges a lazy executor */
void sim_exec_start(void);
int sim_on_executor(void);
void sim_exec_stats(void);

/* ------------------------------------------------------------------------- host.c */

double sim_host_now(void);
/* What moved the host clock (ELIXIR_SIM_STATS): a wait, a charged driver call (allocation
 * and VMM), a submission, a query of work not yet complete, a drive request waited for. */
enum { SIM_HOST_WAIT, SIM_HOST_CALL, SIM_HOST_SUBMIT, SIM_HOST_POLL, SIM_HOST_IO,
       SIM_HOST_WHY };
/* Has the host clock reached work that ended at *t (read under sim_lock)?  A query asks: the
 * work may have run on the executor already, but in virtual time it ends later, and until
 * then a query finds it running.  Each "no" charges the host one API call (model.api_us), so
 * that a host polling in a loop moves on. */
int sim_host_reached(const double *t);
void sim_host_advance(double t, int why);   /* host clock = max(host clock, t) */
void sim_host_charge(double us);        /* host clock += us */
/* sim_host_charge(us) unless ELIXIR_SIM_ALLOC_COSTS=0 (the costs: SIM_COST_*, simcuda.h) */
void sim_alloc_cost(double us);
void sim_host_acquire(const sim_vc_t *vc);  /* host now happens after vc */
/* The host itself touches [addr, addr+len) now (unmapping counts as a write). */
void sim_host_access(uint64_t addr, uint64_t len, int write, const char *what);
/* The host reads or writes the data at [addr, addr+len) now (file I/O into or out of it): as
 * an operation's access, checked on the physical memory behind VMM mappings (sim_race_data). */
void sim_host_data(uint64_t addr, uint64_t len, int write, const char *what);
sim_vc_t *sim_host_vc(void);            /* reference to the host clock snapshot */
uint32_t sim_race_new_thread(void);
void sim_race_forget_range(uint64_t base, uint64_t size);

/* ------------------------------------------------------------------------- activity.c */

/* Operations submitted between begin and end by this thread belong to one API call (a graph
 * launch): the activity observer gives them one correlation id.  Calls nest. */
void sim_activity_call_begin(void);
void sim_activity_call_end(void);

/* ------------------------------------------------------------------------- fault.c */

void sim_fault_install(void);
/* Run fn(arg) with faults caught; returns 0, or -EFAULT with *addr set to the bad address. */
int sim_guarded(void (*fn)(void *), void *arg, uint64_t *addr);
/* Inside a guarded region: leave it as a fault at addr would (sim_guarded returns -EFAULT
 * with *addr = addr).  Outside one it returns and does nothing. */
void sim_fault_raise(uint64_t addr);

/* ------------------------------------------------------------------------- copy.c */

enum sim_where { SIM_WHERE_DEVICE, SIM_WHERE_PINNED, SIM_WHERE_PAGEABLE };

/* Where an address lives, for a copy issued on `device`; *bad set when it is inaccessible. */
int sim_where(uint64_t addr, int device, int *owner, uint64_t *bad);
/*
 * The operation of copy `in` issued on `device`, nothing staged: where each side lives, its
 * engine and bandwidth, and an inaccessible address as its poison.  *wait says whether the host
 * must wait for it once submitted (the driver's rules for the synchronous or asynchronous
 * form).  NULL when out of memory.
 */
sim_op_t *sim_copy_op_new(const sim_copy_t *in, int device, int async, int *wait);
/* Read the source of copy op now into its private staging buffer.  Returns 0, -ENOMEM, or
 * -EFAULT with *addr the address that could not be read. */
int sim_copy_stage(sim_op_t *op, uint64_t *addr);
/*
 * Build, without submitting, the operation of an asynchronous copy (a graph memcpy node) or a
 * memset on `device`, validated as the stream forms validate them.  Nothing is staged: the
 * operation reads its source when it runs.
 */
CUresult sim_copy_op_build(const CUDA_MEMCPY3D *p, int device, sim_op_t **out);
CUresult sim_memset_op_build(int device, uint64_t dst, unsigned value, unsigned elem,
                             size_t width, size_t height, size_t pitch, sim_op_t **out);

/* ------------------------------------------------------------------------- launch.c */

/*
 * Build, without submitting, a kernel operation of fn with the grid, block, shared bytes,
 * device and stream of cfg: dimensions checked, arguments packed into a private copy from
 * `params` or `extra` (exactly one of the two forms).
 */
CUresult sim_kernel_op_build(struct CUfunc_st *fn, const sim_launch_t *cfg, void **params,
                             void **extra, sim_op_t **out);

/* ------------------------------------------------------------------------- module.c */

#define SIM_FUNC_MAGIC 0x434e5546u

/* Shared memory per block (bytes): what a function may use by default, and the most that
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES may allow it (the device's opt-in limit). */
#define SIM_SHARED_PER_BLOCK 49152
#define SIM_SHARED_PER_BLOCK_OPTIN 232448

struct CUfunc_st {
    uint32_t magic;
    struct CUmod_st *mod;
    const sim_ptx_entry_t *entry;
    sim_kernel_fn fn;
    struct CUkern_st *kernel;   /* set when reached through a library */
    _Atomic int max_dyn_shared; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    struct CUfunc_st *attrs;    /* whose attributes it has: itself, or for a library's kernel
                                 * in a context the library's own function (one set for all) */
};

CUresult sim_func_resolve(CUfunction f, struct CUfunc_st **out);
/* Unload the modules of a destroyed or reset context, libraries' modules in it included. */
void sim_module_free_ctx(CUcontext ctx);

/* ----------------------------------------------------------------------- capture.c */

/* Number of capture sequences in progress; sim_submit consults the capture only when > 0. */
extern _Atomic int sim_captures;
/*
 * Called by sim_submit while captures are in progress.  Returns 1 when the capture took op
 * (ownership included) with *res the call's result: op became a graph node or changed the
 * capture's dependencies (s capturing, or s joining a capture by waiting on a captured
 * event), or op was refused and the capture invalidated (legacy stream used while a blocking
 * stream of its context captures).  Returns 0 when op is ordinary work.
 */
int sim_capture_op(CUstream s, sim_op_t *op, CUresult *res);
/* cuStreamQuery/Synchronize on s: refused (and the capture invalidated) while s captures. */
CUresult sim_capture_sync_check(CUstream s);
/* cuCtxSynchronize: refused while any stream of ctx captures, else sim_capture_unsafe. */
CUresult sim_capture_ctx_sync(CUcontext ctx);
/* cuEventQuery/Synchronize: CUDA_ERROR_CAPTURED_EVENT for an event recorded in a capture. */
CUresult sim_capture_event_check(CUevent e, const char *what);
/*
 * A potentially unsafe call (synchronous, allocating) by this thread: refused with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, invalidating the captures that forbid it, when the
 * thread's capture interaction mode says so (cuThreadExchangeStreamCaptureMode).
 */
CUresult sim_capture_unsafe(const char *what);
/* Stream-ordered work that cannot be captured (cuMemAllocAsync): refused if s captures. */
CUresult sim_capture_refuse(CUstream s, const char *what);
/* Work the driver does not capture and that leaves the capture valid (cuMemcpyBatchAsync):
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED if s captures, nothing else happens. */
CUresult sim_capture_decline(CUstream s, const char *what);

#endif /* SIM_SIM_H */
