/* SPDX-License-Identifier: MIT */
/*
 * unit_sysmem.c - the memory limit of the process's control groups (shim/sysmem.c), read from
 * made-up /proc/self/cgroup files and cgroup trees in a temporary directory.
 *
 * cgroup v2: the lowest memory.max of the process's cgroup and those above it ("max" is no
 * limit); v1: the memory controller's memory.limit_in_bytes likewise, found in a controller
 * list; both in one file (a hybrid mount): the lower.  No file, no memory line, unreadable or
 * malformed limits: no limit (UINT64_MAX).  A path leading outside the cgroup namespace
 * ("/..") reads only the namespace's root.  The number of processes on the machine comes
 * from the first launcher variable set, and a value that is no count from 1 to 65536 counts
 * as none.  And the real thing: shim_host_memory() is at most physical memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../shim/sysmem.h"

static char dir[64];
static int failures;

#define MIB (1ull << 20)

/* Writes text into dir/rel, making the directories on its way. */
static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        printf("cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

static void expect(const char *what, const char *cgroup, uint64_t want)
{
    char file[128], root[128];
    snprintf(file, sizeof(file), "%s/proc-cgroup", dir);
    snprintf(root, sizeof(root), "%s/fs", dir);
    if (cgroup)
        put("proc-cgroup", cgroup);
    else
        unlink(file);
    uint64_t got = shim_cgroup_limit(file, root);
    if (got != want) {
        printf("FAIL %s: limit %" PRIu64 ", expected %" PRIu64 "\n", what, got, want);
        failures++;
    } else {
        printf("ok   %s\n", what);
    }
}

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("could not remove %s\n", dir);
}

/* LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS set to l, o, m (NULL: unset):
 * shim_local_processes must say `want`, from variable `var` (NULL: none). */
static void expect_procs(const char *l, const char *o, const char *m, unsigned want,
                         const char *var)
{
    const char *names[] = { "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS" };
    const char *values[] = { l, o, m };
    const char *from = "unset";
    for (int i = 0; i < 3; i++)
        if (values[i])
            setenv(names[i], values[i], 1);
        else
            unsetenv(names[i]);
    unsigned got = shim_local_processes(&from);
    int same = (from == NULL && var == NULL) || (from && var && strcmp(from, var) == 0);
    if (got != want || !same) {
        printf("FAIL local processes (%s, %s, %s): %u from %s, expected %u from %s\n",
               l ? l : "-", o ? o : "-", m ? m : "-", got, from ? from : "none", want,
               var ? var : "none");
        failures++;
    } else {
        printf("ok   local processes (%s, %s, %s): %u\n", l ? l : "-", o ? o : "-",
               m ? m : "-", got);
    }
}

static void local_processes(void)
{
    expect_procs(NULL, NULL, NULL, 1, NULL);
    expect_procs("8", NULL, NULL, 8, "LOCAL_WORLD_SIZE");
    expect_procs("8", "3", "2", 8, "LOCAL_WORLD_SIZE");
    expect_procs(NULL, "3", "2", 3, "OMPI_COMM_WORLD_LOCAL_SIZE");
    expect_procs("", NULL, "2", 2, "MPI_LOCALNRANKS");
    expect_procs("0", "3", NULL, 0, "LOCAL_WORLD_SIZE");
    expect_procs("-2", NULL, NULL, 0, "LOCAL_WORLD_SIZE");
    expect_procs("+2", NULL, NULL, 0, "LOCAL_WORLD_SIZE");
    expect_procs("4x", NULL, NULL, 0, "LOCAL_WORLD_SIZE");
    expect_procs("65537", NULL, NULL, 0, "LOCAL_WORLD_SIZE");
    expect_procs("65536", NULL, NULL, 65536, "LOCAL_WORLD_SIZE");
    expect_procs(NULL, NULL, NULL, 1, NULL);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/elixir-unit-sysmem-XXXXXX");
    if (!mkdtemp(dir)) {
        printf("mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    atexit(cleanup);

    /* cgroup v2 */
    put("fs/memory.max", "max\n");
    put("fs/job/memory.max", "1073741824\n");
    put("fs/job/step/memory.max", "max\n");
    expect("v2: the limit of a cgroup above", "0::/job/step\n", 1024 * MIB);
    put("fs/job/step/memory.max", "536870912\n");
    expect("v2: the process's own, lower", "0::/job/step\n", 512 * MIB);
    expect("v2: trailing slash", "0::/job/step/\n", 512 * MIB);
    expect("v2: the root cgroup, unlimited", "0::/\n", UINT64_MAX);
    expect("v2: a cgroup without files, below a limited one", "0::/job/other\n", 1024 * MIB);
    put("fs/memory.max", "268435456\n");
    expect("v2: outside the namespace: its root only", "0::/../elsewhere/job/step\n",
           256 * MIB);
    put("fs/memory.max", "max\n");

    /* cgroup v1: the memory controller, alone or in a list */
    put("fs/memory/memory.limit_in_bytes", "9223372036854771712\n");
    put("fs/memory/docker/memory.limit_in_bytes", "2147483648\n");
    put("fs/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
    expect("v1: memory controller", "5:cpu,cpuacct:/x\n4:memory:/docker/abc\n1:cpu:/\n",
           2048 * MIB);
    expect("v1: in a controller list", "4:blkio,memory:/docker/abc\n", 2048 * MIB);
    expect("v1: a name that only starts with memory", "4:memoryx:/docker/abc\n", UINT64_MAX);
    expect("v1: the root, unlimited (a huge number)", "4:memory:/\n", 9223372036854771712ull);

    /* both: the lower */
    expect("hybrid: v1 and v2 lines", "4:memory:/docker/abc\n0::/job/step\n", 512 * MIB);

    /* nothing to read */
    expect("no /proc/self/cgroup", NULL, UINT64_MAX);
    expect("no memory line", "3:cpuset:/\n2:cpuacct:/\n", UINT64_MAX);
    expect("a line without a path", "0::\nnonsense\n", UINT64_MAX);
    put("fs/bad/memory.max", "lots\n");
    expect("a malformed limit", "0::/bad\n", UINT64_MAX);
    put("fs/bad/memory.max", "123abc\n");
    expect("a number with junk after it", "0::/bad\n", UINT64_MAX);

    local_processes();

    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = (uint64_t)pages * (uint64_t)page, host = shim_host_memory();
    if (host == 0 || host > phys) {
        printf("FAIL shim_host_memory: %" PRIu64 " bytes, physical %" PRIu64 "\n", host, phys);
        failures++;
    } else {
        printf("ok   this process may use %" PRIu64 " MiB (physical %" PRIu64 " MiB)\n",
               host >> 20, phys >> 20);
    }
    printf("%s\n", failures ? "unit_sysmem: FAILED" : "unit_sysmem: all passed");
    return failures ? 1 : 0;
}
