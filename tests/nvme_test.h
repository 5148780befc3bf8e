/* SPDX-License-Identifier: MIT */
/*
 * nvme_test.h - what the tests of the NVMe tier (tests/unit_nvme_*.c) share: checks that
 * print what they expected and what they got, a scratch directory per test (under
 * $ELIXIR_NVME_TEST_DIR, default /tmp) removed at exit, patterned buffers, opening an area,
 * and small real file systems (tmpfs, or ext4 on a loop device) for faults that need one;
 * those need root and skip (77) with the reason when mounting is not permitted.
 */
#ifndef NVME_TEST_H
#define NVME_TEST_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nvme.h"

#define NT_FAIL(...)                                                                          \
    do {                                                                                      \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                      \
        fprintf(stderr, __VA_ARGS__);                                                         \
        fputc('\n', stderr);                                                                  \
        exit(1);                                                                              \
    } while (0)
#define NT_CHECK(cond, ...)                                                                   \
    do {                                                                                      \
        if (!(cond))                                                                          \
            NT_FAIL(__VA_ARGS__);                                                             \
    } while (0)
#define NT_EQ(got, want)                                                                      \
    NT_CHECK((long long)(got) == (long long)(want), "%s: expected %lld, got %lld", #got,      \
             (long long)(want), (long long)(got))
#define NT_SKIP(...)                                                                          \
    do {                                                                                      \
        printf("skip: ");                                                                     \
        printf(__VA_ARGS__);                                                                  \
        putchar('\n');                                                                        \
        exit(77);                                                                             \
    } while (0)

#define NT_MIB (1u << 20)

static const nvme_engine_kind_t nt_engines[] = { NVME_ENGINE_URING, NVME_ENGINE_PSYNC };
#define NT_NENGINES 2

static char nt_dir[256];
static char nt_mnt[256];
static char nt_loop[64];
static pid_t nt_owner;

/* Undo what the helpers set up (only in the process that set it up). */
static inline void nt_cleanup(void)
{
    char cmd[600];
    if (getpid() != nt_owner)
        return;
    if (nt_mnt[0])
        umount2(nt_mnt, MNT_DETACH);
    if (nt_loop[0]) {
        snprintf(cmd, sizeof(cmd), "blockdev --setrw %s; losetup -d %s 2>/dev/null", nt_loop,
                 nt_loop);
        if (system(cmd)) { /* gone already */ }
    }
    if (nt_dir[0]) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", nt_dir);
        if (system(cmd)) { /* nothing to remove */ }
    }
}

/* A fresh scratch directory, removed at exit. */
static inline const char *nt_mkdir(void)
{
    const char *base = getenv("ELIXIR_NVME_TEST_DIR");
    snprintf(nt_dir, sizeof(nt_dir), "%s/elixir-nvme-XXXXXX", base ? base : "/tmp");
    NT_CHECK(mkdtemp(nt_dir), "mkdtemp %s: %s", nt_dir, strerror(errno));
    nt_owner = getpid();
    atexit(nt_cleanup);
    return nt_dir;
}

/* A path inside the scratch directory. */
static inline const char *nt_path(const char *name)
{
    static char p[2][320];
    static int i;
    i ^= 1;
    snprintf(p[i], sizeof(p[i]), "%s/%s", nt_dir, name);
    return p[i];
}

/* The number of entries in dir but . and .., lost+found and the directory's ledger (which
 * holds no data; nt_ledger_gone checks it). */
static inline int nt_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    NT_CHECK(d, "opendir %s: %s", dir, strerror(errno));
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
             strcmp(e->d_name, "lost+found") && strcmp(e->d_name, NVME_LEDGER_NAME);
    closedir(d);
    return n;
}

/* Whether dir holds a ledger file. */
static inline int nt_ledger_exists(const char *dir)
{
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, NVME_LEDGER_NAME);
    return access(p, F_OK) == 0;
}

/* dir's ledger (if any) holds no live area and `reclaimed` records of areas gone; reading it
 * clears those and removes it, so the directory is left empty. */
static inline void nt_ledger_gone(const char *dir, unsigned reclaimed)
{
    nvme_ledger_info_t li;
    NT_EQ(nvme_ledger_read(dir, &li), 0);
    NT_EQ(li.live, 0);
    NT_EQ(li.reclaimed, reclaimed);
    NT_CHECK(!nt_ledger_exists(dir), "%s/%s is still there", dir, NVME_LEDGER_NAME);
}

static inline uint64_t nt_avail(const char *dir)
{
    struct statvfs sv;
    NT_CHECK(statvfs(dir, &sv) == 0, "statvfs %s: %s", dir, strerror(errno));
    return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* len bytes of a pattern that depends on seed and on the position. */
static inline void nt_fill(void *buf, size_t len, uint32_t seed)
{
    uint32_t *p = buf, x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len / 4; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = x;
    }
}

