/* SPDX-License-Identifier: MIT */
/*
 * shim_test.h - helpers for the tests of libelixir.so (tests/shim_*.c, conc_shim_*.c).
 *
 * A shim test runs as an ordinary simulator test (linked with -lcuda against the simulated
 * libcuda.so.1) and re-executes itself with LD_PRELOAD set to $BUILD/libelixir.so, or runs
 * itself as a child with and without the shim and compares what the two printed.  When the
 * test program carries a sanitizer runtime, that runtime goes first in LD_PRELOAD, as the
 * sanitizers require.  The shim's test-only elixir_shim_calls(name) tells how many times a
 * wrapper was entered.
 */
#ifndef SHIM_TEST_H
#define SHIM_TEST_H

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simchild.h"

/* Absolute path of the shim under test ($BUILD/libelixir.so); exits 1 when missing. */
static inline const char *sh_lib(void)
{
    static char path[PATH_MAX];
    const char *build = getenv("BUILD");
    char rel[PATH_MAX];

    if (path[0])
        return path;
    snprintf(rel, sizeof(rel), "%s/libelixir.so", build && *build ? build : "build");
    if (!realpath(rel, path)) {
        fprintf(stderr, "cannot find %s: %s\n", rel, strerror(errno));
        exit(1);
    }
    return path;
}

/* The shared object that defines `sym` in this process, or NULL. */
static inline const char *sh_object_of(const char *sym)
{
    Dl_info info;
    void *p = dlsym(RTLD_DEFAULT, sym);

    return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : NULL;
}

/* "LD_PRELOAD=..." for a child: a loaded sanitizer runtime first, then the shim. */
static inline const char *sh_preload_entry(void)
{
    static char entry[2 * PATH_MAX + 16];
    const char *rt = sh_object_of("__asan_init");

    if (!rt)
        rt = sh_object_of("__tsan_init");
    if (rt && strstr(rt, ".so"))
        snprintf(entry, sizeof(entry), "LD_PRELOAD=%s:%s", rt, sh_lib());
    else
        snprintf(entry, sizeof(entry), "LD_PRELOAD=%s", sh_lib());
    return entry;
}

/* Unless this process runs with the shim preloaded, execute it again that way. */
static inline void sh_reexec_preloaded(char **argv)
{
    const char *env[] = { sh_preload_entry(), NULL };

    st_reexec(argv, env);
}

/* elixir_shim_calls(name) of the preloaded shim; -2 when the shim is not loaded. */
static inline long long sh_calls(const char *name)
{
    long long (*calls)(const char *);

    *(void **)&calls = dlsym(RTLD_DEFAULT, "elixir_shim_calls");
    return calls ? calls(name) : -2;
}

/* Is p inside libelixir.so? */
static inline int sh_in_shim(const void *p)
{
    Dl_info info;
    const char *name;

    if (!p || !dladdr(p, &info) || !info.dli_fname)
        return 0;
    name = strrchr(info.dli_fname, '/');
    return strcmp(name ? name + 1 : info.dli_fname, "libelixir.so") == 0;
}

/* The exported name at exactly p, or "?". */
static inline const char *sh_name(const void *p)
{
    Dl_info info;

    if (!p || !dladdr(p, &info) || !info.dli_sname || info.dli_saddr != p)
        return "?";
    return info.dli_sname;
}

/* Everything readable from fd (rewound first), NUL-terminated, malloc'd. */
static inline char *sh_slurp(int fd)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    ssize_t got;

    lseek(fd, 0, SEEK_SET);
    while (buf && (got = read(fd, buf + n, cap - n - 1)) > 0) {
        n += (size_t)got;
        if (n + 1 == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                free(buf);
            buf = nb;
            cap *= 2;
        }
    }
    if (!buf) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    buf[n] = '\0';
    return buf;
}

typedef struct sh_run {
    int status;         /* exit status, or 128 + signal */
    char *out, *err;    /* what the child wrote (malloc'd) */
} sh_run_t;

