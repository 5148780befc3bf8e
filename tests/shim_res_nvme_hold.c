/* SPDX-License-Identifier: MIT */
/*
 * shim_res_nvme_hold.c - reading an operation's chunks back from NVMe sends none of its other
 * chunks to NVMe in turn: each chunk read comes into GPU memory, whose room sends a GPU chunk
 * to host memory, whose room sends the oldest host chunk to NVMe, and that must not be one
 * the operation reaches (res_nvme_reach holds them while it reads).
 *
 * The reactive engine, a GPU budget of 4 MiB (2 chunks), host memory of 6 MiB (3 chunks) and
 * NVMe behind it.  NBUF one-chunk buffers are filled in turn, so that the first ones filled
 * end on NVMe and the next ones in host memory.  Then a kernel adds 1 to the three buffers
 * `ops`, ROUNDS times, each launch waited for: one of them in host memory (the oldest there)
 * and two on NVMe before the first launch.  The launches must read from NVMe the two chunks
 * that were there and no more; with the chunk in host memory sent to NVMe while the other
 * two are read, it comes back, and they read three (as measured without the hold).  The
 * program defines the simulator's drive function (elixirSimIoSubmit; the shim finds it by
 * name, the program's first) to count the bytes read around the launches.  Every buffer's
 * contents are checked at the end, and the run's transcript must equal the run without the
 * shim.  The race checker fails the run on any race.
 */
#define SH_RES_KERNELS
#include <dlfcn.h>
#include <errno.h>

#include "shim_test.h"

#define NBUF 8
#define BUF (2 * SH_MIB)
#define ROUNDS 3

/* Filled in turn, buffers 0-2 end on NVMe, 3-5 in host memory (3 the oldest), 6 and 7 in GPU
 * memory. */
static const int ops[3] = { 3, 0, 1 };

static uint64_t read_bytes;

#define EXPORT __attribute__((visibility("default")))
EXPORT uint64_t elixirSimIoSubmit(int dir, const void *buf, uint64_t bytes);

uint64_t elixirSimIoSubmit(int dir, const void *buf, uint64_t bytes)
{
    uint64_t (*real)(int, const void *, uint64_t) =
        (uint64_t(*)(int, const void *, uint64_t))dlsym(RTLD_NEXT, "elixirSimIoSubmit");
    read_bytes += dir == 0 ? bytes : 0;
    return real(dir, buf, bytes);
}

static void scenario(void)
{
    CUdeviceptr buf[NBUF];
    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction add = st_function(sh_res_ptx, "sh_add3");
    for (int i = 0; i < NBUF; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], BUF));
        CHECK_CU(sh_fill_async(fill, buf[i], BUF / 4, (uint32_t)(i + 1), NULL));
        CHECK_CU(cuCtxSynchronize());
    }
    const char *pre = getenv("LD_PRELOAD");
    uint64_t n = BUF / 4, before = read_bytes;
    void *args[] = { &buf[ops[0]], &buf[ops[1]], &buf[ops[2]], &n };
    for (int r = 0; r < ROUNDS; r++) {
        CHECK_CU(sh_launch(add, NULL, args));
        CHECK_CU(cuCtxSynchronize());
    }
    uint64_t chunks = (read_bytes - before) / BUF;
    if (pre && *pre) {
        EXPECT(chunks == 2, "the launches read %llu chunks from NVMe: expected the 2 that "
               "were there", (unsigned long long)chunks);
        fprintf(stderr, "launches: %llu chunks read from NVMe\n", (unsigned long long)chunks);
    }
    for (int i = 0; i < NBUF; i++) {
        char what[32];
        int in_ops = i == ops[0] || i == ops[1] || i == ops[2];
        snprintf(what, sizeof(what), "buffer %d", i);
        sh_expect_pattern_at(what, buf[i], BUF, (uint32_t)(i + 1), in_ops ? ROUNDS : 0);
    }
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemFree(buf[i]));
}

static char dir[] = "/tmp/elixir-nvme-hold-XXXXXX";    /* (mkdtemp's template) */

/* The scratch directory goes at exit, a failed check's included (the area in it is an
 * unnamed file: nothing else is left). */
static void remove_dir(void)
{
    rmdir(dir);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    EXPECT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    atexit(remove_dir);
    char path[64];
    snprintf(path, sizeof(path), "ELIXIR_NVME_PATH=%s", dir);
    const char *env[] = { "ELIXIR_POLICY=reactive", "ELIXIR_GPU_MEMORY=4M",
                          "ELIXIR_HOST_MEMORY=6M", "ELIXIR_NVME_MEMORY=64M",
                          "ELIXIR_STATS=1", "ELIXIR_SIM_RACECHECK=fail", path, NULL };
    sh_run_t plain = sh_run_plain_ok(env);
    sh_run_t shim = sh_run_ok("scenario", env);
    printf("%s", shim.out);
    const char *at = strstr(shim.err, "launches: ");
    printf("%.*s", at ? (int)(strcspn(at, "\n") + 1) : 0, at ? at : "");
    sh_same_transcript("the launches on chunks in host memory and on NVMe", &plain, &shim);
    return 0;
}
