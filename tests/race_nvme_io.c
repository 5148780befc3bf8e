/* SPDX-License-Identifier: MIT */
/*
 * race_nvme_io.c - NVMe I/O submitted with its host memory (elixirSimIoSubmit) is checked by
 * the race checker as the host's access at submission: a write to the drive out of pinned
 * memory that an asynchronous copy from the device still fills, and a read from the drive into
 * memory that a copy to the device still reads, are races unless the host waited for the copy
 * first; the same through a second mapping of host-located VMM memory (checked on the physical
 * memory behind it).  Each program runs in a child process under ELIXIR_SIM_RACECHECK=fail.
 */
#include <dlfcn.h>
#include <string.h>

#include "memtest.h"
#include "simchild.h"

typedef uint64_t (*io_submit_fn)(int dir, const void *buf, uint64_t bytes);

enum { PINNED, VMM_ALIAS, NMEM };
enum { WRITE_OUT, READ_IN, NDIR };

typedef struct {
    int mem, dir, sync;
} scenario_t;

static const char *const mem_names[] = { "pinned memory", "a second mapping of VMM host memory" };
static const char *const dir_names[] = { "a write to the drive", "a read from the drive" };

static void program(void *arg)
{
    const scenario_t *sc = arg;
    const size_t g = MT_GRAN;
    io_submit_fn io_submit = (io_submit_fn)dlsym(RTLD_DEFAULT, "elixirSimIoSubmit");
    if (!io_submit)
        exit(3);
    st_setup(0);
    CUstream s;
    CUdeviceptr d, va = 0, alias = 0;
    CUmemGenericAllocationHandle h = 0;
    void *pinned = NULL, *copied, *io;
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&d, g));
    CHECK_CU(cuMemsetD8(d, 7, g));
    CHECK_CU(cuCtxSynchronize());
    if (sc->mem == PINNED) {
        CHECK_CU(cuMemAllocHost(&pinned, g));
        copied = io = pinned;
    } else {
        h = mt_create(g, CU_MEM_LOCATION_TYPE_HOST, 0);
        va = mt_reserve(g);
        alias = mt_reserve(g);
        mt_map_rw(va, g, h, 0);
        mt_map_rw(alias, g, h, 0);
        copied = (void *)(uintptr_t)va;
        io = (void *)(uintptr_t)alias;
    }
    if (sc->dir == WRITE_OUT)           /* the device's data into host memory, then out */
        CHECK_CU(cuMemcpyDtoHAsync(copied, d, g, s));
    else                                /* host memory to the device, then read into it */
        CHECK_CU(cuMemcpyHtoDAsync(d, copied, g, s));
    if (sc->sync)
        CHECK_CU(cuStreamSynchronize(s));
    io_submit(sc->dir == WRITE_OUT ? 1 : 0, io, g);
    CHECK_CU(cuStreamSynchronize(s));
    if (pinned) {
        CHECK_CU(cuMemFreeHost(pinned));
    } else {
        CHECK_CU(cuMemUnmap(va, g));
        CHECK_CU(cuMemUnmap(alias, g));
        CHECK_CU(cuMemRelease(h));
        CHECK_CU(cuMemAddressFree(va, g));
        CHECK_CU(cuMemAddressFree(alias, g));
    }
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuStreamDestroy(s));
}

int main(void)
{
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    static const char *const racy_write[] = { "race:", "an NVMe write out of host memory", NULL };
    static const char *const racy_read[] = { "race:", "an NVMe read into host memory", NULL };
    st_child_t c;

    for (int mem = 0; mem < NMEM; mem++)
        for (int dir = 0; dir < NDIR; dir++)
            for (int sync = 0; sync < 2; sync++) {
                scenario_t sc = { mem, dir, sync };
                st_run_child(program, &sc, env, &c);
                if (!sync) {
                    st_child_expect(&c, 66, dir == WRITE_OUT ? racy_write : racy_read);
                } else {
                    st_child_expect(&c, 0, NULL);
                    EXPECT(!strstr(c.err, "race"), "%s, %s after a synchronisation: expected "
                           "no race report, got:\n%s", dir_names[dir], mem_names[mem], c.err);
                }
                st_child_free(&c);
            }
    return 0;
}
