/* SPDX-License-Identifier: MIT */
/*
 * shim_fork.c - fork after the shim has started: the child inherits no broken state.
 *
 * The scenario starts CUDA and the shim, forks a child that calls hooked entry points and
 * exits normally, then forks twenty more while another thread keeps calling the shim (so a
 * fork may land while that thread is inside a wrapper), and finally goes on using CUDA in the
 * parent.  It prints every result; the test runs it without and with libelixir.so and the
 * transcripts must be the same (a child's CUDA calls answer as the driver answers in a forked
 * child).  With the shim, every process prints its own statistics at exit, the first child's
 * call counters start from zero, and its trace lines go to its own log file (%p).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <dirent.h>
#include <string.h>

#include "shim_test.h"
#include "simtest.h"

#define STRESS 20

static int in_child;

/* LeakSanitizer's documented hook (its name is the sanitizer's): a forked child's copy of the
 * simulator's state is not a leak, so no leak check there. */
int __lsan_is_turned_off(void);
__attribute__((visibility("default"), used)) int __lsan_is_turned_off(void)
{
    return in_child;
}

static CUcontext ctx;
static atomic_int stop;

/* The first child: hooked calls, then a normal exit. */
static void first_child(void)
{
    CUdeviceptr d = 0;
    size_t free_b, total_b;
    void *pfn = NULL;
    CUdriverProcAddressQueryResult st;
    long long before = sh_calls("cuMemAlloc_v2");

    printf("child cuMemAlloc_v2          %s\n", st_err(cuMemAlloc(&d, 4096)));
    printf("child cuMemGetInfo_v2        %s\n", st_err(cuMemGetInfo(&free_b, &total_b)));
    printf("child cuInit                 %s\n", st_err(cuInit(0)));
    printf("child cuGetProcAddress_v2    %s\n",
           st_err(cuGetProcAddress("cuMemAlloc", &pfn, 3020, 0, &st)));
    printf("child pointer found          %d\n", pfn != NULL);
    if (before != -2)
        EXPECT(before == 0 && sh_calls("cuMemAlloc_v2") == 1,
               "the child's counter was %lld before its call", before);
    fflush(stdout);
    in_child = 1;
    exit(0);
}

static void *hammer(void *arg)
{
    size_t free_b, total_b;

    (void)arg;
    if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return (void *)1;
    while (!atomic_load(&stop))
        if (cuMemGetInfo(&free_b, &total_b) != CUDA_SUCCESS)
            return (void *)1;
    return NULL;
}

/* Fork STRESS children while a thread calls the shim; each exits with its call's result. */
static void stress(void)
{
    pthread_t t;
    void *ret;
    int same = 0, first = -1;

    EXPECT(pthread_create(&t, NULL, hammer, NULL) == 0, "pthread_create");
    for (int i = 0; i < STRESS; i++) {
        size_t free_b, total_b;
        int st;
        pid_t pid = fork();

        if (pid == 0) {
            in_child = 1;
            exit((int)cuMemGetInfo(&free_b, &total_b) & 0x7f);
        }
        EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st), "stress child %d", i);
        first = first < 0 ? WEXITSTATUS(st) : first;
        same += WEXITSTATUS(st) == first;
    }
    atomic_store(&stop, 1);
    pthread_join(t, &ret);
    EXPECT(ret == NULL, "the calling thread failed");
    printf("stress children              %d of %d exited %s\n", same, STRESS,
           st_err((CUresult)first));
}

static void scenario(void)
{
    CUdeviceptr d;
    int st;
    pid_t pid;

    ctx = st_setup(0);
    printf("parent cuMemAlloc_v2         %s\n", st_err(cuMemAlloc(&d, 1 << 20)));
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        first_child();
    fprintf(stderr, "forked child %d\n", (int)pid);
    EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid, "waitpid");
    printf("child exit status            %d\n",
           WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    fflush(stdout);
    stress();
    printf("parent cuMemFree_v2          %s\n", st_err(cuMemFree(d)));
    printf("parent cuMemAlloc_v2         %s\n", st_err(cuMemAlloc(&d, 1 << 20)));
    printf("parent cuMemFree_v2          %s\n", st_err(cuMemFree(d)));
}

/* How many lines of the file at path contain needle (-1 when it cannot be read). */
static int lines_with(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int n = 0;

    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* Every process reported its statistics in its own log file (%p), and the first child's
 * trace of its allocation is in its file alone. */
static void check_logs(const char *dir, const char *err)
{
    const char *at = strstr(err, "forked child ");
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    int files = 0, reports = 0, n;

    EXPECT(at && d, "the scenario did not report its child:\n%s", err);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        files++;
        reports += lines_with(path, "statistics of process");
    }
    closedir(d);
    EXPECT(files == STRESS + 2 && reports == STRESS + 2, "%d log files, %d statistics reports; "
           "expected %d of each", files, reports, STRESS + 2);
    snprintf(path, sizeof(path), "%s/fork-%d.log", dir, atoi(at + strlen("forked child ")));
    n = lines_with(path, "TRACE ALLOC cuMemAlloc_v2");
    EXPECT(n == 1, "%s holds %d cuMemAlloc_v2 trace lines, expected the child's one", path, n);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];

    while (d && (e = readdir(d)) != NULL) {
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.')
            unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    char dir[] = "/tmp/shim-fork-XXXXXX", logfile[128];
    sh_run_t plain, shim;

    sh_scenario_child(argc, argv, scenario);
    EXPECT(mkdtemp(dir), "mkdtemp");
    snprintf(logfile, sizeof(logfile), "ELIXIR_LOG_FILE=%s/fork-%%p.log", dir);
    const char *env[] = { "ELIXIR_STATS=1", "ELIXIR_LOG=trace", "ELIXIR_LOG_SUBSYS=ALLOC",
                          logfile, NULL };
    plain = sh_run("scenario", 0, NULL);
    shim = sh_run("scenario", 1, env);
    EXPECT(plain.status == 0 && shim.status == 0, "exit status %d without, %d with the shim:\n%s",
           plain.status, shim.status, shim.err);
    EXPECT(strcmp(plain.out, shim.out) == 0, "transcripts differ:\nwithout the shim:\n%s\n"
           "with the shim:\n%s", plain.out, shim.out);
    check_logs(dir, shim.err);
    remove_dir(dir);
    printf("%s", shim.out);
    sh_run_free(&plain);
    sh_run_free(&shim);
    return 0;
}