/* Whether buf holds nt_fill's pattern for seed; the first differing word index or -1. */
static inline long nt_differs(const void *buf, size_t len, uint32_t seed)
{
    const uint32_t *p = buf;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len / 4; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        if (p[i] != x)
            return (long)i;
    }
    return -1;
}

static inline void *nt_alloc(size_t bytes)
{
    void *p = aligned_alloc(NVME_ALIGN, (bytes + NVME_ALIGN - 1) / NVME_ALIGN * NVME_ALIGN);
    NT_CHECK(p, "aligned_alloc %zu bytes", bytes);
    return p;
}

static inline nvme_options_t nt_options(const char *path, uint64_t size,
                                        nvme_engine_kind_t engine)
{
    return (nvme_options_t){ .path = path, .size = size, .engine = engine,
                             .staging_bytes = 16 * NT_MIB };
}

/* Open an area; a failure fails the test (77 when the file system refuses O_DIRECT). */
static inline nvme_area_t *nt_open_opts(const nvme_options_t *o)
{
    nvme_area_t *a = NULL;
    int err = nvme_open(o, &a);
    if (err == -EINVAL && o->path && access(o->path, F_OK) == 0) {
        struct statvfs sv;
        if (statvfs(o->path, &sv) == 0 && sv.f_bavail == 0)
            NT_SKIP("%s has no space", o->path);
    }
    NT_CHECK(err == 0, "nvme_open(%s): expected 0, got %d (%s)", o->path, err, strerror(-err));
    return a;
}

static inline nvme_area_t *nt_open(const char *path, uint64_t size, nvme_engine_kind_t engine)
{
    nvme_options_t o = nt_options(path, size, engine);
    return nt_open_opts(&o);
}

static inline const char *nt_engine_name(nvme_engine_kind_t e)
{
    return e == NVME_ENGINE_URING ? "io_uring" : "psync";
}

/* Mount a tmpfs of mib MiB at the scratch directory's "mnt"; 77 when not permitted. */
static inline const char *nt_mount_tmpfs(unsigned mib)
{
    char opts[64];
    snprintf(nt_mnt, sizeof(nt_mnt), "%s", nt_path("mnt"));
    NT_CHECK(mkdir(nt_mnt, 0700) == 0, "mkdir %s: %s", nt_mnt, strerror(errno));
    snprintf(opts, sizeof(opts), "size=%um,mode=0700", mib);
    if (mount("tmpfs", nt_mnt, "tmpfs", 0, opts) < 0) {
        int e = errno;
        nt_mnt[0] = 0;
        NT_SKIP("cannot mount a tmpfs: %s", strerror(e));
    }
    return nt_mnt;
}

/* Run a shell command; 0 when it succeeded. */
static inline int nt_sh(const char *fmt, const char *a, const char *b)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), fmt, a, b);
    return system(cmd);
}

/* A loop device over a file of mib MiB in the scratch directory (sparse); its path.
 * 77 when losetup is missing or not permitted. */
static inline const char *nt_loop_device(unsigned mib, const char *backing)
{
    char size[32], cmd[600];
    snprintf(size, sizeof(size), "%uM", mib);
    if (nt_sh("truncate -s %s '%s'", size, backing))
        NT_FAIL("truncate %s", backing);
    snprintf(cmd, sizeof(cmd), "losetup -f --show '%s' 2>/dev/null", backing);
    FILE *p = popen(cmd, "r");
    if (!p || !fgets(nt_loop, sizeof(nt_loop), p) || pclose(p) != 0) {
        nt_loop[0] = 0;
        NT_SKIP("cannot set up a loop device (losetup missing or not permitted)");
    }
    nt_loop[strcspn(nt_loop, "\n")] = 0;
    return nt_loop;
}

/* Mount an ext4 of mib MiB (a loop device) at the scratch directory's "mnt"; 77 when not
 * permitted. */
static inline const char *nt_mount_ext4(unsigned mib)
{
    const char *dev = nt_loop_device(mib, nt_path("ext4.img"));
    if (nt_sh("mkfs.ext4 -q -m 0 %s%s >/dev/null 2>&1", dev, ""))
        NT_SKIP("mkfs.ext4 failed or is missing");
    snprintf(nt_mnt, sizeof(nt_mnt), "%s", nt_path("mnt"));
    NT_CHECK(mkdir(nt_mnt, 0700) == 0, "mkdir %s: %s", nt_mnt, strerror(errno));
    if (mount(dev, nt_mnt, "ext4", 0, NULL) < 0) {
        int e = errno;
        nt_mnt[0] = 0;
        NT_SKIP("cannot mount ext4 on %s: %s", dev, strerror(e));
    }
    return nt_mnt;
}

/* Wait for child pid; its exit status, or 128 + the signal that ended it. */
static inline int nt_wait(pid_t pid)
{
    int st;
    NT_CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
