/* SPDX-License-Identifier: MIT */
/*
 * share.c - another process takes GPU memory while a job under libelixir.so runs, then gives
 * it back: the `share` check of tools/gpu/check.sh.
 *
 * Usage: LD_PRELOAD=libelixir.so ELIXIR_GPU_MEMORY=<BUDGET>M share BUDGET_MIB
 *
 * The job allocates twice its GPU budget in 16 buffers, so it pages from the start.  After its
 * first allocation (the budget is set then, within the free memory), another process takes all
 * of the device's free memory but half of the budget.  The job fills every buffer with its
 * own pattern and reads each back: the driver refuses chunks that the budget still allows, so
 * the shim must bring the budget down and page within what it holds, and no call may fail.
 * Then the other process exits; after a pause longer than the shim's 100 ms between looks,
 * the job frees half of the buffers, allocates and fills them again (new chunks, so memory is
 * short and the shim looks) and reads every buffer back: the budget must be back where it
 * was.  cuMemGetInfo's total (the budgets together, under the shim) is read at the three
 * points: it must drop while the memory is taken and come back.
 *
 * The other process: on a real driver, this program run again as `share hog LEAVE_MIB`
 * without the shim, holding its memory until its standard input closes; on the simulator,
 * sim_other_process_memory (so that the suite runs this program too).  Prints what it saw;
 * exits 1 on the first thing that is wrong.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#define MIB ((uint64_t)1 << 20)
#define NBUF 16

extern char **environ;

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "share: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

#define CK(call)                                                                            \
    do {                                                                                    \
        CUresult r_ = (call);                                                               \
        if (r_ != CUDA_SUCCESS)                                                             \
            die("%s failed: CUresult %d", #call, (int)r_);                                  \
    } while (0)

/* ------------------------------------------------------------ the other process */

typedef int (*sim_take_t)(int device, uint64_t bytes);

static pid_t hog_pid;
static int hog_stdin = -1;

/* `share hog LEAVE_MIB`: take all free memory but LEAVE_MIB, say so, hold it until stdin
 * closes. */
static int hog(const char *leave_mib)
{
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    size_t free_b, total;
    uint64_t leave = strtoull(leave_mib, NULL, 10) * MIB;
    char c;

    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuMemGetInfo(&free_b, &total));
    if (free_b <= leave)
        die("hog: only %zu MiB free", free_b / MIB);
    CK(cuMemAlloc(&p, free_b - leave));
    printf("%llu\n", (unsigned long long)((free_b - leave) / MIB));
    fflush(stdout);
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}

/* The environment without LD_PRELOAD: the other process runs on the plain driver. */
static char **plain_environ(void)
{
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 1, sizeof(*env));
    if (!env)
        die("no memory for the environment");
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
            env[k++] = environ[i];
    return env;
}

/* Another process takes all free device memory but `leave` bytes; returns MiB taken. */
static uint64_t others_take(uint64_t leave)
{
    sim_take_t sim_take = (sim_take_t)dlsym(RTLD_DEFAULT, "sim_other_process_memory");

    if (sim_take) {                     /* the simulator: the most it can take, less `leave` */
        uint64_t lo = 0, hi = 1ull << 20;   /* MiB */
        while (lo < hi) {
            uint64_t mid = (lo + hi + 1) / 2;
            if (sim_take(0, mid * MIB) == 0)
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo * MIB <= leave || sim_take(0, lo * MIB - leave) != 0)
            die("the simulated device has only %" PRIu64 " MiB free", lo);
        return lo - leave / MIB;
    }

    int in[2], out[2];
    char leave_mib[32], line[64];
    posix_spawn_file_actions_t fa;
    char *argv[] = { "share", "hog", leave_mib, NULL };

    snprintf(leave_mib, sizeof(leave_mib), "%llu", (unsigned long long)(leave / MIB));
    if (pipe(in) || pipe(out))
        die("pipe: %s", strerror(errno));
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    int e = posix_spawn(&hog_pid, "/proc/self/exe", &fa, NULL, argv, plain_environ());
    if (e)
        die("posix_spawn: %s", strerror(e));
    close(in[0]);
    close(out[1]);
    hog_stdin = in[1];
    FILE *f = fdopen(out[0], "r");
    if (!f || !fgets(line, sizeof(line), f))
        die("the other process took nothing (wait status %d)",
            waitpid(hog_pid, &e, 0) == hog_pid ? e : -1);
    fclose(f);
    return strtoull(line, NULL, 10);
}

