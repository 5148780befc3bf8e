/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_errors.c - every way elixir-trace refuses its input exits 2 with a message
 * that names the problem: a missing file, an empty file, a foreign file, a trace cut inside
 * the header and inside records at several places, a corrupt record, a newer major version
 * ("PATH: offset N: reason" for the trace files), a trace naming more devices than any
 * libelixir.so writes (with --partial, what came before it is read, with a warning), bad
 * option values (naming the option and the accepted values), unknown options and commands,
 * missing and extra arguments.
 */
#include "unit_trace_tool.h"

#include "../tools/trace/model.h"

static const char *good;               /* a small valid trace */
static unsigned char *bytes;
static size_t nbytes, mid_offset;

static void make_good(void)
{
    good = tt_path("good.trace");
    trc_writer_t *w = tt_writer(good, 0);
    uint32_t k = tt_str(w, "kernel_a");
    for (uint64_t i = 1; i <= 20; i++) {
        trc_alloc_t a = { i, 0, 0x1000 * i, 4096, 0, NULL };
        trc_launch_t l = { .id = i, .func_id = k, .device = 0,
                           .span = { 1, i * 100, i * 100 + 50 } };
        TT_EMIT(trc_emit_alloc(w, i * 100, &a));
        TT_EMIT(trc_emit_launch(w, i * 100 + 1, &l));
    }
    tt_close(w);
    bytes = (unsigned char *)tt_slurp_len(good, &nbytes);
    /* The offset of the 30th event (a launch, several bytes of payload). */
    trc_reader_t *r;
    trc_event_t ev;
    int n = 0;
    if (trc_reader_open_mem(bytes, nbytes, &r) < 0)
        exit(1);
    while (trc_reader_next(r, &ev) == 1 && ++n < 30)
        ;
    mid_offset = (size_t)ev.offset;
    TT_CHECK("a launch in the middle", TRC_EV_LAUNCH, ev.type);
    trc_reader_close(r);
}

/* `summary path` exits 2 and stderr holds "path: " then each of the needles. */
static void expect_refused(const char *path, const char *n1, const char *n2)
{
    tt_result_t r = tt_run("summary", path, NULL);
    char prefix[512];
    snprintf(prefix, sizeof(prefix), "%s: ", path);
    TT_CHECK("exit status", 2, r.status);
    TT_LINE(r.err, prefix, n1, n2 ? n2 : n1);
    TT_CHECK("stdout bytes", 0, strlen(r.out));
    tt_free(&r);
}

static void files(void)
{
    expect_refused(tt_path("no-such.trace"), "No such file or directory", NULL);
    expect_refused(tt_write_file("empty.trace", "", 0), "offset 0: empty file", NULL);
    expect_refused(tt_write_file("foreign.trace", "#!/bin/sh\necho hello\n", 21),
                   "offset 0: not an Elixir trace", NULL);
    expect_refused(tt_write_file("short.trace", bytes, 12), "offset 12", "ends inside the header");
    /* Cuts: inside the first record's header, inside a launch record in the middle (its
     * type and length read, its payload cut), one byte short of the END record. */
    char off[2][64];
    snprintf(off[0], sizeof(off[0]), "offset %zu: record length", mid_offset);
    snprintf(off[1], sizeof(off[1]), "offset %zu: record length", nbytes - 3);
    expect_refused(tt_write_file("cut0.trace", bytes, 33), "offset 32",
                   "file ends inside a record header");
    expect_refused(tt_write_file("cut1.trace", bytes, mid_offset + 2), off[0],
                   "beyond end of file");
    expect_refused(tt_write_file("cut2.trace", bytes, nbytes - 1), off[1], "beyond end of file");
    unsigned char v2[64];
    memcpy(v2, bytes, 64);
    v2[8] = 2;                         /* major version 2 */
    v2[10] = 7;                        /* minor 7 */
    expect_refused(tt_write_file("v2.trace", v2, 64), "offset 8",
                   "trace format version 2.7, this reader reads 1.x");
    unsigned char *bad = malloc(nbytes);
    memcpy(bad, bytes, nbytes);
    memset(bad + 33, 0xff, 11);        /* the first record's length: an overlong varint */
    expect_refused(tt_write_file("corrupt.trace", bad, nbytes), "offset 32",
                   "overlong varint in record header");
    free(bad);
}

