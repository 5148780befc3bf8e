/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_nccl.c - NCCL calls end to end: program -> trace -> elixir-trace.
 *
 * The scenario (under the shim, recording) makes two ranks on two devices with
 * ncclCommInitAll and, in groups, all-reduces rank r's A into its B (1024 floats), broadcasts
 * B from rank 1, and sends rank 0's A to rank 1's B; it prints each rank's A and B and its
 * communicator.  The test finds exactly six NCCL records, in call order, each with its
 * operation name, buffers, size in bytes, root or peer, communicator, device and a stream
 * other than the legacy one; then `elixir-trace summary` must count them by operation and
 * `elixir-trace timeline --chrome` must show them by name.
 */

#include "nccl_test.h"
#include "shim_trace_test.h"

#define N 2
#define COUNT 1024
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void scenario(void)
{
    nt_rank_t rk[N];

    nt_ranks_all(rk, N, COUNT * sizeof(float));
    NT_EACH_RANK(r, N,
                 ncclAllReduce((void *)rk[r].a, (void *)rk[r].b, COUNT, ncclFloat, ncclSum,
                               rk[r].comm, rk[r].stream));
    NT_EACH_RANK(r, N,
                 ncclBroadcast((void *)rk[r].b, (void *)rk[r].b, COUNT, ncclFloat, 1, rk[r].comm,
                               rk[r].stream));
    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclSend((void *)rk[0].a, COUNT, ncclFloat, 1, rk[0].comm, rk[0].stream));
    CHECK_NCCL(ncclRecv((void *)rk[1].b, COUNT, ncclFloat, 0, rk[1].comm, rk[1].stream));
    CHECK_NCCL(ncclGroupEnd());
    for (int r = 0; r < N; r++)
        printf("rank %d a %llu b %llu comm %llu\n", r, (unsigned long long)rk[r].a,
               (unsigned long long)rk[r].b, (unsigned long long)(uintptr_t)rk[r].comm);
    nt_ranks_free(rk, N);
}

typedef struct want {
    const char *op;
    int rank;                       /* whose call: device and communicator */
    int send, recv;                 /* 'a' or 'b' of that rank; 0: none */
    int peer;
} want_t;

static const want_t wants[] = {
    { "allReduce", 0, 'a', 'b', -1 }, { "allReduce", 1, 'a', 'b', -1 },
    { "broadcast", 0, 'b', 'b', 1 },  { "broadcast", 1, 'b', 'b', 1 },
    { "send", 0, 'a', 0, 1 },         { "recv", 1, 0, 'b', 0 },
};

static void check_records(const tt_trace_t *t, const char *out)
{
    unsigned long long a[N], b[N], comm[N];
    for (int r = 0; r < N; r++) {
        char key[16];
        snprintf(key, sizeof(key), "rank %d a ", r);
        const char *line = strstr(out, key);
        EXPECT(line && sscanf(line + strlen(key), "%llu b %llu comm %llu", &a[r], &b[r],
                              &comm[r]) == 3, "rank %d's line missing from:\n%s", r, out);
    }
    size_t n = tt_count(t, TRC_EV_NCCL);
    EXPECT(n == ARRAY_LEN(wants), "%zu NCCL records, expected %zu", n,
           ARRAY_LEN(wants));
    for (size_t i = 0; i < n; i++) {
        const trc_nccl_t *c = &tt_nth(t, TRC_EV_NCCL, i)->u.nccl;
        const want_t *w = &wants[i];
        uint64_t send = w->send == 'a' ? a[w->rank] : w->send == 'b' ? b[w->rank] : 0;
        uint64_t recv = w->recv == 'a' ? a[w->rank] : w->recv == 'b' ? b[w->rank] : 0;
        EXPECT(c->op && strcmp(c->op, w->op) == 0, "record %zu: op '%s', expected '%s'", i,
               c->op ? c->op : "(none)", w->op);
        EXPECT(c->send == send && c->recv == recv && c->bytes == COUNT * sizeof(float),
               "record %zu (%s): send 0x%llx recv 0x%llx bytes %llu", i, w->op,
               (unsigned long long)c->send, (unsigned long long)c->recv,
               (unsigned long long)c->bytes);
        EXPECT(c->peer == w->peer && c->device == w->rank && c->comm == comm[w->rank] &&
               c->stream != 0, "record %zu (%s): peer %d device %d comm 0x%llx stream %llu", i,
               w->op, c->peer, c->device, (unsigned long long)c->comm,
               (unsigned long long)c->stream);
    }
}

/* `summary` counts the calls by operation; `timeline --chrome` names each of them. */
static void check_tool(const char *trace)
{
    char out[256], json[256];
    snprintf(out, sizeof(out), "%s.out", trace);
    snprintf(json, sizeof(json), "%s.json", trace);
    const char *summary[] = { "summary", trace, NULL };
    const char *text = tt_tool(summary, out, out);
    static const char *const rows[] = { "nccl calls  6\n", "  allReduce              2",
                                        "  broadcast              2", "  send                   1",
                                        "  recv                   1" };
    for (size_t i = 0; i < ARRAY_LEN(rows); i++)
        EXPECT(strstr(text, rows[i]), "the summary lacks '%s':\n%s", rows[i], text);
    const char *timeline[] = { "timeline", "--chrome", json, trace, NULL };
    text = tt_tool(timeline, out, json);
    unlink(out);
    static const char *const names[] = { "\"allReduce\"", "\"broadcast\"", "\"send\"",
                                         "\"recv\"" };
    for (size_t i = 0; i < ARRAY_LEN(names); i++)
        EXPECT(strstr(text, names[i]), "the Chrome timeline does not name %s", names[i]);
}

int main(int argc, char **argv)
{
    tt_trace_t t;

    sh_scenario_child(argc, argv, scenario);
    setenv("ELIXIR_SIM_DEVICES", "2", 1);
    const char *path = tt_path("nccl", 0);          /* the one tt_record_scenario records */
    sh_run_t r = tt_record_scenario("nccl", 0, &t);
    check_records(&t, r.out);
    check_tool(path);
    printf("%zu NCCL records as called; the summary counts them, the timeline names them\n",
           tt_count(&t, TRC_EV_NCCL));
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