/* The other process gives its memory back. */
static void others_leave(void)
{
    sim_take_t sim_take = (sim_take_t)dlsym(RTLD_DEFAULT, "sim_other_process_memory");
    int st;

    if (sim_take) {
        if (sim_take(0, 0) != 0)
            die("sim_other_process_memory(0, 0) failed");
        return;
    }
    close(hog_stdin);
    if (waitpid(hog_pid, &st, 0) != hog_pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("the other process ended with wait status %d", st);
}

/* ------------------------------------------------------------ the job */

static uint64_t capacity_mib(void)
{
    size_t free_b, total;
    CK(cuMemGetInfo(&free_b, &total));
    return total / MIB;
}

/* Buffer i's pattern in generation gen[i]. */
static uint32_t pattern(const unsigned *gen, unsigned i)
{
    return 0x5e000000u + gen[i] * 0x100u + i;
}

static void fill(const CUdeviceptr *buf, size_t bytes, const unsigned *gen, unsigned from)
{
    for (unsigned i = from; i < NBUF; i++)
        CK(cuMemsetD32(buf[i], pattern(gen, i), bytes / 4));
}

static void verify(const CUdeviceptr *buf, size_t bytes, const unsigned *gen, uint32_t *host)
{
    for (unsigned i = 0; i < NBUF; i++) {
        CK(cuMemcpyDtoH(host, buf[i], bytes));
        for (size_t w = 0; w < bytes / 4; w++)
            if (host[w] != pattern(gen, i))
                die("%s: word %zu is wrong", gen[i] ? "a buffer allocated after the other "
                    "process left" : "a buffer filled while it held memory", w);
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "hog") == 0)
        return hog(argv[2]);
    if (argc != 2 || strtoull(argv[1], NULL, 10) < 16) {
        fprintf(stderr, "usage: LD_PRELOAD=libelixir.so ELIXIR_GPU_MEMORY=<BUDGET>M "
                "%s BUDGET_MIB (at least 16)\n", argv[0]);
        return 2;
    }
    uint64_t budget = strtoull(argv[1], NULL, 10) * MIB;
    size_t bytes = budget / 8 / (2 * MIB) * (2 * MIB);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr buf[NBUF];
    uint64_t before, during, after, taken;
    unsigned gen[NBUF] = { 0 };
    uint32_t *host = malloc(bytes);

    if (!host)
        die("no %zu bytes of host memory", bytes);
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuMemAlloc(&buf[0], bytes));         /* the shim sets the budget up here */
    before = capacity_mib();
    taken = others_take(budget / 2);
    printf("another process took %" PRIu64 " MiB, leaving half of the %" PRIu64 " MiB budget\n",
           taken, budget / MIB);
    for (unsigned i = 1; i < NBUF; i++)
        CK(cuMemAlloc(&buf[i], bytes));
    fill(buf, bytes, gen, 0);
    verify(buf, bytes, gen, host);
    during = capacity_mib();
    printf("%d buffers of %zu MiB filled and read back while it held the memory\n", NBUF,
           (size_t)(bytes / MIB));
    others_leave();
    printf("the other process let go\n");
    usleep(150 * 1000);                     /* past the shim's next look */
    for (unsigned i = NBUF / 2; i < NBUF; i++) {   /* new chunks: memory is short again */
        CK(cuMemFree(buf[i]));
        CK(cuMemAlloc(&buf[i], bytes));
        gen[i] = 1;
    }
    fill(buf, bytes, gen, NBUF / 2);
    verify(buf, bytes, gen, host);
    after = capacity_mib();
    printf("cuMemGetInfo's total: %" PRIu64 " MiB, %" PRIu64 " MiB while the memory was taken, "
           "%" PRIu64 " MiB after\n", before, during, after);
    if (during >= before)
        die("cuMemGetInfo: the total did not drop (%" PRIu64 " MiB)", during);
    if (after != before)
        die("cuMemGetInfo: the total did not come back (%" PRIu64 " MiB)", after);
    for (unsigned i = 0; i < NBUF; i++)
        CK(cuMemFree(buf[i]));
    free(host);
    printf("every buffer kept its data; the budget came down and went back up\n");
    return 0;
}
