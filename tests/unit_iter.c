/* SPDX-License-Identifier: MIT */
/*
 * unit_iter.c - the iteration detector (policy/iter.c) on its own, on launch sequences.
 *
 * A sequence is written as text: a letter is a launch of that kernel, '|' a barrier (a host
 * synchronisation or a host <-> device copy), spaces are ignored.  Launch number i (from 0)
 * happens at time 100 + 10 i.  Each case lists the launch numbers expected to begin
 * iterations 0, 1, 2, ...: the detector must report exactly those indexes with exactly those
 * times, and each mark no later than the launch it names could be known (rule 1 and 2 may
 * reveal earlier ones late, never a later one early).
 */
#include "../policy/iter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAUNCHES 4096

static int failures;

static uint64_t time_of(int launch)
{
    return 100 + 10 * (uint64_t)launch;
}

/* Repeat `unit` n times after `head`, into a static buffer. */
static const char *seq(const char *head, const char *unit, int n)
{
    static char buf[16384];
    size_t len = (size_t)snprintf(buf, sizeof(buf), "%s", head);

    for (int i = 0; i < n && len < sizeof(buf); i++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s", unit);
    return buf;
}

/* Launch numbers of every launch of `kernel` in text, from the k-th one on, every `step`. */
static int launches_of(const char *text, char kernel, int from, int step, int *out, int max)
{
    int n = 0, launch = 0, seen = 0;

    for (const char *p = text; *p; p++) {
        if (*p < 'A' || *p > 'Z')
            continue;
        if (*p == kernel && seen++ >= from && (seen - 1 - from) % step == 0 && n < max)
            out[n++] = launch;
        launch++;
    }
    return n;
}

/* Feed text to a detector; compare the marks with want[0..nwant). */
static void run_case(const char *name, const char *text, const int *want, int nwant)
{
    iter_t *it;
    iter_mark_t marks[ITER_MAX_MARKS];
    int launch = 0, got = 0;

    if (iter_create(&it) != 0) {
        printf("FAIL %s: iter_create\n", name);
        exit(1);
    }
    for (const char *p = text; *p; p++) {
        if (*p == '|') {
            iter_barrier(it);
            continue;
        }
        if (*p < 'A' || *p > 'Z')
            continue;
        int m = iter_launch(it, (uint32_t)(*p - 'A' + 1), time_of(launch), marks);
        for (int i = 0; i < m; i++, got++) {
            uint64_t want_t = got < nwant ? time_of(want[got]) : 0;
            if (got >= nwant || marks[i].index != (uint64_t)got || marks[i].time != want_t ||
                marks[i].time > time_of(launch)) {
                printf("FAIL %s: mark %d at launch %d: expected iteration %d at time %llu, "
                       "got iteration %llu at time %llu\n", name, got, launch, got,
                       (unsigned long long)want_t, (unsigned long long)marks[i].index,
                       (unsigned long long)marks[i].time);
                failures++;
                iter_destroy(it);
                return;
            }
        }
        launch++;
    }
    if (got != nwant) {
        printf("FAIL %s: expected %d iterations, got %d\n", name, nwant, got);
        failures++;
    }
    if (iter_current(it) != nwant - 1) {
        printf("FAIL %s: iter_current: expected %d, got %lld\n", name, nwant - 1,
               (long long)iter_current(it));
        failures++;
    }
    iter_destroy(it);
}

/* Every launch of `anchor` (from its `from`-th, every `step`) begins an iteration. */
static void expect_anchor(const char *name, const char *text, char anchor, int from, int step)
{
    int want[MAX_LAUNCHES];
    int n = launches_of(text, anchor, from, step, want, MAX_LAUNCHES);

    run_case(name, text, want, n);
}

int main(void)
{
    /* examples/train.py: initialisation without copies, then steps that upload the batch,
     * run the model and download the loss.  The first step is counted too. */
    expect_anchor("train.py shape", seq("IIIII", "|| EAAB AAC OOOO |", 12), 'E', 0, 1);
    /* A synchronisation before the loop changes nothing. */
    expect_anchor("synchronised start", seq("III|", "|EABC|", 8), 'E', 0, 1);
    /* The first kernel of a step is used again inside it: only the one after a barrier
     * begins an iteration (the first time, the last one before is taken for iteration 0). */
    {
        const char *t = seq("II", "|FXFY|", 6);
        /* F's second launch in step 1 (launch 4), then every step's first launch. */
        int want[6] = { 4, 6, 10, 14, 18, 22 };
        run_case("anchor used twice per step", t, want, 6);
    }
    /* Gradient accumulation: the anchor runs three times per iteration; once that is measured
     * the loop is followed without barriers too. */
    {
        char t[4096];
        snprintf(t, sizeof(t), "%s", seq("", "|EBEBEBO|", 4));
        strcat(t, seq("", "EBEBEBO", 4));
        int want[8] = { 4, 7, 14, 21, 28, 35, 42, 49 };
        run_case("accumulation", t, want, 8);
    }
    /* No barrier at all: a repeating launch sequence (rule 2), after an initialisation.  A
     * runs twice per period, so B, the first kernel that runs once per period, anchors. */
    expect_anchor("no barriers", seq("IJIJK", "ABCAD", 9), 'B', 0, 1);
    /* A loop of one kernel has no structure to find. */
    run_case("one kernel", seq("", "A", 50), NULL, 0);
    /* Nothing that repeats. */
    run_case("no loop", "ABCDEFGHIJ|KLMNOP|QRSTUVWXYZ", NULL, 0);
    /* Rule 4 to the launch: iterations of L = 2 launches (A after each barrier), then B
     * alone.  The anchor still begins an iteration after 2 L + 16 = 20 launches of B, the
     * loop being followed without barriers once per_iter is known; the 21st launch of B
     * loses it, and A begins nothing. */
    {
        int want[4] = { 0, 2, 4, 25 };
        char t[64];
        snprintf(t, sizeof(t), "%sA", seq("|AB|AB|A", "B", 20));
        run_case("lost: 2 L + 16 launches kept", t, want, 4);
        snprintf(t, sizeof(t), "%sA", seq("|AB|AB|A", "B", 21));
        run_case("lost: one launch more", t, want, 3);
    }
    /* A mid-step barrier followed by another kernel does not cut the step. */
    expect_anchor("mid-step barrier", seq("", "|EA|MB", 7), 'E', 0, 1);
    /* An evaluation phase in the middle (other kernels, many of them): the anchor is lost,
     * then found again; indexes go on. */
    {
        char t[8192];
        snprintf(t, sizeof(t), "%s", seq("", "|EAB|", 5));
        strcat(t, seq("", "VWXYZ", 20));
        strcat(t, seq("", "|EAB|", 5));
        /* E launches 0, 3, 6, 9, 12; the eval has 100 launches (15..114); E resumes at 115:
         * its first launch after a barrier begins the next iteration at once. */
        int want[10] = { 0, 3, 6, 9, 12, 115, 118, 121, 124, 127 };
        run_case("evaluation in between", t, want, 10);
    }
    if (failures) {
        printf("%d failures\n", failures);
        return 1;
    }
    printf("iteration detector: all cases pass\n");
    return 0;
}
