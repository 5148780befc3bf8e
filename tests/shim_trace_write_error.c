/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_write_error.c - the trace file cannot grow (disk full, file too large): the
 * program runs on unharmed, the log says once what happened, and the file stays readable.
 *
 * The scenario (recording) allocates a buffer, then limits the size of the files it writes
 * to 256 KiB (RLIMIT_FSIZE, with SIGXFSZ ignored: writes then fail with EFBIG, as they fail
 * with ENOSPC on a full disk, through the same path; set after the allocation, since the
 * simulator's device memory is a memfd that the limit would also cap), launches tt_k1 100000
 * times on the buffer (far more than 256 KiB of records) and checks every word by copy.  It
 * must exit 0 with the right result; the log must say exactly once that writing the trace
 * failed, naming the variable and the error, and not again at exit; the trace must read
 * without error up to its last whole record, without END, holding the process and some, not
 * all, of the launches; and elixir-trace summary must read it.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#include <signal.h>
#include <sys/resource.h>

#define LAUNCHES 100000

static void scenario(void)
{
    struct rlimit rl = { 256 * 1024, 256 * 1024 };
    uint32_t words[16];
    CUdeviceptr p;

    st_setup(0);
    CUfunction k1 = st_function(tt_ptx, "tt_k1");
    CHECK_CU(cuMemAlloc(&p, 4096));
    signal(SIGXFSZ, SIG_IGN);
    EXPECT(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit: %s", strerror(errno));
    for (int i = 0; i < LAUNCHES; i++)
        CHECK_CU(tt_launch1(k1, NULL, p, 16));
    CHECK_CU(cuMemcpyDtoH(words, p, sizeof(words)));
    for (int i = 0; i < 16; i++)
        EXPECT(words[i] == LAUNCHES, "word %d is %u after %d launches", i, words[i], LAUNCHES);
    CHECK_CU(cuMemFree(p));
    printf("every word is %d\n", LAUNCHES);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    tt_trace_t t;
    const char *path = tt_path("write-error", 0);      /* (tt_record_scenario's) */
    sh_run_t r = tt_record_scenario("write-error", 0, &t);

    EXPECT(strstr(r.out, "every word is 100000") != NULL, "the program's result:\n%s", r.out);
    EXPECT(sh_count(r.err, "trace: writing the trace (ELIXIR_TRACE=") == 1 &&
               sh_count(r.err, "failed: File too large; recording has stopped") == 1 &&
               !strstr(r.err, "writing the trace failed"),
           "the write error was not reported exactly once:\n%s", r.err);
    size_t launches = tt_count(&t, TRC_EV_LAUNCH);
    EXPECT(!t.complete && tt_count(&t, TRC_EV_PROCESS) == 1 && launches > 0 &&
               launches < LAUNCHES,
           "complete %d, %zu PROCESS records, %zu launches; expected no END, 1, some", t.complete,
           tt_count(&t, TRC_EV_PROCESS), launches);
    const char *args[] = { "summary", path, NULL };
    const char *out = tt_path("write-error", 1);
    const char *summary = tt_tool(args, out, out);
    EXPECT(strstr(summary, "kernels") || strstr(summary, "Kernels"),
           "elixir-trace summary of the cut trace:\n%s", summary);
    printf("after the write error: the program ran on, the trace holds %zu of %d launches\n",
           launches, LAUNCHES);
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