/*
 * Run this program again as `self mode`, with the shim preloaded or not, with the
 * "NAME=VALUE" entries of env (NULL-terminated, may be NULL) added, and capture its output.
 */
static inline sh_run_t sh_run(const char *mode, int preload, const char *const *env)
{
    char out_name[] = "/tmp/shim-test-out-XXXXXX", err_name[] = "/tmp/shim-test-err-XXXXXX";
    int out = mkstemp(out_name), err = mkstemp(err_name), st;
    const char *pre = sh_preload_entry();
    sh_run_t r;
    pid_t pid;

    if (out < 0 || err < 0) {
        fprintf(stderr, "mkstemp: %s\n", strerror(errno));
        exit(1);
    }
    unlink(out_name);
    unlink(err_name);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        if (preload)
            setenv("LD_PRELOAD", pre + strlen("LD_PRELOAD="), 1);
        else
            unsetenv("LD_PRELOAD");
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        dup2(out, 1);
        dup2(err, 2);
        execl("/proc/self/exe", "self", mode, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        fprintf(stderr, "cannot run a child: %s\n", strerror(errno));
        exit(1);
    }
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = sh_slurp(out);
    r.err = sh_slurp(err);
    close(out);
    close(err);
    return r;
}

static inline void sh_run_free(sh_run_t *r)
{
    free(r->out);
    free(r->err);
}

/* How many times needle occurs in hay. */
static inline int sh_count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Transcripts of one scenario without and with the shim must be equal; on the first
 * difference, print both from there and exit 1. */
static inline void sh_compare(const char *plain, const char *shim)
{
    int line = 1;

    for (; *plain && *plain == *shim; plain++, shim++)
        line += *plain == '\n';
    if (*plain != *shim) {
        fprintf(stderr, "transcripts differ at line %d:\n  without the shim: %.90s\n"
                "  with the shim:    %.90s\n", line, plain, shim);
        exit(1);
    }
}

/* ------------------------------------------------------------ residency tests */

/* The number that follows the first `key` in text (statistics such as "migrations to host "
 * in what ELIXIR_STATS=1 prints), or -1 when key is absent. */
static inline long long sh_stat(const char *text, const char *key)
{
    const char *at = strstr(text, key);

    return at ? strtoll(at + strlen(key), NULL, 10) : -1;
}

/* From ELIXIR_STATS output `err`: the chunks device `dev` pinned in all (*pins) and the fences
 * among them (*fences); -1 each when the device's line is missing. */
static inline void sh_pins(const char *err, int dev, int *pins, int *fences)
{
    char key[64];

    *pins = *fences = -1;
    snprintf(key, sizeof(key), "device %d: application", dev);
    const char *at = strstr(err, key), *t = at ? strstr(at, "(total ") : NULL;
    if (t)
        sscanf(t, "(total %d, fences that pinned %d)", pins, fences);
}

/* From ELIXIR_STATS output `err`: device `dev`'s migrations to host, or -1 when its line is
 * missing. */
static inline long long sh_migrations_out(const char *err, int dev)
{
    char key[64];

    snprintf(key, sizeof(key), "device %d: migrations to host ", dev);
    return sh_stat(err, key);
}

/* The number after `key` in text (its first occurrence), or -1. */
static inline double sh_after(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    double v;
    return p && sscanf(p + strlen(key), "%lf", &v) == 1 ? v : -1;
}

/* got must be want within the fraction tol, or the test fails, showing err (a log). */
static inline void sh_near(double got, double want, double tol, const char *what,
                           const char *err)
{
    if (got < want * (1 - tol) || got > want * (1 + tol)) {
        fprintf(stderr, "%s\n%s: expected %.3f (within %.0f%%), got %.3f\n", err, what, want,
                tol * 100, got);
        exit(1);
    }
}

/* sh_run(mode, 1, env), which must exit 0; otherwise print its output and exit 1. */
static inline sh_run_t sh_run_ok(const char *mode, const char *const *env)
{
    sh_run_t r = sh_run(mode, 1, env);

    if (r.status != 0) {
        fprintf(stderr, "the %s scenario under the shim exited %d\nstdout:\n%s\nstderr:\n%s\n",
                mode, r.status, r.out, r.err);
        exit(1);
    }
    return r;
}

