/* SPDX-License-Identifier: MIT */
/*
 * shim_res_roundtrip.c - allocations beyond the GPU budget succeed, and data paged out to host
 * memory and back reads back intact.
 *
 * Under libelixir.so with an 8 MiB GPU budget (four 2 MiB chunks), the scenario allocates
 * eight 4 MiB buffers (twice the budget, so most chunks are evicted to host memory as the
 * later ones are backed), fills each with its own pattern by a kernel, then reads every
 * buffer back with cuMemcpyDtoH and checks it on the host, and checks it again with a kernel
 * (which brings the chunks back into GPU memory) in the reverse order.  The statistics
 * printed at exit must show chunks moved both ways, a GPU peak of the whole budget, the
 * allocations counted (current, peak and total, in blocks and bytes), the bytes moved each way
 * (one 2 MiB chunk per migration), every migration out counted as an eviction forced, and time
 * blocked on migrations; the race checker
 * (ELIXIR_SIM_RACECHECK=fail) must find nothing.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUFS 8
#define BUF_BYTES (4 * SH_MIB)
#define WORDS (BUF_BYTES / 4)

static CUfunction fill, verify;

/* Every buffer read back by cuMemcpyDtoH holds its pattern. */
static void read_by_copy(const CUdeviceptr *buf)
{
    static uint32_t host[WORDS];
    char what[32];

    for (uint32_t i = 0; i < BUFS; i++) {
        memset(host, 0, sizeof(host));
        CHECK_CU(cuMemcpyDtoH(host, buf[i], BUF_BYTES));
        snprintf(what, sizeof(what), "buffer %u by copy", i);
        sh_expect_pattern(host, WORDS, i, what);
    }
}

/* Every buffer checked by a kernel, last first, holds its pattern. */
static void read_by_kernel(CUdeviceptr *buf, CUdeviceptr bad)
{
    uint32_t wrong[BUFS];

    CHECK_CU(cuMemsetD8(bad, 0xff, sizeof(wrong)));
    for (uint32_t i = BUFS; i-- > 0;)
        CHECK_CU(sh_verify_async(verify, buf[i], WORDS, i, bad + 4 * i, NULL));
    CHECK_CU(cuMemcpyDtoH(wrong, bad, sizeof(wrong)));
    for (int i = 0; i < BUFS; i++)
        EXPECT(wrong[i] == 0, "buffer %d by kernel: %u words wrong", i, wrong[i]);
}

static void scenario(void)
{
    CUdeviceptr buf[BUFS], bad;

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuMemAlloc(&bad, BUFS * 4));
    sh_alloc_filled(fill, buf, BUFS, BUF_BYTES, 0, NULL);
    read_by_copy(buf);
    read_by_kernel(buf, bad);
    for (int i = 0; i < BUFS; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
    printf("%d buffers of %llu MiB intact\n", BUFS, BUF_BYTES / SH_MIB);
}

/* The bytes the statistics give each way: one 2 MiB chunk per migration. */
static void check_bytes(const char *err, long long out, long long in)
{
    const char *moved = strstr(err, "migrations to host ");
    long long n_out = -1, n_in = -1;
    double mib_out = -1, mib_in = -1;

    EXPECT(moved && sscanf(moved, "migrations to host %lld (%lf MiB), to GPU %lld (%lf MiB)",
                           &n_out, &mib_out, &n_in, &mib_in) == 4 &&
               n_out == out && n_in == in && mib_out == 2 * out && mib_in == 2 * in,
           "migrations %lld out (%.1f MiB), %lld in (%.1f MiB); expected 2 MiB each:\n%s",
           n_out, mib_out, n_in, mib_in, err);
}

/* The statistics' other figures: nine allocations (the buffers and `bad`), all freed, at
 * most nine live at once; every migration out an eviction forced by a chunk coming in; some
 * time blocked on migrations. */
