/* SPDX-License-Identifier: MIT */
/*
 * shim_dlsym_load_race.c - a library whose constructor probes and calls the driver, opened
 * while another thread starts libelixir.so, deadlocks neither.
 *
 * The dynamic loader runs a library's constructor holding its own lock, and starting the
 * shim opens the driver and resolves every hooked name through the loader, which takes that
 * lock too.  Were the shim to hold a lock of its own across opening the driver, a thread
 * starting it would wait for the loader's lock while the constructor, holding that, waited
 * for the shim's: both would hang.
 *
 * Each round is a fresh process with the shim preloaded (the shim starts once per process):
 * one thread makes the process's first hooked call (cuGetProcAddress_v2, by its linked name)
 * while the main thread, released by the same barrier, opens tests/preload/load_probe.so,
 * whose constructor looks up cuGetProcAddress_v2 and cuMemAlloc_v2 with dlsym and calls the
 * first.  An alarm turns a hang into a failed round.  Every round must end, both lookups
 * must have given the shim's wrappers, and the call through the first must have returned
 * what the simulator returns with the shim's cuMemAlloc_v2.
 */
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <cudaTypedefs.h>

#include "shim_test.h"
#include "simtest.h"

#define ROUNDS 40
#define HANG_SECONDS 20

static pthread_barrier_t start;

/* $BUILD/tests/preload/load_probe.so, as an absolute path. */
static const char *probe_lib(void)
{
    static char path[PATH_MAX];
    const char *build = getenv("BUILD");
    char rel[PATH_MAX];

    snprintf(rel, sizeof(rel), "%s/tests/preload/load_probe.so", build && *build ? build : "build");
    EXPECT(realpath(rel, path), "cannot find %s: %s", rel, strerror(errno));
    return path;
}

static void *first_call(void *unused)
{
    void *p = NULL;

    (void)unused;
    pthread_barrier_wait(&start);
    return (void *)(intptr_t)cuGetProcAddress("cuMemFree", &p, 3020, 0, NULL);
}

/* One round, in a child with the shim preloaded; prints what the constructor saw. */
static void round_child(void)
{
    const char *lib = probe_lib();
    pthread_t t;
    void *ret, *h, **found;
    int *result;

    alarm(HANG_SECONDS);
    pthread_barrier_init(&start, NULL, 2);
    EXPECT(pthread_create(&t, NULL, first_call, NULL) == 0, "pthread_create");
    pthread_barrier_wait(&start);
    h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    EXPECT(h, "dlopen %s: %s", lib, dlerror());
    pthread_join(t, &ret);
    EXPECT(ret == NULL, "the first hooked call returned %d", (int)(intptr_t)ret);
    found = dlsym(h, "load_probe_found");
    result = dlsym(h, "load_probe_result");
    EXPECT(found && result, "the probe's results are not exported");
    printf("%s %s %s %d\n", sh_in_shim(found[0]) ? sh_name(found[0]) : "driver",
           sh_in_shim(found[1]) ? sh_name(found[1]) : "driver",
           sh_in_shim(found[2]) ? sh_name(found[2]) : "driver", *result);
}

int main(int argc, char **argv)
{
    static const char *const want = "cuGetProcAddress_v2 cuMemAlloc_v2 cuMemAlloc_v2 0\n";

    if (argc > 1 && strcmp(argv[1], "round") == 0) {
        round_child();
        return 0;
    }
    for (int i = 0; i < ROUNDS; i++) {
        sh_run_t r = sh_run("round", 1, NULL);

        EXPECT(r.status == 0, "round %d: the child exited %d%s:\n%s", i, r.status,
               r.status == 128 + SIGALRM ? " (hung: killed by its alarm)" : "", r.err);
        EXPECT(strcmp(r.out, want) == 0, "round %d: the constructor saw \"%s\", expected \"%s\"",
               i, r.out, want);
        sh_run_free(&r);
    }
    printf("%d rounds: the constructor's lookups and call ended, wrapped, while the shim "
           "started\n", ROUNDS);
    return 0;
}