/* The child's side of a test that runs itself as `self scenario` (sh_run): when argv[1] is
 * "scenario", runs scenario() and exits 0; otherwise returns. */
static inline void sh_scenario_child(int argc, char **argv, void (*scenario)(void))
{
    if (argc > 1 && strcmp(argv[1], "scenario") == 0) {
        scenario();
        exit(0);
    }
}

/* A scratch directory for an NVMe swap area, in $ELIXIR_NVME_TEST_DIR (default /tmp: a file
 * system with O_DIRECT), made at the first sh_nvme_path_env and removed at exit (the area is
 * an unnamed file: nothing is left in it). */
static inline char *sh_nvme_dir(void)
{
    static char dir[PATH_MAX];
    if (!dir[0]) {
        const char *base = getenv("ELIXIR_NVME_TEST_DIR");
        snprintf(dir, sizeof(dir), "%s/elixir-nvme-XXXXXX", base && *base ? base : "/tmp");
    }
    return dir;
}

static inline void sh_nvme_dir_remove(void)
{
    rmdir(sh_nvme_dir());
}

/* "ELIXIR_NVME_PATH=DIR" for that directory; exits 1 when it cannot be made. */
static inline const char *sh_nvme_path_env(void)
{
    static char env[PATH_MAX + 32];
    if (!env[0]) {
        if (!mkdtemp(sh_nvme_dir())) {
            fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
            exit(1);
        }
        atexit(sh_nvme_dir_remove);
        snprintf(env, sizeof(env), "ELIXIR_NVME_PATH=%s", sh_nvme_dir());
    }
    return env;
}

/* sh_run("scenario", 0, env): the scenario without the shim, which must exit 0; otherwise
 * print its stderr and exit 1. */
static inline sh_run_t sh_run_plain_ok(const char *const *env)
{
    sh_run_t r = sh_run("scenario", 0, env);

    if (r.status != 0) {
        fprintf(stderr, "the scenario without the shim exited %d:\n%s\n", r.status, r.err);
        exit(1);
    }
    return r;
}

/* The end of run `what` of a transcript test: the scenario's transcript under the shim equals
 * the one without it (sh_compare), said with its length, and both runs are freed. */
static inline void sh_same_transcript(const char *what, sh_run_t *plain, sh_run_t *shim)
{
    sh_compare(plain->out, shim->out);
    printf("%s: %d lines, the same with and without the shim\n", what,
           sh_count(shim->out, "\n"));
    sh_run_free(plain);
    sh_run_free(shim);
}

/* The two runs of a transcript test on several devices (`devices`: "ELIXIR_SIM_DEVICES=n"),
 * the race checker failing either on any race: the scenario without the shim into *plain, and
 * under it into *shim, with GPU budget `budget` ("ELIXIR_GPU_MEMORY=...") and statistics on;
 * host_vmm is given to both. */
static inline void sh_run_devices(const char *devices, const char *host_vmm, const char *budget,
                                  sh_run_t *plain, sh_run_t *shim)
{
    const char *plain_env[] = { devices, "ELIXIR_SIM_RACECHECK=fail", host_vmm, NULL };
    const char *env[] = { devices, "ELIXIR_SIM_RACECHECK=fail", budget, "ELIXIR_STATS=1",
                          host_vmm, NULL };

    *plain = sh_run_plain_ok(plain_env);
    *shim = sh_run_ok("scenario", env);
}

/* sh_run_devices on two devices. */
static inline void sh_run_two_devices(const char *host_vmm, const char *budget, sh_run_t *plain,
                                      sh_run_t *shim)
{
    sh_run_devices("ELIXIR_SIM_DEVICES=2", host_vmm, budget, plain, shim);
}

/* main() of a transcript test: the scenario when run as the test's child, else `run` with
 * evicted chunks mapped (host VMM) and unmapped (ELIXIR_SIM_HOST_VMM=0). */
