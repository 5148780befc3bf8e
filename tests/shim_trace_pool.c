/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_pool.c - allocations the driver serves are recorded too: here one from the
 * application's own memory pool, beside one from the arena.
 *
 * The scenario allocates A (1 MiB) with cuMemAlloc (the arena) and P (2 MiB) from a pool
 * with cuMemAllocFromPoolAsync, fills P by kernel, frees P in stream order and then A, and
 * prints both addresses.  The trace must hold two ALLOC records, on device 0, with their
 * addresses, sizes and call sites, and two FREE records naming them; `elixir-trace allocs
 * --json` must list both, freed, with their call site symbolised as scenario().
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define A_BYTES (1u << 20)
#define P_BYTES (2u << 20)

static __attribute__((noinline)) void scenario(void)
{
    CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
    CUmemoryPool pool;
    CUdeviceptr a, p;
    CUstream s;

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
    CHECK_CU(cuMemPoolDestroy(pool));
    CHECK_CU(cuMemFree(a));
    printf("a 0x%llx p 0x%llx\n", (unsigned long long)a, (unsigned long long)p);
}

/* The ALLOC record of address addr: on device 0, `bytes` long, with a call site. */
static uint64_t expect_alloc(const tt_trace_t *t, uint64_t addr, uint64_t bytes,
                             const char *what)
{
    for (size_t i = 0; i < tt_count(t, TRC_EV_ALLOC); i++) {
        const trc_alloc_t *a = &tt_nth(t, TRC_EV_ALLOC, i)->u.alloc;
        if (a->addr != addr)
            continue;
        EXPECT(a->device == 0 && a->size == bytes && a->stack_id != 0,
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
    tt_trace_t t;
    char out[256], want[64];

    if (argc > 1 && strcmp(argv[1], "scenario") == 0) {
        scenario();
        return 0;
    }
    const char *path = tt_path("pool", 0);          /* the one tt_record_scenario records */
    sh_run_t r = tt_record_scenario("pool", 0, &t);
    EXPECT(sscanf(r.out, "a 0x%llx p 0x%llx", &a, &p) == 2, "scenario output: %s", r.out);
    EXPECT(tt_count(&t, TRC_EV_ALLOC) == 2 && tt_count(&t, TRC_EV_FREE) == 2,
           "%zu ALLOC and %zu FREE records, expected 2 and 2", tt_count(&t, TRC_EV_ALLOC),
           tt_count(&t, TRC_EV_FREE));
    uint64_t ida = expect_alloc(&t, a, A_BYTES, "the arena allocation");
    uint64_t idp = expect_alloc(&t, p, P_BYTES, "the pool allocation");
    EXPECT(ida != idp && freed(&t, ida) && freed(&t, idp), "FREE records: ids %llu and %llu "
           "not both freed", (unsigned long long)ida, (unsigned long long)idp);

    snprintf(out, sizeof(out), "%s.json", path);
    const char *args[] = { "allocs", path, "--json", NULL };
    const char *json = tt_tool(args, out, out);
    snprintf(want, sizeof(want), "\"size\": %u, ", P_BYTES);
    EXPECT(strstr(json, want) != NULL, "allocs --json does not list the pool allocation "
           "(%s):\n%s", want, json);
    snprintf(want, sizeof(want), "\"size\": %u, ", A_BYTES);
    EXPECT(strstr(json, want) != NULL, "allocs --json does not list the arena allocation "
           "(%s):\n%s", want, json);
    EXPECT(sh_count(json, "\"live\": false") == 2 &&
           sh_count(json, "\"call_site\": \"scenario+0x") == 2,
           "allocs --json: both freed, both allocated in scenario():\n%s", json);
    printf("the arena's and the pool's allocations recorded, with their frees\n");
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
