/* SPDX-License-Identifier: MIT */
/*
 * shim_res_nvme_faults.c - read faults of the NVMe tier under the shim, while a training-like
 * program runs: the data stays intact or the program gets a clear error, never wrong data.
 *
 * The program ("steps"): eight 4 MiB buffers (32 MiB) are filled, then each step adds 1 to
 * every buffer with a kernel and synchronises; at the end every buffer is read back with
 * cuMemcpyDtoH and checked.  With 8 MiB of GPU and 8 MiB of host budget most buffers live on
 * NVMe, so every step reads chunks back.  Under ELIXIR_NVME_FAULT=read:N:eio, read:N:short
 * and (with ELIXIR_NVME_VERIFY=1) read:N:corrupt its transcript must equal the run without
 * the shim: the failed read is tried again and succeeds; the log must say once that the tier
 * is degraded, and the statistics count the failed read.  (A fault meeting the plan's reads
 * ahead, in train.py, is tests/shim_res_nvme_train.sh's.)
 *
 * The program ("lost"): the buffers are filled (most go to NVMe), then the swap area's file
 * itself is overwritten (found through /proc/self/fd: the data on the drive changed), and
 * every buffer is checked by a kernel.  With ELIXIR_NVME_VERIFY=1 a chunk whose only copy is
 * on NVMe can no longer be read back correctly: the launch that reaches it must fail with
 * CUDA_ERROR_OUT_OF_MEMORY (DESIGN.md invariant 5: nothing enqueued on data that is not
 * there), the log must name the allocation, and every check that ran must have found its data
 * right.
 */
#define SH_RES_KERNELS
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "../iouring/nvme.h"
#include "shim_test.h"

#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)
#define NBUF 8
#define STEPS 6

static uint32_t host_buf[WORDS];
static char dir[] = "/tmp/elixir-nvme-faults-XXXXXX";

static void steps(void)
{
    CUdeviceptr bad, buf[NBUF];
    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction add = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuMemAlloc(&bad, 4));
    sh_alloc_filled(fill, buf, NBUF, BUF, 0, NULL);
    for (int s = 1; s <= STEPS; s++) {
        for (int i = 0; i < NBUF; i++)
            CHECK_CU(sh_add_async(add, buf[i], WORDS, 1, NULL));
        CHECK_CU(cuCtxSynchronize());
        printf("step %d done\n", s);
    }
    for (int i = 0; i < NBUF; i++) {
        char what[64];
        snprintf(what, sizeof(what), "buffer %d after %d steps", i, STEPS);
        CHECK_CU(cuMemcpyDtoH(host_buf, buf[i], BUF));
        sh_expect_pattern_plus(host_buf, WORDS, (uint32_t)i, STEPS, what);
        printf("%s: right\n", what);
    }
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
}

/* Overwrite the start of every 2 MiB of the swap area's file (this process's descriptor of
 * a file in dir but its ledger): the number of descriptors found. */
