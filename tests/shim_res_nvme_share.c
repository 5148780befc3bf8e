/* SPDX-License-Identifier: MIT */
/*
 * shim_res_nvme_share.c - processes under libelixir.so that point ELIXIR_NVME_PATH at one
 * directory split it through its ledger (iouring/ledger.c), on a 64 MiB tmpfs of the test's
 * own (skipped, 77, where mounting is not permitted):
 *   1. a process holding a 40 MiB area is running; another asking for 32 MiB is refused with
 *      one error line naming the live area and its MiB, and stops (exit status 1: it does not
 *      run on without the tier it asked for);
 *   2. one with ELIXIR_NVME_MEMORY=auto and ELIXIR_NVME_SHARE=2 (the holder counts as one of
 *      the two) takes what is spare beside it, and the log says what the ledger held;
 *   3. once SIGKILL ended the holder, a process asking for 32 MiB gets it, and the log says
 *      it reclaimed the holder's record;
 *   4. with a launcher's LOCAL_WORLD_SIZE=4 (ELIXIR_NVME_SHARE auto) an auto area is a
 *      quarter of what is spare.
 * The directory is empty once all are gone, the ledger included.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include "shim_test.h"
#include "simtest.h"

static char dir[] = "/tmp/elixir-nvme-share-XXXXXX";
static int mounted;

static void cleanup(void)
{
    if (mounted)
        umount2(dir, MNT_DETACH);
    rmdir(dir);
}

/* The scenario: one allocation, so that the NVMe tier opens; "hold" then tells the parent
 * its pid on descriptor HOLD_FD and waits to be killed. */
static void scenario(void)
{
    CUdeviceptr p;
    st_setup(0);
    CHECK_CU(cuMemAlloc(&p, 4u << 20));
    CHECK_CU(cuMemFree(p));
}

static void hold(void)
{
    scenario();
    const char *fd = getenv("HOLD_FD");
    pid_t me = getpid();
    if (!fd || write(atoi(fd), &me, sizeof(me)) != sizeof(me))
        exit(2);
    for (;;)
        pause();
}

static uint64_t avail_mib(void)
{
    struct statvfs sv;
    return statvfs(dir, &sv) == 0 ? (uint64_t)sv.f_bavail * sv.f_frsize >> 20 : 0;
}

/* A run of the scenario with m1 and m2 on top of the tier's options, which must exit with
 * `status`; its output (free it). */
static sh_run_t run_status(const char *m1, const char *m2, int status)
{
    static char path[128];
    snprintf(path, sizeof(path), "ELIXIR_NVME_PATH=%s", dir);
    const char *env[] = { "ELIXIR_LOG=info", "ELIXIR_LOG_SUBSYS=RES", "ELIXIR_GPU_MEMORY=8M",
                          path, m1, m2, NULL };
    sh_run_t r = sh_run("scenario", 1, env);
    EXPECT(r.status == status, "the scenario with %s %s exited %d, expected %d:\n%s", m1, m2,
           r.status, status, r.err);
    return r;
}

static sh_run_t run(const char *m1, const char *m2)
{
    return run_status(m1, m2, 0);
}

/* The number after `key` in text, or -1. */
static long long after(const char *text, const char *key)
{
    const char *p = text ? strstr(text, key) : NULL;
    long long v;
    return p && sscanf(p + strlen(key), "%lld", &v) == 1 ? v : -1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "hold") == 0) {
        hold();
        return 0;
    }
    sh_scenario_child(argc, argv, scenario);
    EXPECT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    atexit(cleanup);
    if (mount("tmpfs", dir, "tmpfs", 0, "size=64m,mode=0700") < 0) {
        printf("skip: cannot mount a tmpfs: %s\n", strerror(errno));
        return 77;
    }
    mounted = 1;

    int p[2];
    char fdvar[32], path[128];
    EXPECT(pipe(p) == 0, "pipe");
    snprintf(fdvar, sizeof(fdvar), "HOLD_FD=%d", p[1]);
    snprintf(path, sizeof(path), "ELIXIR_NVME_PATH=%s", dir);
    fflush(NULL);
    pid_t runner = fork();
    if (runner == 0) {
        close(p[0]);
        const char *env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_NVME_MEMORY=40M", path, fdvar,
                              NULL };
        sh_run_t r = sh_run("hold", 1, env);
        _exit(r.status == 128 + SIGKILL ? 0 : 1);
    }
    close(p[1]);
    pid_t holder;
    EXPECT(read(p[0], &holder, sizeof(holder)) == sizeof(holder), "the holder's pid");

    sh_run_t r = run_status("ELIXIR_NVME_MEMORY=32M", "ELIXIR_NVME_SHARE=1", 1);
    const char *e = strstr(r.err, "no room for 32 MiB beside the areas other processes hold");
    EXPECT(e && after(e, "(") == 1 && after(e, "live, ") == 40 &&
           sh_count(r.err, "error: ") == 1 && strstr(e, "the program stops") &&
           !strstr(r.err, "NVMe tier: "),
           "1. one error naming the holder's 40 MiB, the program stopped:\n%s", r.err);
    printf("1. %.*s\n", (int)(strchr(e, '\n') - e), e);
    sh_run_free(&r);

    r = run("ELIXIR_NVME_MEMORY=auto", "ELIXIR_NVME_SHARE=2");
    const char *l = strstr(r.err, "the ledger of "), *t = strstr(r.err, "NVMe tier: ");
    long long spare = after(l, "of "), got = after(t, "NVMe tier: ");
    l = l ? strstr(l, "other live areas ") : NULL;
    EXPECT(l && after(l, "other live areas ") == 1 && after(l, "(") == 40 &&
           strstr(l, "a default size is 1/1 of ") && got > 0 && got <= 24 - 6,
           "2. the ledger said in the log, the area beside the holder's:\n%s", r.err);
    printf("2. an area of %lld MiB beside the holder's 40\n", got);
    sh_run_free(&r);
    (void)spare;

    kill(holder, SIGKILL);
    int st;
    EXPECT(waitpid(runner, &st, 0) == runner && WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "the holder did not end by SIGKILL");
    for (int i = 0; i < 100 && avail_mib() < 60; i++)
        usleep(100000);                 /* (io_uring gives its files back from a worker) */
    r = run("ELIXIR_NVME_MEMORY=32M", "ELIXIR_NVME_SHARE=1");
    l = strstr(r.err, "records of areas gone reclaimed ");
    EXPECT(strstr(r.err, "NVMe tier: 32 MiB") && l &&
           after(l, "records of areas gone reclaimed ") == 1,
           "3. the killed holder's record reclaimed, 32 MiB given:\n%s", r.err);
    printf("3. 32 MiB once the holder was killed, its record reclaimed\n");
    sh_run_free(&r);

    r = run("ELIXIR_NVME_MEMORY=auto", "LOCAL_WORLD_SIZE=4");
    l = strstr(r.err, "a default size is 1/4 of ");
    spare = after(l, "a default size is 1/4 of ");
    got = after(strstr(r.err, "NVMe tier: "), "NVMe tier: ");
    EXPECT(l && spare > 0 && got <= spare / 4 && got >= spare / 4 - 2,
           "4. a quarter of what is spare:\n%s", r.err);
    printf("4. LOCAL_WORLD_SIZE=4: %lld MiB of %lld spare\n", got, spare);
    sh_run_free(&r);

    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    while (d && (de = readdir(d)))
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    if (d)
        closedir(d);
    EXPECT(n == 0, "%d entries left in %s", n, dir);
    return 0;
}
