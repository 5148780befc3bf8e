/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_util.h - what the recorder's tests (unit_trace_record.c, unit_trace_stack.c,
 * conc_trace_record.c) share: the failure count and CHECK, events tagged with the thread that
 * recorded them and their place in its sequence, a scratch trace path, the check that a
 * reader ended cleanly, and the verdict.
 */
#ifndef UNIT_TRACE_UTIL_H
#define UNIT_TRACE_UTIL_H

#include "../tracer/record.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int failures;

/* Counts a failure, printing what was expected and what came; gives up after 30. */
#define CHECK(what, expected, got)                                                            \
    do {                                                                                      \
        int64_t e_ = (int64_t)(expected), g_ = (int64_t)(got);                                \
        if (e_ != g_) {                                                                       \
            printf("FAIL %s:%d: %s: expected %" PRId64 ", got %" PRId64 "\n", __func__,       \
                   __LINE__, what, e_, g_);                                                   \
            if (++failures > 30)                                                              \
                exit(1);                                                                      \
        }                                                                                     \
    } while (0)

/* An event's time as a tag: the recording thread in the high bits, its sequence number in
 * the low 40, so that a reader can tell each thread's events apart and check their order. */
#define TU_TAG(thread, seq) ((uint64_t)(thread) << 40 | (uint64_t)(seq))
#define TU_THREAD(time)     ((int)((time) >> 40))
#define TU_SEQ(time)        ((uint64_t)(time) & ((1ull << 40) - 1))

/* "/tmp/NAME.PID.trace" in buf, with no file of that name left from an earlier run. */
static inline const char *tu_scratch(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "/tmp/%s.%d.trace", name, (int)getpid());
    unlink(buf);
    return buf;
}

/* Checks that the reader r stopped at the end of its file (trc_reader_next's rc 0), and
 * prints the reader's error when it did not. */
static inline void tu_read_clean(const char *what, trc_reader_t *r, int rc)
{
    CHECK(what, 0, rc);
    if (rc < 0)
        printf("  %s\n", trc_reader_error(r));
}

/* The exit status of test `name`, after saying how it went. */
static inline int tu_done(const char *name)
{
    if (failures)
        printf("%d failure(s)\n", failures);
    else
        printf("%s: all passed\n", name);
    return failures ? 1 : 0;
}

#endif
