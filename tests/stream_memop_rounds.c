/* SPDX-License-Identifier: MIT */
/*
 * stream_memop_rounds.c - one flag word released round after round is not a race.
 *
 * Stream B writes the round's number into a flag (a stream write, or a memset) after
 * storing the round's data; stream A waits for the flag to reach it and then reads the data.
 * Round r + 1's write of the flag is unordered with round r's wait, which is how such a flag
 * is used: a wait polls a word that other work stores concurrently, so the race checker must
 * stay quiet; without the waits, A's reads are reported.  Eager and lazy executor.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

enum { ROUNDS = 5, BY_MEMSET = 1, NO_WAIT = 2 };

static void program(void *arg)
{
    int mode = (int)(intptr_t)arg;
    CUstream a, b;
    CUdeviceptr flag, data, out;
    unsigned got[ROUNDS];

    st_setup(0);
    CHECK_CU(cuMemAlloc(&flag, 64));
    CHECK_CU(cuMemAlloc(&data, 4 * ROUNDS));
    CHECK_CU(cuMemAlloc(&out, 4 * ROUNDS));
    CHECK_CU(cuMemsetD32(flag, 0, 16));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    for (unsigned r = 1; r <= ROUNDS; r++) {
        if (!(mode & NO_WAIT))
            CHECK_CU(cuStreamWaitValue32(a, flag, r, CU_STREAM_WAIT_VALUE_GEQ));
        CHECK_CU(cuMemcpyDtoDAsync(out + 4 * (r - 1), data + 4 * (r - 1), 4, a));
        CHECK_CU(cuMemsetD32Async(data + 4 * (r - 1), 10 + r, 1, b));
        if (mode & BY_MEMSET)
            CHECK_CU(cuMemsetD32Async(flag, r, 1, b));
        else
            CHECK_CU(cuStreamWriteValue32(b, flag, r, 0));
    }
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(got, out, sizeof(got)));
    for (unsigned r = 1; r <= ROUNDS && !(mode & NO_WAIT); r++)
        EXPECT(got[r - 1] == 10 + r, "round %u: A read %u", r, got[r - 1]);
}

int main(void)
{
    static const char *const execs[] = { "ELIXIR_SIM_EXEC=async", "ELIXIR_SIM_EXEC=lazy" };
    static const char *const race[] = { "race:", NULL };
    for (int i = 0; i < 2; i++) {
        for (int mode = 0; mode <= (BY_MEMSET | NO_WAIT); mode++) {
            const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", execs[i], NULL };
            st_child_t c;
            st_run_child(program, (void *)(intptr_t)mode, env, &c);
            if (mode & NO_WAIT) {
                st_child_expect(&c, 66, race);
            } else {
                if (c.status != 0 || strstr(c.err, "race"))
                    fprintf(stderr, "mode %d (%s): status %d\n%s", mode, execs[i], c.status,
                            c.err);
                EXPECT(c.status == 0 && !strstr(c.err, "race"), "mode %d (%s) clean", mode,
                       execs[i]);
            }
            st_child_free(&c);
        }
    }
    return 0;
}