static int spoil_area(void)
{
    DIR *fds = opendir("/proc/self/fd");
    struct dirent *e;
    static char junk[4096];
    int found = 0;
    memset(junk, 0xa5, sizeof(junk));
    while (fds && (e = readdir(fds))) {
        char link[300], target[512];
        snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        if (strncmp(target, dir, strlen(dir)) != 0 || strstr(target, NVME_LEDGER_NAME))
            continue;                   /* (the directory's ledger holds no data) */
        int fd = open(link, O_WRONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
            continue;
        for (off_t at = 0; at + (off_t)sizeof(junk) <= st.st_size; at += 2 * SH_MIB)
            EXPECT(pwrite(fd, junk, sizeof(junk), at) == (ssize_t)sizeof(junk),
                   "cannot overwrite the swap area at %lld: %s", (long long)at, strerror(errno));
        fsync(fd);
        close(fd);
        found++;
    }
    if (fds)
        closedir(fds);
    return found;
}

static void lost(void)
{
    CUdeviceptr bad, buf[NBUF];
    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction verify = st_function(sh_res_ptx, "sh_verify");
    sh_alloc_filled(fill, buf, NBUF, BUF, 0, NULL);
    CHECK_CU(cuMemAlloc(&bad, 4));      /* (after the buffers: not the first to go to NVMe) */
    CHECK_CU(cuCtxSynchronize());
    EXPECT(spoil_area() == 1, "the swap area's file was not found among the descriptors");
    int refused = 0;
    for (int i = 0; i < NBUF; i++) {
        uint32_t wrong = 1;
        CUresult r = sh_verify_async(verify, buf[i], WORDS, (uint32_t)i, bad, NULL);
        if (r == CUDA_ERROR_OUT_OF_MEMORY) {
            printf("buffer %d: refused\n", i);
            refused++;
            continue;
        }
        CHECK_CU(r);
        CHECK_CU(cuMemcpyDtoH(&wrong, bad, 4));
        EXPECT(wrong == 0, "buffer %d: %u words wrong, and no error", i, wrong);
        printf("buffer %d: right\n", i);
    }
    EXPECT(refused > 0 && refused < NBUF, "%d of %d checks refused after the swap area was "
           "overwritten, expected some (those of buffers on NVMe), not all", refused, NBUF);
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
}

/* The steps under fault `fault` (and `more`, or NULL): the transcript of the run without the
 * shim, the tier degraded once, a failed read counted. */
static void faulty(const char *fault, const char *more, const char *path)
{
    const char *env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_HOST_MEMORY=8M",
                          "ELIXIR_NVME_MEMORY=64M", "ELIXIR_NVME_VERIFY=1", "ELIXIR_STATS=1",
                          path, fault, more, NULL };
    char what[128];
    snprintf(what, sizeof(what), "%s%s%s", fault, more ? ", " : "", more ? more : "");
    sh_run_t plain = sh_run_plain_ok(NULL);
    sh_run_t r = sh_run_ok("scenario", env);
    long long failed = sh_stat(r.err, "failed reads "), back = sh_stat(r.err, "back from NVMe ");
    printf("%s: chunks back from NVMe %lld, failed reads %lld\n", what, back, failed);
    EXPECT(back > 0, "%s: nothing came back from NVMe:\n%s", what, r.err);
    EXPECT(failed == 1, "%s: %lld failed reads counted, expected 1:\n%s", what, failed, r.err);
    EXPECT(sh_count(r.err, "NVMe tier degraded") == 1, "%s: expected one line saying the tier "
           "is degraded:\n%s", what, r.err);
    sh_same_transcript(what, &plain, &r);
}

static void remove_dir(void)
{
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "lost") == 0) {
        if (getenv("ELIXIR_NVME_PATH"))
            snprintf(dir, sizeof(dir), "%s", getenv("ELIXIR_NVME_PATH"));
        lost();
        return 0;
    }
    sh_scenario_child(argc, argv, steps);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    atexit(remove_dir);
    char path[64];
    snprintf(path, sizeof(path), "ELIXIR_NVME_PATH=%s", dir);

    faulty("ELIXIR_NVME_FAULT=read:2:eio", NULL, path);
    faulty("ELIXIR_NVME_FAULT=read:3:short", NULL, path);
    faulty("ELIXIR_NVME_FAULT=read:2:corrupt", NULL, path);

    const char *env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_HOST_MEMORY=8M",
                          "ELIXIR_NVME_MEMORY=64M", "ELIXIR_NVME_VERIFY=1", "ELIXIR_STATS=1",
                          path, NULL };
    sh_run_t r = sh_run_ok("lost", env);
    printf("%s", r.out);
    EXPECT(strstr(r.err, "cannot be read back from NVMe slot") &&
           strstr(r.err, "of the allocation at 0x"),
           "the log does not name the allocation whose chunk was lost:\n%s", r.err);
    EXPECT(sh_count(r.err, "NVMe tier degraded") == 1, "expected one line saying the tier is "
           "degraded:\n%s", r.err);
    sh_run_free(&r);
    printf("a chunk whose only copy on NVMe is unreadable: the operation reaching it is "
           "refused, named in the log\n");
    return 0;
}
