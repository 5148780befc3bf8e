/* SPDX-License-Identifier: MIT */
/*
 * nvme_cleanup.h - the scenario of the cleanup tests: a child process opens an area in a
 * directory (an unnamed O_TMPFILE file, then a created-and-unlinked one), writes to it with
 * both engines' I/O in flight, and ends the way the test says (a normal exit, exit() from
 * another thread, a fatal signal, SIGKILL from the parent).  Afterwards the directory holds
 * nothing and, on a tmpfs of the test's own (when mounting is permitted), the space comes
 * back; the kernel gives an io_uring's files back from a worker after the process is gone,
 * so the space is polled for up to 10 seconds.  The directory's ledger (no data) holds the
 * child's record, which the next reader finds dead and clears, removing the ledger.
 */
#ifndef NVME_CLEANUP_H
#define NVME_CLEANUP_H

#include <signal.h>
#include <sys/resource.h>
#include <time.h>

#include "nvme_test.h"

typedef void (*nt_death_t)(nvme_area_t *a, int ready_fd);

/* The child: open, keep writes in flight, tell the parent, then die(). */
static inline void nt_child(const char *dir, unsigned flags, nvme_engine_kind_t engine,
                            nt_death_t die, int ready_fd)
{
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    nvme_options_t o = nt_options(dir, 32 * NT_MIB, engine);
    o.test_flags = flags;
    nvme_area_t *a = NULL;
    if (nvme_open(&o, &a))
        _exit(10);
    uint8_t *buf = nvme_staging(a, NULL);
    for (uint32_t s = 0; s < 8; s++)
        if (nvme_write(a, s, buf, 2 * NT_MIB, s))
            _exit(11);
    nvme_submit(a);
    die(a, ready_fd);
    _exit(12);
}

static inline void nt_wait_space(const char *dir, uint64_t before)
{
    for (int i = 0; i < 100 && nt_avail(dir) + 4 * NT_MIB < before; i++)
        nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
    NT_CHECK(nt_avail(dir) + 4 * NT_MIB >= before, "space not given back: %llu free before, %llu "
             "after", (unsigned long long)before, (unsigned long long)nt_avail(dir));
}

/* One case: fork the child, wait for it to end as expected, check the directory. */
static inline void nt_cleanup_case(const char *dir, int space, unsigned flags,
                                   nvme_engine_kind_t engine, nt_death_t die, int want_status,
                                   int kill_it)
{
    uint64_t before = nt_avail(dir);
    int p[2];
    NT_CHECK(pipe(p) == 0, "pipe");
    fflush(NULL);
    pid_t pid = fork();
    NT_CHECK(pid >= 0, "fork");
    if (pid == 0) {
        close(p[0]);
        nt_child(dir, flags, engine, die, p[1]);
    }
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) == 1 && kill_it)
        kill(pid, SIGKILL);
    close(p[0]);
    int status = nt_wait(pid);
    NT_CHECK(status == want_status, "%s%s: the child ended with %d, expected %d",
             nt_engine_name(engine), flags ? " (no O_TMPFILE)" : "", status, want_status);
    NT_EQ(nt_entries(dir), 0);
    if (space)
        nt_wait_space(dir, before);
    nt_ledger_gone(dir, 1);             /* the child's record, left as it died: reclaimed */
}

/* Every case of one way to die: both engines, with and without O_TMPFILE, in the test's
 * tmpfs (space checked) when it can mount one, and always in its scratch directory. */
static inline int nt_cleanup_main(nt_death_t die, int want_status, int kill_it)
{
    const char *dir = nt_mkdir();
    char sub[300];
    snprintf(sub, sizeof(sub), "%s/area", dir);
    NT_CHECK(mkdir(sub, 0700) == 0, "mkdir %s", sub);
    int mounted = geteuid() == 0;
    const char *mnt = NULL;
    if (mounted) {
        snprintf(nt_mnt, sizeof(nt_mnt), "%s", nt_path("mnt"));
        NT_CHECK(mkdir(nt_mnt, 0700) == 0, "mkdir %s", nt_mnt);
        mounted = mount("tmpfs", nt_mnt, "tmpfs", 0, "size=64m,mode=0700") == 0;
        mnt = mounted ? nt_mnt : NULL;
        if (!mounted)
            nt_mnt[0] = 0;
    }
    for (int e = 0; e < NT_NENGINES; e++)
        for (unsigned flags = 0; flags <= NVME_TEST_NO_TMPFILE; flags++) {
            nt_cleanup_case(sub, 0, flags, nt_engines[e], die, want_status, kill_it);
            if (mnt)
                nt_cleanup_case(mnt, 1, flags, nt_engines[e], die, want_status, kill_it);
        }
    printf("nothing left behind%s\n", mnt ? "; space given back" : " (space not checked: no "
                                                                    "tmpfs could be mounted)");
    return 0;
}

#endif
