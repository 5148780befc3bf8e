/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_pool.c - allocations the driver serves are recorded too: here one from the
 * application's own memory pool and two of pinned host memory, beside one from the arena.
 *
 * The scenario allocates A (1 MiB) with cuMemAlloc (the arena), P (2 MiB) from a pool with
 * cuMemAllocFromPoolAsync, H (64 KiB) with cuMemAllocHost and G (128 KiB) with
 * cuMemHostAlloc, fills P by kernel, frees P in stream order and then A, H and G, and prints
 * the addresses.  The trace must hold four ALLOC records with their addresses, sizes and call
 * sites (A and P on device 0, H and G on the host), and a FREE record naming each;
 * `elixir-trace allocs --json` must list all four, freed, with their call site symbolised as
 * scenario(), and `allocs --device host` the two host ones.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define A_BYTES (1u << 20)
#define P_BYTES (2u << 20)
#define H_BYTES (64u << 10)
#define G_BYTES (128u << 10)

static __attribute__((noinline)) void scenario(void)
{
    CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
    CUmemoryPool pool;
    CUdeviceptr a, p;
    CUstream s;
    void *h, *g;

    st_setup(0);
    CUfunction k1 = st_function(tt_ptx, "tt_k1");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&a, A_BYTES));
    CHECK_CU(cuMemPoolCreate(&pool, &props));
    CHECK_CU(cuMemAllocFromPoolAsync(&p, P_BYTES, pool, s));
    CHECK_CU(cuMemsetD32Async(p, 0, P_BYTES / 4, s));
    CHECK_CU(tt_launch1(k1, s, p, P_BYTES / 4));
    CHECK_CU(cuMemFreeAsync(p, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemAllocHost(&h, H_BYTES));
    CHECK_CU(cuMemHostAlloc(&g, G_BYTES, CU_MEMHOSTALLOC_PORTABLE));
    CHECK_CU(cuMemPoolDestroy(pool));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFreeHost(h));
    CHECK_CU(cuMemFreeHost(g));
    printf("a 0x%llx p 0x%llx h %p g %p\n", (unsigned long long)a, (unsigned long long)p, h, g);
}

/* The ALLOC record of address addr: on `device`, `bytes` long, with a call site. */
static uint64_t expect_alloc(const tt_trace_t *t, uint64_t addr, int device, uint64_t bytes,
                             const char *what)
{
    for (size_t i = 0; i < tt_count(t, TRC_EV_ALLOC); i++) {
        const trc_alloc_t *a = &tt_nth(t, TRC_EV_ALLOC, i)->u.alloc;
        if (a->addr != addr)
            continue;
        EXPECT(a->device == device && a->size == bytes && a->stack_id != 0,
               "%s: device %d, %llu bytes, stack %u", what, a->device,
               (unsigned long long)a->size, a->stack_id);
        return a->id;
    }
    EXPECT(0, "%s: no ALLOC record at 0x%llx", what, (unsigned long long)addr);
    return 0;
}

static int freed(const tt_trace_t *t, uint64_t id)
{
    for (size_t i = 0; i < tt_count(t, TRC_EV_FREE); i++)
        if (tt_nth(t, TRC_EV_FREE, i)->u.free.id == id)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long long a, p;
    void *h, *g;
    tt_trace_t t;
    char out[256], want[64];

    sh_scenario_child(argc, argv, scenario);
    const char *path = tt_path("pool", 0);          /* the one tt_record_scenario records */
    sh_run_t r = tt_record_scenario("pool", 0, &t);
    EXPECT(sscanf(r.out, "a 0x%llx p 0x%llx h %p g %p", &a, &p, &h, &g) == 4,
           "scenario output: %s", r.out);
    EXPECT(tt_count(&t, TRC_EV_ALLOC) == 4 && tt_count(&t, TRC_EV_FREE) == 4,
           "%zu ALLOC and %zu FREE records, expected 4 and 4", tt_count(&t, TRC_EV_ALLOC),
           tt_count(&t, TRC_EV_FREE));
    uint64_t ids[4] = {
        expect_alloc(&t, a, 0, A_BYTES, "the arena allocation"),
        expect_alloc(&t, p, 0, P_BYTES, "the pool allocation"),
        expect_alloc(&t, (uintptr_t)h, TRC_DEVICE_HOST, H_BYTES, "cuMemAllocHost"),
        expect_alloc(&t, (uintptr_t)g, TRC_DEVICE_HOST, G_BYTES, "cuMemHostAlloc"),
    };
    for (int i = 0; i < 4; i++)
        EXPECT(freed(&t, ids[i]), "allocation %llu has no FREE record",
               (unsigned long long)ids[i]);

    snprintf(out, sizeof(out), "%s.json", path);
    const char *args[] = { "allocs", path, "--json", NULL };
    const char *json = tt_tool(args, out, out);
    snprintf(want, sizeof(want), "\"size\": %u, ", P_BYTES);
    EXPECT(strstr(json, want) != NULL, "allocs --json does not list the pool allocation "
           "(%s):\n%s", want, json);
    snprintf(want, sizeof(want), "\"size\": %u, ", A_BYTES);
    EXPECT(strstr(json, want) != NULL, "allocs --json does not list the arena allocation "
           "(%s):\n%s", want, json);
    EXPECT(sh_count(json, "\"live\": false") == 4 &&
           sh_count(json, "\"call_site\": \"scenario+0x") == 4,
           "allocs --json: all four freed, all allocated in scenario():\n%s", json);
    const char *host_args[] = { "allocs", path, "--device", "host", "--json", NULL };
    json = tt_tool(host_args, out, out);
    EXPECT(strstr(json, "\"matched\": 2,"), "allocs --device host does not list the two "
           "host allocations:\n%s", json);
    printf("the arena's, the pool's and pinned host allocations recorded, with their frees\n");
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
