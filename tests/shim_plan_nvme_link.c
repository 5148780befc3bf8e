/* SPDX-License-Identifier: MIT */
/*
 * shim_plan_nvme_link.c - the planned policy measures the NVMe link it gives the planner from
 * the reactive engine's timed reads and writes in the profiled iteration.
 *
 * A loop of identical iterations runs under libelixir.so with ELIXIR_POLICY=plan and the NVMe
 * tier in a scratch directory: a kernel checks each of ten 4 MiB buffers against its pattern,
 * then the host synchronises and reads the results (every check must pass).  With GPU and host
 * budgets of 8 MiB each, most buffers live on NVMe and the reactive engine reads and writes
 * them one chunk at a time in the profiled iteration; the simulator's drive is set apart from
 * the default figures (3 GB/s reads, 1.5 GB/s writes, 20 us of latency), and the plan's log
 * line must give each direction's rate as the drive model's time for one 2 MiB chunk (its
 * transfer plus the latency; a read also copies its last 512 KiB piece to the GPU after it;
 * the chunks written were in host memory, whose copy to staging takes no virtual time) within
 * 3%, saying it was measured, and ELIXIR_STATS the same.  With a GPU budget that holds
 * everything, nothing is read or written: the log must say the default figures (7 and 5 GB/s)
 * are used.  The race checker fails either run on any race.
 */
#define SH_RES_KERNELS
#include <errno.h>

#include "shim_test.h"

#define NBUF 10
#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)
#define ITERS 6
#define CHUNK (2.0 * SH_MIB)
#define READ_GBS 3.0
#define WRITE_GBS 1.5
#define LATENCY_US 20.0
#define PIECE (512.0 * 1024)                /* ELIXIR_NVME_BLOCK's default */
#define H2D_GBS 25.0                        /* the default machine's host link to the GPU */

static void scenario(void)
{
    CUdeviceptr buf[NBUF], bad;
    CUstream s;
    uint32_t wrong[NBUF];
    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&bad, sizeof(wrong)));
    sh_alloc_filled(fill, buf, NBUF, BUF, 0, s);
    CHECK_CU(cuStreamSynchronize(s));
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < NBUF; i++)
            CHECK_CU(sh_verify_async(verify, buf[i], WORDS, (uint32_t)i, bad + 4 * i, s));
        CHECK_CU(cuMemcpyDtoHAsync(wrong, bad, sizeof(wrong), s));
        CHECK_CU(cuStreamSynchronize(s));
        for (int i = 0; i < NBUF; i++)
            EXPECT(wrong[i] == 0, "iteration %d: buffer %d has %u words wrong", it, i, wrong[i]);
    }
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
    CHECK_CU(cuStreamDestroy(s));
}

/* GB/s of one chunk's I/O on the simulator's drive: its transfer at gbs plus the latency,
 * plus, after it, `copy_gbs` for one piece's copy on (0: none). */
static double chunk_gbs(double gbs, double copy_gbs)
{
    return CHUNK / (CHUNK / gbs + LATENCY_US * 1e3 + (copy_gbs > 0 ? PIECE / copy_gbs : 0));
}

/* One run with GPU budget `budget`; paged: the reactive engine uses NVMe in it. */
static void run(const char *budget, int paged)
{
    char gpu[64];
    const char *path = sh_nvme_path_env();
    snprintf(gpu, sizeof(gpu), "ELIXIR_GPU_MEMORY=%s", budget);
    const char *env[] = { "ELIXIR_POLICY=plan", "ELIXIR_LOG=info", "ELIXIR_LOG_SUBSYS=RES",
                          "ELIXIR_HOST_MEMORY=8M", "ELIXIR_NVME_MEMORY=128M", "ELIXIR_STATS=1",
                          "ELIXIR_SIM_NVME_READ_GBPS=3", "ELIXIR_SIM_NVME_WRITE_GBPS=1.5",
                          "ELIXIR_SIM_NVME_LATENCY_US=20", gpu, path, NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    const char *line = strstr(r.err, "the plan's NVMe link:");
    EXPECT(line, "the plan's NVMe link in the log:\n%s", r.err);
    const char *end = strchr(line, '\n');
    double rd = sh_after(line, "reads "), wr = sh_after(line, "writes ");
    printf("budget %s: %.*s\n", budget, end ? (int)(end - line) : (int)strlen(line), line);
    if (paged) {
        sh_near(rd, chunk_gbs(READ_GBS, H2D_GBS), 0.03, "NVMe reads, GB/s", line);
        sh_near(wr, chunk_gbs(WRITE_GBS, 0), 0.03, "NVMe writes, GB/s", line);
        double mib = sh_after(line, "(measured over ");
        EXPECT(mib >= 16 && mib < 1000 && strstr(line, "writes") &&
               strstr(strstr(line, "writes"), "(measured over "),
               "both directions measured:\n%s", line);
        const char *st = strstr(r.err, "NVMe plan: link reads ");
        EXPECT(st && sh_after(st, "link reads ") == rd && strstr(st, "(measured over "),
               "the statistics give the link the plan used:\n%s", r.err);
    } else {
        EXPECT(rd == 7.0 && wr == 5.0 && strstr(line, "reads 7.00 GB/s (default)") &&
               strstr(line, "writes 5.00 GB/s (default)"),
               "the default figures without NVMe I/O:\n%s", line);
    }
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    run("64M", 0);
    run("8M", 1);
    printf("the plan's NVMe link is measured where the reactive engine used it, else the "
           "default\n");
    return 0;
}
