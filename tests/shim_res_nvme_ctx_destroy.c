/* SPDX-License-Identifier: MIT */
/*
 * shim_res_nvme_ctx_destroy.c - the context the NVMe tier's staging memory was pinned in is
 * destroyed while chunks lie on NVMe, and the program goes on in another context of the
 * device: the staging memory is the shim's own, so it outlives the context, is pinned again in
 * the context the arena takes, and the chunks on NVMe come back through it with their data.
 *
 * Under 8 MiB GPU and 8 MiB host budgets with 64 MiB of NVMe: context A (cuCtxCreate) makes
 * the first allocation, where the arena and the NVMe tier start, and frees it; context B is
 * made, ten 4 MiB buffers are filled there (most go to NVMe, through staging pinned in A);
 * A is destroyed; in B every buffer is checked by a kernel and by cuMemcpyDtoH, twice (chunks
 * come back from NVMe and go again), and freed.  The transcript must equal the run without the
 * shim; the statistics must show chunks read back from NVMe, and the log that the staging
 * memory was pinned again.  The race checker fails the run on any race.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)
#define NBUF 10

static uint32_t host_buf[WORDS];

static void scenario(void)
{
    CUcontext a, b;
    CUdeviceptr bad, buf[NBUF];
    CUdevice dev;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, dev));
    CUdeviceptr first;
    CHECK_CU(cuMemAlloc(&first, BUF));
    CHECK_CU(cuMemsetD32(first, 7, WORDS));
    CHECK_CU(cuMemFree(first));

    CHECK_CU(cuCtxCreate(&b, NULL, 0, dev));
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction verify = st_function(sh_res_ptx, "sh_verify");
    CUstream s;
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&bad, 4));
    sh_alloc_filled(fill, buf, NBUF, BUF, 0, s);
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuCtxDestroy(a));
    printf("context A destroyed\n");

    for (int round = 0; round < 2; round++)
        for (int i = 0; i < NBUF; i++) {
            char what[64];
            snprintf(what, sizeof(what), "round %d, buffer %d by copy", round, i);
            CHECK_CU(cuMemcpyDtoH(host_buf, buf[i], BUF));
            sh_expect_pattern_plus(host_buf, WORDS, (uint32_t)i, 0, what);
            snprintf(what, sizeof(what), "round %d, buffer %d by kernel", round, i);
            sh_expect_verified(verify, buf[i], WORDS, (uint32_t)i, bad, what);
        }
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuCtxDestroy(b));
    printf("%d buffers checked twice in context B: data right\n", NBUF);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *path = sh_nvme_path_env();
    const char *env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_HOST_MEMORY=8M",
                          "ELIXIR_NVME_MEMORY=64M", "ELIXIR_NVME_VERIFY=1", "ELIXIR_STATS=1",
                          "ELIXIR_LOG=info", "ELIXIR_LOG_SUBSYS=RES", path, NULL };
    sh_run_t plain = sh_run_plain_ok(NULL);
    sh_run_t r = sh_run_ok("scenario", env);
    long long in = sh_stat(r.err, "back from NVMe ");
    printf("chunks back from NVMe %lld\n", in);
    EXPECT(in >= 8, "chunks did not come back from NVMe:\n%s", r.err);
    EXPECT(strstr(r.err, "staging memory is pinned again"), "the staging memory was not pinned "
           "again in context B:\n%s", r.err);
    EXPECT(strstr(r.err, "NVMe tier degraded") == NULL, "the tier degraded:\n%s", r.err);
    sh_same_transcript("context A destroyed", &plain, &r);
    return 0;
}