static inline int sh_main_mapped_unmapped(int argc, char **argv, void (*scenario)(void),
                                          void (*run)(const char *what, const char *host_vmm))
{
    sh_scenario_child(argc, argv, scenario);
    run("mapped", "ELIXIR_SIM_HOST_VMM=1");
    run("unmapped", "ELIXIR_SIM_HOST_VMM=0");
    return 0;
}

/* sh_run_ok("scenario", env), with what it printed shown, followed by its migrations to host
 * and to GPU (from its statistics: env sets ELIXIR_STATS=1). */
static inline sh_run_t sh_run_migrations(const char *const *env)
{
    sh_run_t r = sh_run_ok("scenario", env);

    printf("%smigrations to host %lld, to GPU %lld\n", r.out,
           sh_stat(r.err, "migrations to host "), sh_stat(r.err, "to GPU "));
    return r;
}

/* The end of a paged transcript test's run `what`: the scenario without the shim, and under
 * it with a 4 MiB GPU budget and statistics on (and `extra`, one more setting, or NULL),
 * host_vmm given to both, the race checker failing either on any race.  The shim's run must
 * have evicted something, have said `must_say` in its log (unless NULL) and printed what the
 * plain run printed; both runs are freed. */
static inline void sh_paged_same(const char *what, const char *host_vmm, const char *extra,
                                 const char *must_say)
{
    const char *plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", host_vmm, NULL };
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                          "ELIXIR_STATS=1", host_vmm, extra, NULL };
    sh_run_t plain = sh_run_plain_ok(plain_env), shim = sh_run_migrations(env);

    if (sh_stat(shim.err, "migrations to host ") <= 0) {
        fprintf(stderr, "%s: nothing was evicted:\n%s\n", what, shim.err);
        exit(1);
    }
    if (must_say && !strstr(shim.err, must_say)) {
        fprintf(stderr, "%s: the log does not say '%s':\n%s\n", what, must_say, shim.err);
        exit(1);
    }
    sh_same_transcript(what, &plain, &shim);
}

/*
 * Kernels of the residency tests, for programs that define SH_RES_KERNELS before including
 * this header (once per program: the simulator finds them in the executable).  Each declares
 * exactly what it touches, so that kernels using neighbouring bytes of one chunk are not
 * taken for a race.  sh_pattern(seed, i) is the value sh_fill writes into word i.  The
 * helpers after them fill and check buffers through these kernels, and tell where the driver
 * has a chunk's memory (sh_where) and how much cuMemGetInfo calls free.
 */
#ifdef SH_RES_KERNELS
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "simtest.h"

#define SH_MIB (1ull << 20)

static const char sh_res_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry sh_fill(.param .u64 p, .param .u64 n, .param .u32 seed)\n{\n ret;\n}\n"
    ".visible .entry sh_verify(.param .u64 p, .param .u64 n, .param .u64 seed,"
    " .param .u64 bad)\n{\n ret;\n}\n"
    ".visible .entry sh_add(.param .u64 p, .param .u64 n, .param .u32 v)\n{\n ret;\n}\n"
    ".visible .entry sh_slow_add(.param .u64 p, .param .u64 n, .param .u64 ms)\n{\n ret;\n}\n"
    ".visible .entry sh_peek(.param .u64 p)\n{\n ret;\n}\n"
    ".visible .entry sh_add3(.param .u64 p, .param .u64 q, .param .u64 r, .param .u64 n)\n"
    "{\n ret;\n}\n";

static inline uint32_t sh_pattern(uint32_t seed, uint64_t i)
{
    return (uint32_t)(i * 2654435761u) ^ (seed * 0x9e3779b9u + 1u);
}

