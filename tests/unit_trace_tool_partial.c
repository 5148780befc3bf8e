/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_partial.c - damaged and unclosed traces.  A trace without its END record
 * (the recorder crashed or was killed) loads with exit 0 and exactly one warning line on
 * stderr.  A trace cut inside a record, or with a corrupt record in the middle, is refused
 * (exit 2) unless --partial is given; then every whole record before the damage is loaded
 * (checked against the reader: same number of launches), a one-line warning names the
 * offset and the reason, and the summary says "partial".  --partial does not rescue a file
 * that is not a trace, and says nothing about a trace that is whole.
 */
#include "unit_trace_tool.h"

static unsigned char *data;
static size_t len;

/* Writes 40 launches; keeps a copy of the bytes before END in `data` (len bytes). */
static const char *make_trace(void)
{
    const char *path = tt_path("whole.trace");
    trc_writer_t *w = tt_writer(path, 0);
    uint32_t k = tt_str(w, "step");
    for (uint64_t i = 1; i <= 40; i++) {
        trc_launch_t l = { .id = i, .func_id = k, .span = { 1, i * 100, i * 100 + 10 } };
        TT_EMIT(trc_emit_launch(w, i * 100, &l));
    }
    TT_EMIT(trc_writer_flush(w));
    data = (unsigned char *)tt_slurp_len(path, &len);
    tt_close(w);
    return path;
}

/* Offset of the record of the n-th event (1-based) in data. */
static size_t record_offset(int n)
{
    trc_reader_t *r;
    trc_event_t ev = { 0 };
    if (trc_reader_open_mem(data, len, &r) < 0)
        exit(1);
    for (int i = 0; i < n && trc_reader_next(r, &ev) == 1; i++)
        ;
    trc_reader_close(r);
    return (size_t)ev.offset;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void no_end(void)
{
    const char *p = tt_write_file("noend.trace", data, len);
    tt_result_t r = tt_run("summary", p, NULL);
    TT_CHECK("exit status without END", 0, r.status);
    TT_CHECK("warning lines", 1, lines(r.err));
    TT_LINE(r.err, "elixir-trace: warning: ", p, "no END record", "40 events");
    TT_LINE(r.out, "40 events", "not closed (no END record)");
    TT_LINE(r.out, "step");
    tt_free(&r);
}

/* `kernels --partial --json` on a damaged copy: the launches before `off` are all there. */
static void damaged(const char *name, const void *bytes, size_t n, size_t off, int before,
                    const char *reason)
{
    char where[64], want[16];
    const char *p = tt_write_file(name, bytes, n);
    snprintf(where, sizeof(where), "offset %zu: ", off);
    snprintf(want, sizeof(want), "[%d]", before);
    tt_result_t r = tt_run("kernels", p, "--json", NULL);
    TT_CHECK("exit status without --partial", 2, r.status);
    TT_LINE(r.err, p, where, reason);
    tt_free(&r);
    r = tt_run("kernels", p, "--json", "--partial", NULL);
    TT_CHECK("exit status with --partial", 0, r.status);
    TT_CHECK("warning lines", 1, lines(r.err));
    TT_LINE(r.err, "elixir-trace: warning: ", p, where, reason, "loaded the");
    TT_JSON(r.out, "[k['launches'] for k in d['kernels']]", want);
    tt_free(&r);
    r = tt_run("summary", p, "--partial", NULL);
    TT_LINE(r.out, "partial");
    tt_free(&r);
}

int main(void)
{
    tt_init();
    const char *whole = make_trace();
    tt_result_t r = tt_run("summary", whole, "--partial", NULL);
    TT_CHECK("exit status of a whole trace", 0, r.status);
    TT_CHECK("stderr of a whole trace", 0, strlen(r.err));
    tt_free(&r);
    no_end();
    size_t at = record_offset(25);     /* the 25th launch's record */
    damaged("cut.trace", data, at + 3, at, 24, "beyond end of file");
    unsigned char *bad = malloc(len);
    if (!bad)
        exit(1);
    memcpy(bad, data, len);
    memset(bad + at + 1, 0xff, 11);    /* its length: an overlong varint */
    damaged("corrupt.trace", bad, len, at, 24, "overlong varint");
    free(bad);
    r = tt_run("summary", tt_write_file("foreign.trace", "GIF89a....", 10), "--partial", NULL);
    TT_CHECK("exit status of a foreign file with --partial", 2, r.status);
    TT_LINE(r.err, "not an Elixir trace");
    tt_free(&r);
    return tt_done();
}
