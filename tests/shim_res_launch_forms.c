/* SPDX-License-Identifier: MIT */
/*
 * shim_res_launch_forms.c - every launch form besides cuLaunchKernel brings back the chunks
 * its arguments reach: cuLaunchKernelEx and cuLaunchCooperativeKernel, in both ABIs (the
 * per-thread variants are what cuGetProcAddress returns for
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), and cuLaunchKernelEx given a CUkernel.
 *
 * The forms take the arguments the way cuLaunchKernel does, but through wrappers of their own
 * with their own descriptor (a CUlaunchConfig's stream for cuLaunchKernelEx).  Three 2 MiB
 * buffers live under a 4 MiB GPU budget (two chunks, one of which the word sh_verify counts
 * into may take), so at most one buffer is in GPU memory at a time.  For each form, the
 * buffers are filled by sh_fill launched in that form (its 4-byte seed sends the launch
 * through residency's general path), then each is checked by sh_verify launched in that form
 * (all 8-byte words: the fast path's candidate) right after the two others were read by
 * cuLaunchKernel, so that the checked buffer is away when the form's launch is issued (under
 * the shim the scenario checks this with sh_where).  Under the shim, each launch must enter
 * the wrapper of exactly its symbol, once.
 *
 * The test runs the scenario without the shim and under it, with evicted chunks mapped and
 * unmapped (ELIXIR_SIM_HOST_VMM=0: a launch that did not bring its chunks back faults), and
 * the race checker failing the run on any race: the transcripts must be equal, chunks must
 * have moved both ways, and none may have been pinned (a launch whose arguments the shim
 * could not read would have pinned every chunk).
 */
#define SH_RES_KERNELS
#include <cudaTypedefs.h>

#include "shim_test.h"

#define NBUF 3
#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)

typedef enum form { EX, EX_PTSZ, COOP, COOP_PTSZ, EX_KERNEL, NFORMS } form_t;

static const char *const form_syms[NFORMS] = {
    "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel",
    "cuLaunchCooperativeKernel_ptsz", "cuLaunchKernelEx"
};

static PFN_cuLaunchKernelEx_v11060 ex_ptsz;
static PFN_cuLaunchCooperativeKernel_v9000 coop_ptsz;
static int shimmed;

/* Kernel f launched in form `form` as one block of one thread on the form's default stream. */
static CUresult launch(form_t form, CUfunction f, void **args)
{
    CUlaunchConfig cfg = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1,
                           .blockDimY = 1, .blockDimZ = 1 };

    switch (form) {
    case EX:
    case EX_KERNEL:
        return cuLaunchKernelEx(&cfg, f, args, NULL);
    case EX_PTSZ:
        return ex_ptsz(&cfg, f, args, NULL);
    case COOP:
        return cuLaunchCooperativeKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args);
    default:
        return coop_ptsz(f, 1, 1, 1, 1, 1, 1, 0, NULL, args);
    }
}

/* launch(), which must succeed and, under the shim, enter the form's own wrapper once. */
static void launch_counted(form_t form, CUfunction f, void **args, const char *what)
{
    long long before = shimmed ? sh_calls(form_syms[form]) : 0;

    CHECK_CU(launch(form, f, args));
    long long after = shimmed ? sh_calls(form_syms[form]) : 1;
    EXPECT(after == before + 1, "%s by %s: its wrapper was entered %lld times", what,
           form_syms[form], after - before);
}

static void per_thread_variants(void)
{
    CUdriverProcAddressQueryResult found;

    CHECK_CU(cuGetProcAddress("cuLaunchKernelEx", (void **)&ex_ptsz, 13000,
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &found));
    CHECK_CU(cuGetProcAddress("cuLaunchCooperativeKernel", (void **)&coop_ptsz, 13000,
                              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &found));
}

/* The three buffers filled, then checked, by kernels launched in `form`. */
static void run_form(form_t form, CUfunction fill, CUfunction verify, CUfunction peek,
                     CUdeviceptr bad)
{
    CUdeviceptr buf[NBUF];
    uint64_t words = WORDS;

    for (int i = 0; i < NBUF; i++) {
        uint32_t seed = 40u + (uint32_t)(form * NBUF + i);
        void *args[] = { &buf[i], &words, &seed };

        CHECK_CU(cuMemAlloc(&buf[i], BYTES));
        launch_counted(form, fill, args, "sh_fill");
    }
    for (int i = 0; i < NBUF; i++) {
        CUdeviceptr a = buf[(i + 1) % NBUF], b = buf[(i + 2) % NBUF];
        uint64_t seed = 40u + (uint64_t)(form * NBUF + i);
        void *pa[] = { &a }, *pb[] = { &b }, *args[] = { &buf[i], &words, &seed, &bad };
        uint32_t wrong = 1;

        CHECK_CU(sh_launch(peek, NULL, pa));
        CHECK_CU(sh_launch(peek, NULL, pb));
        CHECK_CU(cuCtxSynchronize());
        sh_expect_where(buf[i], 0, "a buffer about to be checked");
        launch_counted(form, verify, args, "sh_verify");
        CHECK_CU(cuCtxSynchronize());       /* the per-thread forms' work included */
        CHECK_CU(cuMemcpyDtoH(&wrong, bad, 4));
        EXPECT(wrong == 0, "%s: buffer %d has %u words wrong", form_syms[form], i, wrong);
        printf("%s%s: buffer %d filled and checked\n", form_syms[form],
               form == EX_KERNEL ? " (CUkernel)" : "", i);
    }
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemFree(buf[i]));
}

static void scenario(void)
{
    CUfunction fill, verify, peek, kfill, kverify;
    CUlibrary lib;
    CUkernel k[2];
    CUdeviceptr bad;

    shimmed = sh_calls("cuMemAlloc_v2") >= 0;
    sh_res_start(&fill, &verify, &bad);
    peek = st_function(sh_res_ptx, "sh_peek");
    per_thread_variants();
    CHECK_CU(cuLibraryLoadData(&lib, sh_res_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetKernel(&k[0], lib, "sh_fill"));
    CHECK_CU(cuLibraryGetKernel(&k[1], lib, "sh_verify"));
    kfill = (CUfunction)(void *)k[0];
    kverify = (CUfunction)(void *)k[1];
    for (form_t form = EX; form < NFORMS; form++)
        run_form(form, form == EX_KERNEL ? kfill : fill, form == EX_KERNEL ? kverify : verify,
                 peek, bad);
    CHECK_CU(cuMemFree(bad));
    CHECK_CU(cuLibraryUnload(lib));
}

static void run(const char *what, const char *host_vmm)
{
    const char *plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", host_vmm, NULL };
    /* The reactive engine: each buffer must be away when a launch of the form under test
     * reaches it, so that only reading that launch's arguments brings it back (a plan would
     * prefetch it). */
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", host_vmm, "ELIXIR_GPU_MEMORY=4M",
                          "ELIXIR_STATS=1", "ELIXIR_POLICY=reactive", NULL };
    sh_run_t plain = sh_run_plain_ok(plain_env);
    sh_run_t shim = sh_run_migrations(env);

    EXPECT(sh_stat(shim.err, "migrations to host ") > 0 && sh_stat(shim.err, "to GPU ") > 0,
           "%s: nothing was paged out and back:\n%s", what, shim.err);
    EXPECT(strstr(shim.err, "chunks pinned 0 (total 0,"),
           "%s: chunks were pinned: a launch's arguments were not read:\n%s", what, shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