/* sh_fill(p, n, seed): word i of p becomes sh_pattern(seed, i), for i < n. */
SIM_KERNEL void sh_fill(const sim_launch_t *l, void **params)
{
    uint32_t *p = *(uint32_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    uint32_t seed = *(uint32_t *)params[2];

    sim_kernel_access(p, n * 4, SIM_ACCESS_WRITE);
    for (uint64_t i = 0; i < n; i++)
        p[i] = sh_pattern(seed, i);
}

/* sh_verify(p, n, seed, bad): *bad (a 32-bit word) becomes the number of words of p that
 * differ from sh_pattern(seed, i).  Its parameters are all 8-byte words (the seed's upper
 * half unused), so that the shim takes its launches by its fast path while sh_fill's and
 * sh_add's 4-byte parameter sends theirs through the general one: the tests see both. */
SIM_KERNEL void sh_verify(const sim_launch_t *l, void **params)
{
    const uint32_t *p = *(const uint32_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    uint32_t seed = (uint32_t)*(uint64_t *)params[2], wrong = 0;
    uint32_t *bad = *(uint32_t **)params[3];

    sim_kernel_access(p, n * 4, SIM_ACCESS_READ);
    sim_kernel_access(bad, 4, SIM_ACCESS_WRITE);
    for (uint64_t i = 0; i < n; i++)
        wrong += p[i] != sh_pattern(seed, i);
    *bad = wrong;
}

/* sh_add(p, n, v): adds v to each of the n words at p. */
SIM_KERNEL void sh_add(const sim_launch_t *l, void **params)
{
    uint32_t *p = *(uint32_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    uint32_t v = *(uint32_t *)params[2];

    sim_kernel_access(p, n * 4, SIM_ACCESS_READWRITE);
    for (uint64_t i = 0; i < n; i++)
        p[i] += v;
}

/* sh_add3(p, q, r, n): adds 1 to each of the n words at p, at q and at r (one launch reaching
 * three allocations). */
SIM_KERNEL void sh_add3(const sim_launch_t *l, void **params)
{
    uint64_t n = *(uint64_t *)params[3];

    for (int b = 0; b < 3; b++) {
        uint32_t *p = *(uint32_t **)params[b];
        sim_kernel_access(p, n * 4, SIM_ACCESS_READWRITE);
        for (uint64_t i = 0; i < n; i++)
            p[i] += 1;
    }
}

/* Milliseconds of CLOCK_MONOTONIC, and a busy wait of ms of them (slow host kernels). */
static inline double sh_now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static inline void sh_spin_ms(double ms)
{
    for (double t0 = sh_now_ms(); sh_now_ms() - t0 < ms;)
        ;
}

/* A second thread's start in the concurrency tests: once *go is set (the main thread has
 * begun the call that waits), after_ms more for that call to reach its wait, then ctx made
 * current; returns what cuCtxSetCurrent did. */
static inline CUresult sh_second_thread_start(const _Atomic int *go, double after_ms,
                                              CUcontext ctx)
{
    while (!*go)
        ;
    sh_spin_ms(after_ms);
    return cuCtxSetCurrent(ctx);
}

/* sh_peek(p): reads the word at p (a launch that needs p's chunk and changes nothing). */
SIM_KERNEL void sh_peek(const sim_launch_t *l, void **params)
{
    volatile uint32_t *p = *(uint32_t **)params[0];
    (void)l;

    sim_kernel_access((const void *)p, 4, SIM_ACCESS_READ);
    (void)*p;
}

/* Set by a test to end sh_slow_add's spin early (a kernel that waits for something the host
 * does, at most its ms). */
static _Atomic int sh_slow_release;

/* Set by sh_slow_add once it has added: a thread that finds it unset after a call knows the
 * call did not wait for the kernel (whose spin the test ends only after that call). */
static _Atomic int sh_slow_done;

/* sh_slow_add(p, n, ms): spins ms milliseconds, or until sh_slow_release is set (a kernel
 * that keeps its stream busy), then adds 1 to each of the n words at p and sets
 * sh_slow_done. */
SIM_KERNEL void sh_slow_add(const sim_launch_t *l, void **params)
{
    uint32_t *p = *(uint32_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    uint64_t ms = *(uint64_t *)params[2];
    (void)l;

    sim_kernel_access(p, n * 4, SIM_ACCESS_READWRITE);
    for (uint64_t i = 0; i < ms && !atomic_load(&sh_slow_release); i++)
        sh_spin_ms(1);
    for (uint64_t i = 0; i < n; i++)
        p[i] += 1;
    atomic_store(&sh_slow_done, 1);
}

/* The usual start of a residency scenario: device 0's context, sh_fill and sh_verify in *fill
 * and *verify, and in *bad a word for sh_verify's count (its allocation sets the shim up). */
static inline void sh_res_start(CUfunction *fill, CUfunction *verify, CUdeviceptr *bad)
{
    st_setup(0);
    *fill = st_function(sh_res_ptx, "sh_fill");
    *verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuMemAlloc(bad, 4));
}

/* One block of one thread: the host kernels loop over the data themselves. */
static inline CUresult sh_launch(CUfunction f, CUstream s, void **args)
{
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static inline CUresult sh_fill_async(CUfunction fill, CUdeviceptr p, uint64_t words,
                                     uint32_t seed, CUstream s)
{
    void *args[] = { &p, &words, &seed };

    return sh_launch(fill, s, args);
}

/* sh_slow_add (function slow, loaded from sh_res_ptx) over the n words at p, on stream s. */
static inline CUresult sh_slow_add_async(CUfunction slow, CUdeviceptr p, uint64_t n, uint64_t ms,
                                         CUstream s)
{
    void *args[] = { &p, &n, &ms };

    return sh_launch(slow, s, args);
}

/* sh_add (function add, loaded from sh_res_ptx): v added to each of the n words at p, on s. */
static inline CUresult sh_add_async(CUfunction add, CUdeviceptr p, uint64_t n, uint32_t v,
                                    CUstream s)
{
    void *args[] = { &p, &n, &v };

    return sh_launch(add, s, args);
}

/* One side of a graph sh_capture_fork makes: v added to the words at p with `add` on stream
 * s of context ctx. */
typedef struct sh_fork_side {
    CUcontext ctx;
    CUstream s;
    CUfunction add;
    CUdeviceptr p;
    uint32_t v;
} sh_fork_side_t;

/* A graph of two devices, instantiated: captured on a's stream (global mode), it adds a.v to
 * a's words, forks to b's stream (another device's) through an event for b's addition, and
 * joins back through an event of b's context; n words each.  a's context is current after. */
static inline CUgraphExec sh_capture_fork(sh_fork_side_t a, sh_fork_side_t b, uint64_t n)
{
    CUevent fork, join;
    CUgraph g;
    CUgraphExec ge;

    CHECK_CU(cuCtxSetCurrent(b.ctx));
    CHECK_CU(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuCtxSetCurrent(a.ctx));
    CHECK_CU(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuStreamBeginCapture(a.s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(sh_add_async(a.add, a.p, n, a.v, a.s));
    CHECK_CU(cuEventRecord(fork, a.s));
    CHECK_CU(cuStreamWaitEvent(b.s, fork, 0));
    CHECK_CU(cuCtxSetCurrent(b.ctx));
    CHECK_CU(sh_add_async(b.add, b.p, n, b.v, b.s));
    CHECK_CU(cuEventRecord(join, b.s));
    CHECK_CU(cuCtxSetCurrent(a.ctx));
    CHECK_CU(cuStreamWaitEvent(a.s, join, 0));
    CHECK_CU(cuStreamEndCapture(a.s, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cuEventDestroy(fork));
    CHECK_CU(cuCtxSetCurrent(b.ctx));
    CHECK_CU(cuEventDestroy(join));
    CHECK_CU(cuCtxSetCurrent(a.ctx));
    return ge;
}

/* The first of n host words that differs from sh_pattern(seed, i) + plus: exit 1 naming
 * `what`. */
static inline void sh_expect_pattern_plus(const uint32_t *host, uint64_t n, uint32_t seed,
                                          uint32_t plus, const char *what)
{
    for (uint64_t i = 0; i < n; i++)
        EXPECT(host[i] == sh_pattern(seed, i) + plus, "%s: word %llu is 0x%08x, expected 0x%08x",
               what, (unsigned long long)i, host[i], sh_pattern(seed, i) + plus);
}

static inline void sh_expect_pattern(const uint32_t *host, uint64_t n, uint32_t seed,
                                     const char *what)
{
    sh_expect_pattern_plus(host, n, seed, 0, what);
}

/* The `bytes` bytes at p, copied to the host, hold sh_pattern(seed, .) + plus: said in the
 * transcript. */
static inline void sh_expect_pattern_at(const char *what, CUdeviceptr p, size_t bytes,
                                        uint32_t seed, uint32_t plus)
{
    uint32_t *host = malloc(bytes);

    EXPECT(host, "out of memory");
    CHECK_CU(cuMemcpyDtoH(host, p, bytes));
    sh_expect_pattern_plus(host, bytes / 4, seed, plus, what);
    printf("%s holds its pattern + %u\n", what, plus);
    free(host);
}

/* In the current context: n buffers of `bytes` (the first half from cuMemAlloc, the rest from
 * cuMemAllocAsync on a stream of its own) filled, then filled again one by one with the
 * default stream, so that under a small budget each comes back and evicts others; each
 * checked, then freed (n <= 64). */
static inline void sh_page_round(const char *what, int n, size_t bytes)
{
    CUstream s;
    CUdeviceptr b[64];
    uint64_t words = bytes / 4;
    uint32_t *host = malloc(bytes);

    EXPECT(host && n <= 64, "sh_page_round: %d buffers of %zu bytes", n, bytes);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < n; i++) {
        CHECK_CU(i < n / 2 ? cuMemAlloc(&b[i], bytes) : cuMemAllocAsync(&b[i], bytes, s));
        CHECK_CU(sh_fill_async(fill, b[i], words, 10 + (uint32_t)i, s));
    }
    CHECK_CU(cuStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        CHECK_CU(sh_fill_async(fill, b[i], words, 20 + (uint32_t)i, NULL));
    for (int i = 0; i < n; i++) {
        CHECK_CU(cuMemcpyDtoH(host, b[i], bytes));
        sh_expect_pattern(host, words, 20 + (uint32_t)i, what);
    }
    for (int i = 0; i < n; i++)
        CHECK_CU(i < n / 2 ? cuMemFree(b[i]) : cuMemFreeAsync(b[i], s));
    CHECK_CU(cuStreamDestroy(s));
    free(host);
}

/* n buffers of `bytes` bytes allocated into bufs and filled by kernels on s: bufs[i] holds
 * sh_pattern(seed0 + i, .). */
static inline void sh_alloc_filled(CUfunction fill, CUdeviceptr *bufs, uint32_t n, size_t bytes,
                                   uint32_t seed0, CUstream s)
{
    for (uint32_t i = 0; i < n; i++) {
        CHECK_CU(cuMemAlloc(&bufs[i], bytes));
        CHECK_CU(sh_fill_async(fill, bufs[i], bytes / 4, seed0 + i, s));
    }
}

/* Enqueues sh_verify on s: the number of the `words` words at p that differ from
 * sh_pattern(seed, .) goes into the 32-bit word at out. */
static inline CUresult sh_verify_async(CUfunction verify, CUdeviceptr p, uint64_t words,
                                       uint32_t seed, CUdeviceptr out, CUstream s)
{
    uint64_t seed_word = seed;
    void *args[] = { &p, &words, &seed_word, &out };

    return sh_launch(verify, s, args);
}

/* A kernel checks the `words` words at p against sh_pattern(seed, .), counting into the word
 * at bad: exit 1 naming `what` when any differs. */
static inline void sh_expect_verified(CUfunction verify, CUdeviceptr p, uint64_t words,
                                      uint32_t seed, CUdeviceptr bad, const char *what)
{
    uint32_t wrong = 1;

    CHECK_CU(sh_verify_async(verify, p, words, seed, bad, NULL));
    CHECK_CU(cuMemcpyDtoH(&wrong, bad, 4));
    EXPECT(wrong == 0, "%s: %u words wrong", what, wrong);
}

/* The n buffers of sh_alloc_filled(.., seed, ..) checked by kernel (one line printed each),
 * then freed. */
static inline void sh_expect_filled_free(CUfunction verify, CUdeviceptr *buf, int n,
                                         size_t bytes, uint32_t seed, CUdeviceptr bad)
{
    for (int i = 0; i < n; i++) {
        sh_expect_verified(verify, buf[i], bytes / 4, seed + (uint32_t)i, bad, "buffer");
        printf("buffer %d holds its pattern\n", i);
    }
    for (int i = 0; i < n; i++)
        CHECK_CU(cuMemFree(buf[i]));
}

/* Where the memory at p lives, as the driver maps it: 'G' device memory, 'H' host memory
 * mapped there, 'U' nothing (cuMemRetainAllocationHandle finds no allocation at p). */
static inline char sh_where(CUdeviceptr p)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;

    if (cuMemRetainAllocationHandle(&h, (void *)(uintptr_t)p) != CUDA_SUCCESS)
        return 'U';
    CHECK_CU(cuMemGetAllocationPropertiesFromHandle(&prop, h));
    CHECK_CU(cuMemRelease(h));
    return prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? 'G' : 'H';
}

/* Under the shim only: whether the memory at p is in GPU memory (sh_where) is `gpu`. */
static inline void sh_expect_where(CUdeviceptr p, int gpu, const char *what)
{
    const char *pre = getenv("LD_PRELOAD");

    if (!pre || !*pre)
        return;
    char w = sh_where(p);
    EXPECT((w == 'G') == gpu, "%s: its memory is %s (%c), expected %s", what,
           w == 'G' ? "in GPU memory" : "not in GPU memory", w,
           gpu ? "in GPU memory" : "elsewhere");
}

/* Under the shim, device `dev` has no access to p (in another device's arena) once the
 * operations that reached it are done; nothing is checked while nothing is mapped at p (an
 * evicted chunk unmapped). */
static inline void sh_expect_no_access(CUdeviceptr p, int dev, const char *what)
{
    const char *pre = getenv("LD_PRELOAD");
    CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, dev };
    unsigned long long flags = 1;

    if (!pre || !*pre || sh_where(p) == 'U')
        return;
    CHECK_CU(cuMemGetAccess(&flags, &loc, p));
    EXPECT(flags == CU_MEM_ACCESS_FLAGS_PROT_NONE, "%s: device %d kept access %llu", what, dev,
           flags);
}

/* How many of the `chunk`-byte pieces of the n buffers of `bytes` bytes at bufs live in device
 * memory (sh_where, piece by piece). */
static inline int sh_chunks_on_device(const CUdeviceptr *bufs, int n, size_t bytes,
                                      size_t chunk)
{
    int on = 0;

    for (int i = 0; i < n; i++)
        for (CUdeviceptr p = bufs[i]; p < bufs[i] + bytes; p += chunk)
            on += sh_where(p) == 'G';
    return on;
}

/* Chunks of the arena in device memory among the n buffers' `chunk`-byte pieces and the one
 * holding `bad` (a small allocation of its own chunk). */
static inline int sh_arena_chunks_on_device(CUdeviceptr bad, const CUdeviceptr *bufs, int n,
                                            size_t bytes, size_t chunk)
{
    return (sh_where(bad) == 'G') + sh_chunks_on_device(bufs, n, bytes, chunk);
}

/* The free memory cuMemGetInfo reports now. */
static inline size_t sh_free_now(void)
{
    size_t free_b, total;

    CHECK_CU(cuMemGetInfo(&free_b, &total));
    return free_b;
}

/* The total cuMemGetInfo reports now: under the shim, every budget together. */
static inline size_t sh_capacity(void)
{
    size_t free_b, total;

    CHECK_CU(cuMemGetInfo(&free_b, &total));
    return total;
}
#endif /* SH_RES_KERNELS */

#endif /* SHIM_TEST_H */