/* MEMORY records for devices 0 to TM_MAX_DEVICES: one device too many. */
static void too_many_devices(void)
{
    const char *path = tt_path("devices.trace");
    trc_writer_t *w = tt_writer(path, 0);
    for (int32_t d = 0; d <= TM_MAX_DEVICES; d++)
        TT_EMIT(trc_emit_memory(w, 100 + (uint64_t)d, &(trc_memory_t){ d, { 4096 } }));
    tt_close(w);
    char beyond[64];
    snprintf(beyond, sizeof(beyond), "names device %d, beyond %d devices", TM_MAX_DEVICES,
             TM_MAX_DEVICES);
    expect_refused(path, beyond, "not a trace libelixir.so writes");
    tt_result_t r = tt_run("summary", path, "--partial", NULL);
    TT_CHECK("exit status with --partial", 0, r.status);
    TT_HAS(r.err, beyond);
    TT_HAS(r.err, "loaded the 1024 events before it");
    tt_free(&r);
}

/* `elixir-trace args...` exits 2; stderr has n1 and n2 on one line. */
#define USAGE(n1, n2, ...)                                                                    \
    do {                                                                                      \
        tt_result_t r_ = tt_run(__VA_ARGS__, NULL);                                           \
        TT_CHECK("exit status", 2, r_.status);                                                \
        TT_LINE(r_.err, n1, n2);                                                              \
        tt_free(&r_);                                                                         \
    } while (0)

static void options(void)
{
    USAGE("unknown command 'sumary'", "summary, allocs, kernels, diff, timeline, plot, report",
          "sumary", good);
    USAGE("elixir-trace summary: unknown option '--bogus'", "--top", "summary", good,
          "--bogus");
    USAGE("elixir-trace allocs: --sort: unknown key 'colour'", "size, time, lifetime, device",
          "allocs", good, "--sort", "colour");
    USAGE("elixir-trace kernels: --sort: unknown key 'size'", "total, count, mean, max, name",
          "kernels", good, "--sort=size");
    USAGE("--top: 'ten' is not a count", "accepted: 0 to", "kernels", good, "--top", "ten");
    USAGE("--top: '-1' is not a count", "accepted", "allocs", good, "--top=-1");
    USAGE("--min-size: '12Q' is not a size", "K, M, G or T suffix", "allocs", good,
          "--min-size", "12Q");
    USAGE("--min-size: 'M' is not a size", "suffix", "allocs", good, "--min-size", "M");
    USAGE("--device: 'gpu0' is not a device", "'host'", "allocs", good, "--device", "gpu0");
    USAGE("--device: kernels run on GPUs, not on 'host'", "a device number", "kernels", good,
          "--device", "host");
    USAGE("--stack-depth: 'x' is not a count", "accepted", "allocs", good, "--stack-depth=x");
    USAGE("--size: '100' is not a picture size", "WxH", "plot", good, tt_path("p.svg"),
          "--size", "100");
    USAGE("--size: '10x10' is not a picture size", "width 320 to 16384", "plot", good,
          tt_path("p.svg"), "--size", "10x10");
    USAGE("--top needs a value", "N", "allocs", good, "--top");
    USAGE("--json takes no value", "'yes'", "allocs", good, "--json=yes");
    USAGE("elixir-trace diff: missing argument", "A B", "diff", good);
    USAGE("elixir-trace summary: unexpected argument 'extra'", "FILE", "summary", good,
          "extra");
    USAGE("elixir-trace summary: missing argument", "FILE", "summary");
    USAGE("--chrome OUT.json is required", "timeline", "timeline", good);
}

static void no_command(void)
{
    tt_result_t r = tt_run(NULL);
    TT_CHECK("exit status without a command", 2, r.status);
    TT_LINE(r.err, "usage: elixir-trace COMMAND");
    tt_free(&r);
}

int main(void)
{
    tt_init();
    make_good();
    tt_result_t r = tt_run("summary", good, NULL);
    TT_CHECK("the good trace reads", 0, r.status);
    tt_free(&r);
    files();
    too_many_devices();
    options();
    no_command();
    return tt_done();
}