static void check_counts(const char *err, long long out)
{
    unsigned long long cur = 1, peak = 0, total = 0;
    const char *blocks = strstr(err, "blocks "), *bytes = strstr(err, "bytes ");
    const char *blocked = strstr(err, "blocked on migrations ");
    double secs = -1, bpeak = 0, btotal = 0;
    char bcur[8] = "", upeak[8] = "", utotal[8] = "";

    EXPECT(blocks && sscanf(blocks, "blocks %llu %llu %llu", &cur, &peak, &total) == 3 &&
               cur == 0 && peak == BUFS + 1 && total == BUFS + 1,
           "allocations: %llu current, %llu peak, %llu total; expected 0, %d, %d:\n%s", cur,
           peak, total, BUFS + 1, BUFS + 1, err);
    /* 8 x 4 MiB and 32 bytes: 32.0 MiB, in MiB with one decimal */
    EXPECT(bytes && sscanf(bytes, "bytes 0 %7s %lf %7s %lf %7s", bcur, &bpeak, upeak, &btotal,
                           utotal) == 5 &&
               strcmp(bcur, "B") == 0 && bpeak == 32.0 && strcmp(upeak, "MiB") == 0 &&
               btotal == 32.0 && strcmp(utotal, "MiB") == 0,
           "bytes: expected 0 B current, 32.0 MiB peak and total:\n%s", err);
    EXPECT(sh_stat(err, "evictions forced ") == out,
           "evictions forced %lld, migrations to host %lld:\n%s",
           sh_stat(err, "evictions forced "), out, err);
    EXPECT(blocked && sscanf(blocked, "blocked on migrations %lf", &secs) == 1 && secs > 0,
           "time blocked on migrations %.3f s:\n%s", secs, err);
}

/* The statistics lead with the migrations and the share of the run the host spent blocked
 * on them, right after the process line; launches and copies are given once, by kind. */
static void check_layout(const char *err)
{
    const char *head = strstr(err, "elixir: statistics of process ");
    const char *lead = head ? strchr(head, '\n') : NULL;
    double run = -1, blocked = -1, share = -1, run2 = -1;

    EXPECT(head && sscanf(head, "elixir: statistics of process %*d (run %lf s)", &run) == 1 &&
               run > 0, "no run time on the statistics' first line:\n%s", err);
    EXPECT(lead && strncmp(lead + 1, "elixir: device 0: migrations to host ", 37) == 0,
           "the statistics do not lead with the migrations:\n%s", err);
    const char *b = strstr(lead, "the host blocked on migrations ");
    EXPECT(b && sscanf(b, "the host blocked on migrations %lf s (%lf%% of the %lf s run)",
                       &blocked, &share, &run2) == 3 &&
               share > 0 && share <= 100 && run2 > 0,
           "no share of the run blocked on migrations:\n%s", err);
    EXPECT(sh_count(err, "launch kernel ") == 1 && sh_count(err, "copy dtoh ") == 1 &&
               !strstr(err, "call cuLaunch") && !strstr(err, "call cuMemcpy") &&
               strstr(err, "call cuMemAlloc_v2 "),
           "launches or copies counted twice, or the calls missing:\n%s", err);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_ok("scenario", env);
    long long out = sh_stat(r.err, "migrations to host "), in = sh_stat(r.err, "to GPU ");
    long long peak = sh_stat(r.err, "GPU peak "), host = sh_stat(r.err, "host peak ");

    printf("%smigrations to host %lld, to GPU %lld; GPU peak %lld MiB, host peak %lld MiB\n",
           r.out, out, in, peak, host);
    EXPECT(out >= 12 && in >= 1, "chunks were not paged out and back:\n%s", r.err);
    /* 34 MiB of chunks (the buffers and `bad`'s) fill the 8 MiB budget and overflow by 26. */
    EXPECT(peak == 8, "GPU peak %lld MiB with an 8 MiB budget filled:\n%s", peak, r.err);
    EXPECT(host >= 26, "host peak %lld MiB: the buffers did not overflow to host memory", host);
    check_bytes(r.err, out, in);
    check_counts(r.err, out);
    check_layout(r.err);
    sh_run_free(&r);
    return 0;
}
