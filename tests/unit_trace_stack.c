/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_stack.c - call sites through the recorder (trc_rec_stack): a known chain of
 * static functions in this program gives frames in this program's executable whose offsets
 * fall, innermost first, in those functions; `skip` drops innermost frames and `depth` caps the
 * count (and TRC_MAX_DEPTH caps a deeper stack); the same call site twice gives one id and another
 * call site another; frames in a shared library name it (libc, through qsort's comparator, and
 * libgcc_s, loaded with dlopen after the module map was first built, through
 * _Unwind_Backtrace's callback).  Stacks are checked in the trace file as read back.
 */
#include "unit_trace_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>

static trc_rec_t *rec;
static volatile int sink; /* keeps the calls below from being tail calls */

#define NOINLINE __attribute__((noinline, noclone))

static NOINLINE long level3(int skip, int depth)
{
    long id = trc_rec_stack(rec, skip, depth);
    sink++;
    return id;
}

static NOINLINE long level2(int skip, int depth)
{
    long id = level3(skip, depth);
    sink++;
    return id;
}

static NOINLINE long level1(int skip, int depth)
{
    long id = level2(skip, depth);
    sink++;
    return id;
}

/* More than TRC_MAX_DEPTH frames deep. */
static NOINLINE long deep(int n)
{
    long id = n ? deep(n - 1) : trc_rec_stack(rec, 0, 100000);
    sink++;
    return id;
}

/* ------------------------------------------------------------------ call sites in libraries */

static long libc_id;

static int compare(const void *a, const void *b)
{
    if (!libc_id)
        libc_id = trc_rec_stack(rec, 0, 8); /* sanitizers may add a frame or two */
    return *(const int *)a - *(const int *)b;
}

typedef int (*unwind_fn)(int (*)(void *, void *), void *);
static long gcc_id;

static int unwind_step(void *ctx, void *arg)
{
    (void)ctx, (void)arg;
    if (!gcc_id)
        gcc_id = trc_rec_stack(rec, 0, 3);
    return 0;
}

/* A frame in libgcc_s, which this program does not link: loaded after the map was built. */
static void capture_in_libgcc(void)
{
    void *h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
    unwind_fn fn = h ? (unwind_fn)dlsym(h, "_Unwind_Backtrace") : NULL;
    if (!fn) {
        printf("note: libgcc_s.so.1 not available (%s): that check is left out\n", dlerror());
        gcc_id = -1;
        return;
    }
    fn((int (*)(void *, void *))unwind_step, NULL);
}

/* ------------------------------------------------------------------ checks on the file */

static uintptr_t exe_base;

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    exe_base = (uintptr_t)info->dlpi_addr;
    return 1;
}

/* Which of level1..3 holds pc: the one with the greatest start at or below it (0: none). */
static int level_of(uintptr_t pc)
{
    uintptr_t starts[4] = { 0, (uintptr_t)level1, (uintptr_t)level2, (uintptr_t)level3 };
    int best = 0;
    for (int i = 1; i <= 3; i++)
        if (starts[i] <= pc && (!best || starts[i] > starts[best]))
            best = i;
    return best && pc - starts[best] < 4096 ? best : 0;
}

/* Stack id must hold between min and max frames, the first ones in this executable, in
 * level3, level2, level1 from `first` down. */
static void check_chain(const trc_reader_t *r, long id, int first, uint32_t min, uint32_t max,
                        const char *exe)
{
    const trc_stack_t *s = trc_reader_stack(r, (uint32_t)id);
    CHECK("stack defined", 1, s != NULL);
    if (!s)
        return;
    if (s->depth < min || s->depth > max) {
        printf("FAIL: stack %ld: %u frames, expected %u to %u\n", id, s->depth, min, max);
        failures++;
    }
    for (uint32_t i = 0; i < s->depth && first - (int)i >= 1; i++) {
        if (strcmp(s->frames[i].module, exe) != 0) {
            printf("FAIL: frame %u: module \"%s\", expected \"%s\"\n", i, s->frames[i].module,
                   exe);
            failures++;
        }
        CHECK("frame in the expected function", first - (int)i,
              level_of(exe_base + s->frames[i].offset));
    }
}

/* Whether some frame of stack id is in a module whose path contains name. */
static int has_module(const trc_reader_t *r, long id, const char *name)
{
    const trc_stack_t *s = trc_reader_stack(r, (uint32_t)id);
    for (uint32_t i = 0; s && i < s->depth; i++)
        if (strstr(s->frames[i].module, name))
            return 1;
    return 0;
}

int main(void)
{
    char path[64], exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = 0;
    dl_iterate_phdr(first_object, NULL);
    tu_scratch(path, sizeof(path), "unit_trace_stack");
    CHECK("open", 0, trc_rec_open(path, NULL, &rec));
    long ids[2], other, skipped, two, capped;
    static volatile int loops = 2; /* a loop the compiler cannot unroll into two call sites */
    for (int i = 0; i < loops; i++)
        ids[i] = level1(0, 8);
    other = level1(0, 8);
    skipped = level1(1, 8);
    two = level1(0, 2);
    capped = deep(300);
    CHECK("stack id", 1, ids[0] > 0);
    CHECK("same call site: same id", ids[0], ids[1]);
    CHECK("another call site: another id", 1, other > 0 && other != ids[0]);
    CHECK("skip: another stack", 1, skipped > 0 && skipped != ids[0]);
    CHECK("depth 0: nothing captured", 0, level1(0, 0));
    CHECK("negative skip", -EINVAL, trc_rec_stack(rec, -1, 4));
    CHECK("negative depth", -EINVAL, trc_rec_stack(rec, 0, -4));
    int v[] = { 3, 1, 2 };
    qsort(v, 3, sizeof(int), compare);
    capture_in_libgcc();
    CHECK("libc call site", 1, libc_id > 0);
    CHECK("libgcc call site", 1, gcc_id != 0);
    CHECK("close", 0, trc_rec_close(rec));

    trc_reader_t *r;
    trc_event_t ev;
    int rc = trc_reader_open_file(path, &r);
    while (rc >= 0 && (rc = trc_reader_next(r, &ev)) == 1)
        ;
    tu_read_clean("trace reads", r, rc);
    check_chain(r, ids[0], 3, 5, 8, exe);
    check_chain(r, skipped, 2, 4, 8, exe);
    check_chain(r, two, 3, 2, 2, exe);
    CHECK("depth 8: ends in libc (main's caller)", 1, has_module(r, ids[0], "libc.so"));
    const trc_stack_t *c = trc_reader_stack(r, (uint32_t)capped);
    CHECK("300 calls deep: capped at TRC_MAX_DEPTH", TRC_MAX_DEPTH, c ? c->depth : 0);
    CHECK("qsort comparator: a frame in libc", 1, has_module(r, libc_id, "libc.so"));
    if (gcc_id > 0)
        CHECK("_Unwind_Backtrace callback: a frame in libgcc_s", 1,
              has_module(r, gcc_id, "libgcc_s"));
    trc_reader_close(r);
    unlink(path);
    return tu_done("unit_trace_stack");
}
