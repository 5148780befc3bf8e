/* SPDX-License-Identifier: MIT */
/*
 * sysmem.c - how much memory this process may use.
 *
 * A container or a batch scheduler's job usually runs in a control group whose memory limit
 * is far below the machine's physical memory.  Pinned memory counts against that limit like
 * any other, so a host budget taken from physical memory alone would let the shim pin more
 * than the job may hold, and the kernel would kill the job rather than the driver refusing a
 * chunk.  The limit is read from the cgroup file systems: with cgroup v2, memory.max of the
 * process's cgroup and of each cgroup above it ("max": none); with v1, memory.limit_in_bytes
 * of the memory controller's cgroups likewise (an unlimited one holds a huge number).  The
 * lowest one found holds.  A path that leads outside the cgroup namespace ("/.." in
 * /proc/self/cgroup) is not followed: only the namespace's root is read.
 *
 * A job often runs one process per GPU, several on one machine (torchrun, mpirun), each
 * preloaded with the shim: each process's share of the machine is then what it may use
 * divided by their number, which launchers put in the environment.
 */
#include "sysmem.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The limit a cgroup file states: bytes, or UINT64_MAX for "max", a missing file or anything
 * else. */
static uint64_t read_limit(const char *path)
{
    char text[64];
    FILE *f = fopen(path, "re");
    if (!f)
        return UINT64_MAX;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || (*end && *end != '\n'))
        return UINT64_MAX;
    return v;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* The lowest limit in file `name` of cgroup `path` (absolute, under dir) and its ancestors. */
static uint64_t walk_up(const char *dir, const char *path, const char *name)
{
    char p[PATH_MAX], file[PATH_MAX + 64];
    uint64_t limit = UINT64_MAX;

    if (strstr(path, "/..") || snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
        p[0] = 0;                               /* outside the namespace: its root only */
    for (;;) {
        size_t len = strlen(p);
        while (len && p[len - 1] == '/')
            p[--len] = 0;
        if (snprintf(file, sizeof(file), "%s%s/%s", dir, p, name) < (int)sizeof(file))
            limit = min_u64(limit, read_limit(file));
        char *slash = strrchr(p, '/');
        if (!len || !slash)
            return limit;
        *slash = 0;
    }
}

/* Does the comma-separated list hold `name`? */
static int has_controller(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *c = list; c && *c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL)
        if (strncmp(c, name, n) == 0 && (c[n] == ',' || c[n] == 0))
            return 1;
    return 0;
}

uint64_t shim_cgroup_limit(const char *proc_cgroup, const char *root)
{
    char line[PATH_MAX + 256], dir[PATH_MAX];
    uint64_t limit = UINT64_MAX;
    FILE *f = fopen(proc_cgroup, "re");

    if (!f)
        return limit;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/')
            continue;
        *c1 = *c2 = 0;
        const char *controllers = c1 + 1, *path = c2 + 1;
        if (strcmp(line, "0") == 0 && !*controllers) {
            limit = min_u64(limit, walk_up(root, path, "memory.max"));
        } else if (has_controller(controllers, "memory") &&
                   snprintf(dir, sizeof(dir), "%s/memory", root) < (int)sizeof(dir)) {
            limit = min_u64(limit, walk_up(dir, path, "memory.limit_in_bytes"));
        }
    }
    fclose(f);
    return limit;
}

uint64_t shim_host_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
    return min_u64(phys, shim_cgroup_limit("/proc/self/cgroup", "/sys/fs/cgroup"));
}

unsigned shim_local_processes(const char **from)
{
    static const char *const vars[] = { "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                        "MPI_LOCALNRANKS" };
    *from = NULL;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        char *end;
        if (!v || !*v)
            continue;
        unsigned long n = strtoul(v, &end, 10);
        *from = vars[i];
        if (*end || n < 1 || n > 65536 || *v == '-' || *v == '+')
            return 0;
        return (unsigned)n;
    }
    return 1;
}
