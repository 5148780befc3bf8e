/* SPDX-License-Identifier: MIT */
/*
 * mem_pinned_limit.c - the machine's page-locked host memory (ELIXIR_SIM_HOST_MEMORY) and the
 * device memory other processes hold (sim_other_process_memory), the two ways a GPU job runs
 * short after it sized itself.
 *
 * With 16 MiB that can be pinned: cuMemHostAlloc, cuMemAllocHost, cuMemHostRegister and
 * host-located cuMemCreate share it, each failing with CUDA_ERROR_OUT_OF_MEMORY beyond it
 * (changing nothing: a request that fits exactly still succeeds afterwards), and
 * cuMemFreeHost, cuMemHostUnregister and cuMemRelease give it back.  Device-located memory is
 * not counted.  Bad values of the option are reported, naming it and the accepted form, and
 * stop the program at cuInit with exit status 2 (a child that would pin 64 MiB).
 *
 * Other processes' memory counts as used on its device: cuMemGetInfo reports less free,
 * cuMemAlloc and cuMemCreate fail beyond the rest, more than is free is refused (-ENOMEM,
 * changing nothing), a smaller figure gives memory back, and a device that does not exist is
 * -EINVAL.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "memtest.h"
#include "simchild.h"

#define LIMIT (16 * MT_MIB)

static size_t free_now(void)
{
    size_t free_b, total;

    CHECK_CU(cuMemGetInfo(&free_b, &total));
    return free_b;
}

static void pinned_limit(void)
{
    void *a, *b, *x = NULL;
    CUmemGenericAllocationHandle h, hx, dev;

    CHECK_CU(cuMemHostAlloc(&a, 6 * MT_MIB, 0));
    CHECK_CU(cuMemAllocHost(&b, 6 * MT_MIB));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemHostAlloc(&x, 4 * MT_MIB + 1, 0));
    EXPECT(x == NULL, "a refused cuMemHostAlloc wrote a pointer");
    CUmemAllocationProp host = mt_prop(CU_MEM_LOCATION_TYPE_HOST, 0);
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&hx, 6 * MT_MIB, &host, 0));
    dev = mt_create(64 * MT_MIB, CU_MEM_LOCATION_TYPE_DEVICE, 0);   /* not counted */
    h = mt_create(4 * MT_MIB, CU_MEM_LOCATION_TYPE_HOST, 0);           /* exactly the rest */
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemHostAlloc(&x, 4096, 0));

    /* Registration pins the caller's pages: counted too, and given back. */
    size_t reg = 2 * MT_MIB;
    char *mem = mmap(NULL, reg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(mem != MAP_FAILED, "mmap");
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemHostRegister(mem, reg, 0));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemHostRegister(mem, reg, 0));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemHostAlloc(&x, 2 * MT_MIB + 1, 0));
    CHECK_CU(cuMemHostUnregister(mem));
    CHECK_CU(cuMemFreeHost(a));
    CHECK_CU(cuMemHostAlloc(&x, 10 * MT_MIB, 0));      /* 6 + 10: the limit */
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemHostRegister(mem, 4096, 0));
    CHECK_CU(cuMemFreeHost(x));
    CHECK_CU(cuMemFreeHost(b));
    CHECK_CU(cuMemRelease(dev));
    h = mt_create(LIMIT, CU_MEM_LOCATION_TYPE_HOST, 0);
    CHECK_CU(cuMemRelease(h));
    munmap(mem, reg);
    printf("16 MiB pinned at most, every kind of pinning counted and given back\n");
}

/* In a child: 64 MiB pinned (the limit was left at unlimited). */
static void pin_64(void *arg)
{
    void *p;

    (void)arg;
    st_setup(0);
    CHECK_CU(cuMemHostAlloc(&p, 64 * MT_MIB, 0));
    CHECK_CU(cuMemFreeHost(p));
}

static void bad_values(void)
{
    static const char *const values[] = { "0", "lots", "-1", "12Q", "" };

    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char env[64], want[96];
        snprintf(env, sizeof(env), "ELIXIR_SIM_HOST_MEMORY=%s", values[i]);
        snprintf(want, sizeof(want), "ELIXIR_SIM_HOST_MEMORY=\"%s\" is not valid (accepted: "
                 "unlimited, or a size above 0", values[i]);
        const char *const e[] = { env, NULL };
        const char *const needles[] = { want, NULL };
        st_child_t c;
        st_run_child(pin_64, NULL, e, &c);
        st_child_expect(&c, 2, needles);
        st_child_free(&c);
    }
    printf("bad values are reported and stop the program\n");
}

static void other_processes(void)
{
    CUdeviceptr a, x;
    CUmemGenericAllocationHandle hx;
    CUmemAllocationProp prop = mt_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    size_t before = free_now();

    EXPECT(sim_other_process_memory(1, MT_MIB) == -EINVAL, "device 1 exists on this machine");
    EXPECT(sim_other_process_memory(-1, MT_MIB) == -EINVAL, "device -1 accepted");
    CHECK_CU(cuMemAlloc(&a, 256 * MT_MIB));
    EXPECT(sim_other_process_memory(0, before) == -ENOMEM, "more than is free was taken");
    EXPECT(free_now() == before - 256 * MT_MIB, "a refused figure changed free memory");
    EXPECT(sim_other_process_memory(0, before - 512 * MT_MIB) == 0, "the other processes");
    EXPECT(free_now() == 256 * MT_MIB, "free with others holding memory: %zu", free_now());
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&x, 256 * MT_MIB + 1));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&hx, 258 * MT_MIB, &prop, 0));
    CHECK_CU(cuMemAlloc(&x, 256 * MT_MIB));
    EXPECT(free_now() == 0, "the device should be full: %zu free", free_now());
    EXPECT(sim_other_process_memory(0, before - 768 * MT_MIB) == 0, "giving 256 MiB back");
    EXPECT(free_now() == 256 * MT_MIB, "free after others gave back: %zu", free_now());
    EXPECT(sim_other_process_memory(0, 0) == 0, "giving everything back");
    CHECK_CU(cuMemFree(x));
    CHECK_CU(cuMemFree(a));
    EXPECT(free_now() == before, "free at the end: %zu, %zu at the start", free_now(), before);
    printf("other processes' memory counts as used, and comes back\n");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_HOST_MEMORY=16M", NULL };

    st_reexec(argv, env);
    bad_values();
    st_setup(0);
    pinned_limit();
    other_processes();
    return 0;
}
