/* SPDX-License-Identifier: MIT */
/*
 * shim_res_memop.c - stream memory operations on memory that libelixir.so has paged out do
 * the same with the shim as without it.
 *
 * One device, a 4 MiB GPU budget (two chunks).  Buffers A, B and C (2 MiB each) are filled,
 * A first, so that A is paged out (checked under the shim with sh_where).  Stream 1 waits on
 * a word of A (cuStreamWaitValue32, EQ); stream 2, busy with a slow kernel on C, then writes
 * that word (cuStreamWriteValue32) and a 64-bit word of A (cuStreamWriteValue64): the wait is
 * released by work submitted after it.  Stream 1 then adds 1 to B, after an event recorded
 * behind the writes as well (cuda.h asks that the order a wait gives be expressed to CUDA
 * too; the shim's evictions wait for B's use, which must not wait for a write the thread is
 * yet to submit).  Meanwhile the
 * host allocates and fills D, which needs room in GPU memory, and reads another word of A with
 * a kernel on the legacy stream: A's chunk must neither be moved while the operations naming it
 * are pending (a migration would copy it unordered with the write, which the race checker
 * reports, or lose the write) nor left unmapped when they run (where evicted chunks are
 * unmapped, the wait would fault).  Then one cuStreamBatchMemOp on stream 1 writes and waits
 * on words of A again, after A is paged out once more by E.  The words written, and every
 * buffer's contents, are printed; the transcript must equal the one without the shim, with
 * evicted chunks mapped and unmapped (ELIXIR_SIM_HOST_VMM=0), the race checker failing the
 * run on any race.
 */
#define SH_RES_KERNELS

#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define FLAG 0x1234u
#define WIDE 0x567800009abcull

static uint32_t host[WORDS];

/* Words 0-3 of A as printed, and the rest of A checked against pattern 1. */
static void print_a(const char *when, CUdeviceptr a)
{
    CHECK_CU(cuMemcpyDtoH(host, a, BYTES));
    printf("%s: a[0] 0x%x, a[2..3] 0x%llx, a[4] 0x%x\n", when, host[0],
           (unsigned long long)host[2] | (unsigned long long)host[3] << 32, host[4]);
    for (uint64_t i = 5; i < WORDS; i++)
        EXPECT(host[i] == sh_pattern(1, i), "%s: a[%llu] is 0x%x", when,
               (unsigned long long)i, host[i]);
}

static void batch_on_a(CUdeviceptr a, CUstream s)
{
    CUstreamBatchMemOpParams ops[2];
    memset(ops, 0, sizeof(ops));
    ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = a + 16;
    ops[0].writeValue.value = 77;
    ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
    ops[1].waitValue.address = a + 8;
    ops[1].waitValue.value64 = WIDE;
    ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    CHECK_CU(cuStreamBatchMemOp(s, 2, ops, 0));
}

static void scenario(void)
{
    CUdeviceptr abc[3], d, e, bad;
    CUfunction fill, verify;
    CUstream s1, s2;
    CUevent ev;

    sh_res_start(&fill, &verify, &bad);
    CUfunction slow = st_function(sh_res_ptx, "sh_slow_add");
    CUfunction add = st_function(sh_res_ptx, "sh_add");
    CUfunction peek = st_function(sh_res_ptx, "sh_peek");
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    sh_alloc_filled(fill, abc, 3, BYTES, 1, NULL);
    CHECK_CU(cuCtxSynchronize());
    CUdeviceptr a = abc[0], b = abc[1], c = abc[2];
    sh_expect_where(a, 0, "a, paged out for c");

    CHECK_CU(cuStreamWaitValue32(s1, a, FLAG, CU_STREAM_WAIT_VALUE_EQ));
    CHECK_CU(sh_slow_add_async(slow, c, WORDS, 50, s2));
    CHECK_CU(cuStreamWriteValue32(s2, a, FLAG, 0));
    CHECK_CU(cuStreamWriteValue64(s2, a + 8, WIDE, 0));
    /* The order the wait gives, expressed to CUDA as well, as cuda.h asks. */
    CHECK_CU(cuEventRecord(ev, s2));
    CHECK_CU(cuStreamWaitEvent(s1, ev, 0));
    CHECK_CU(sh_add_async(add, b, WORDS, 1, s1));
    printf("stream 1 waits on a, stream 2 writes it\n");
    CHECK_CU(cuMemAlloc(&d, BYTES));
    CHECK_CU(sh_fill_async(fill, d, WORDS, 4, NULL));
    CUdeviceptr a_far = a + 4096;       /* a word of A's chunk that no operation writes */
    void *args[] = { &a_far };
    CHECK_CU(sh_launch(peek, NULL, args));
    CHECK_CU(cuCtxSynchronize());
    print_a("after the wait", a);
    CHECK_CU(cuMemcpyDtoH(host, b, BYTES));
    sh_expect_pattern_plus(host, WORDS, 2, 1, "b, added to after the wait");
    printf("b holds pattern 2 + 1\n");

    CHECK_CU(cuMemAlloc(&e, BYTES));
    CHECK_CU(sh_fill_async(fill, e, WORDS, 5, NULL));
    CHECK_CU(sh_fill_async(fill, d, WORDS, 4, NULL));
    CHECK_CU(cuCtxSynchronize());
    sh_expect_where(a, 0, "a, paged out for d and e");
    batch_on_a(a, s1);
    CHECK_CU(cuStreamSynchronize(s1));
    print_a("after the batch", a);
    sh_expect_verified(verify, d, WORDS, 4, bad, "d");
    sh_expect_verified(verify, e, WORDS, 5, bad, "e");
    printf("d and e checked\n");

    CUdeviceptr all[] = { a, b, c, d, e };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        CHECK_CU(cuMemFree(all[i]));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuEventDestroy(ev));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_devices("ELIXIR_SIM_DEVICES=1", host_vmm, "ELIXIR_GPU_MEMORY=4M", &plain, &shim);
    EXPECT(sh_migrations_out(shim.err, 0) >= 2, "%s: a was not paged out:\n%s", what,
           shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
