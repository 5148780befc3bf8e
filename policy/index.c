/* SPDX-License-Identifier: MIT */
/*
 * index.c - the chunk-level view of one iteration that planning, replay and verification
 * share: global chunk numbers, the uses of each operation, and next-use links.
 *
 * A buffer's life.  A buffer allocated before the iteration and alive after it (born and
 * dies both -1) is permanent.  Any other lives from operation born to operation dies
 * inclusive, born anew each iteration with no contents: dies < born means a life that runs
 * across the iteration's end (allocated at born, freed at dies of the next iteration), and
 * dies == -1 with born >= 0 is taken as dies = born - 1 (modulo nops): the buffer is replaced
 * by the next iteration's at born.  born == -1 with dies >= 0 cannot repeat and is refused by
 * pol_input_check.  Next-use links never cross a death: the last use of a life has none, or,
 * for a life alive at the iteration's end, the first use of the next iteration that still
 * belongs to it.  All of it is O(nops + nrefs + nchunks + uses).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pol_int.h"

void pol_index_free(pol_index_t *ix)
{
    free(ix->chunk_base);
    free(ix->chunk_buf);
    free(ix->chunk_slot);
    free(ix->op_use);
    free(ix->use_chunk);
    free(ix->use_op);
    free(ix->use_acc);
    free(ix->use_next);
    free(ix->use_next_op);
    free(ix->op_run);
    free(ix->run_chunk);
    free(ix->run_n);
    free(ix->chunk_first);
    free(ix->chunk_born_use);
    free(ix->buf_wrap);
    free(ix->buf_nvme);
    free(ix->born_first);
    free(ix->born_list);
    free(ix->dies_first);
    free(ix->dies_list);
    free(ix->life_born);
    free(ix->life_dies);
    memset(ix, 0, sizeof(*ix));
}

int pol_buf_alive(const pol_input_t *in, const pol_index_t *ix, uint32_t b, uint32_t op)
{
    uint32_t lb = ix->life_born[b], ld = ix->life_dies[b];
    if (ix->buf_wrap[b] == 0)
        return 1;
    if (ix->buf_wrap[b] == 1)
        return op >= lb && op <= ld;
    return op >= lb || op <= ld;
}

/* Lives of the buffers and the birth / death lists by operation (CSR). */
static int index_lives(const pol_input_t *in, pol_index_t *ix)
{
    uint32_t n = ix->nops, nb = ix->nbufs;
    ix->buf_wrap = calloc(nb ? nb : 1, 1);
    ix->life_born = calloc(nb ? nb : 1, sizeof(uint32_t));
    ix->life_dies = calloc(nb ? nb : 1, sizeof(uint32_t));
    ix->born_first = calloc(n + 2, sizeof(uint32_t));
    ix->dies_first = calloc(n + 2, sizeof(uint32_t));
    ix->born_list = calloc(nb ? nb : 1, sizeof(uint32_t));
    ix->dies_list = calloc(nb ? nb : 1, sizeof(uint32_t));
    if (!ix->buf_wrap || !ix->life_born || !ix->life_dies || !ix->born_first ||
        !ix->dies_first || !ix->born_list || !ix->dies_list)
        return -ENOMEM;
    for (uint32_t b = 0; b < nb; b++) {
        const pol_buf_t *bf = &in->bufs[b];
        if (bf->born < 0)
            continue;
        uint32_t lb = (uint32_t)bf->born;
        uint32_t ld = bf->dies >= 0 ? (uint32_t)bf->dies : (lb + n - 1) % n;
        ix->life_born[b] = lb;
        ix->life_dies[b] = ld;
        ix->buf_wrap[b] = ld >= lb ? 1 : 2;
        ix->born_first[lb + 1]++;
        ix->dies_first[ld + 1]++;
    }
    for (uint32_t i = 0; i < n; i++) {
        ix->born_first[i + 1] += ix->born_first[i];
        ix->dies_first[i + 1] += ix->dies_first[i];
    }
    uint32_t *bp = calloc(n + 1, sizeof(uint32_t)), *dp = calloc(n + 1, sizeof(uint32_t));
    if (!bp || !dp) {
        free(bp);
        free(dp);
        return -ENOMEM;
    }
    for (uint32_t b = 0; b < nb; b++) {
        if (!ix->buf_wrap[b])
            continue;
        uint32_t lb = ix->life_born[b], ld = ix->life_dies[b];
        ix->born_list[ix->born_first[lb] + bp[lb]++] = b;
        ix->dies_list[ix->dies_first[ld] + dp[ld]++] = b;
    }
    free(bp);
    free(dp);
    return 0;
}

/* Global chunk numbers: chunk_base and chunk_buf. */
static int index_chunks(const pol_input_t *in, pol_index_t *ix)
{
    uint64_t c = 0, ch = in->m.chunk;
    ix->chunk_base = malloc((ix->nbufs + 1) * sizeof(uint64_t));
    if (!ix->chunk_base)
        return -ENOMEM;
    for (uint32_t b = 0; b < ix->nbufs; b++) {
        ix->chunk_base[b] = c;
        c += pol_chunks_of(in->bufs[b].bytes, ch);
    }
    ix->chunk_base[ix->nbufs] = c;
    ix->nchunks = c;
    ix->chunk_buf = malloc((c ? c : 1) * sizeof(uint32_t));
    if (!ix->chunk_buf)
        return -ENOMEM;
    for (uint32_t b = 0; b < ix->nbufs; b++)
        for (uint64_t k = ix->chunk_base[b]; k < ix->chunk_base[b + 1]; k++)
            ix->chunk_buf[k] = b;
    return 0;
}

static int slot_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0;
}

/* Dense numbers for the addresses of the chunks of buffers born or dying in the iteration
 * (pol_buf_t.slot): chunks at one address share a number. */
static int index_slots(const pol_input_t *in, pol_index_t *ix)
{
    uint64_t n = 0, c = ix->nchunks ? ix->nchunks : 1;
    uint64_t (*pair)[2] = malloc(c * sizeof(*pair));
    ix->chunk_slot = malloc(c * sizeof(uint32_t));
    if (!pair || !ix->chunk_slot) {
        free(pair);
        return -ENOMEM;
    }
    for (uint32_t b = 0; b < ix->nbufs; b++) {
        const pol_buf_t *bf = &in->bufs[b];
        int moves = bf->born >= 0 || bf->dies >= 0;
        for (uint64_t k = ix->chunk_base[b]; k < ix->chunk_base[b + 1]; k++) {
            ix->chunk_slot[k] = UINT32_MAX;
            if (moves && bf->slot) {
                pair[n][0] = bf->slot + (k - ix->chunk_base[b]);
                pair[n++][1] = k;
            }
        }
    }
    qsort(pair, n, sizeof(*pair), slot_cmp);
    for (uint64_t i = 0; i < n; i++) {
        ix->nslots += i == 0 || pair[i][0] != pair[i - 1][0];
        ix->chunk_slot[pair[i][1]] = ix->nslots - 1;
    }
    free(pair);
    return 0;
}

/* Expand references into uses, one per operation and chunk (accesses merged); POL_NEAR ones
 * as the others when `near`, else not at all.  `last` is nchunks of scratch: the latest use of
 * each chunk.  -EINVAL for a reference outside its buffer's life. */
static int index_uses(const pol_input_t *in, pol_index_t *ix, uint64_t *last, int near)
{
    uint64_t total = 0;                 /* (operations may share references) */
    for (uint32_t i = 0; i < ix->nops; i++)
        for (uint32_t r = in->ops[i].ref; r < in->ops[i].ref + in->ops[i].nref; r++)
            total += in->refs[r].nchunks;
    ix->op_use = malloc((ix->nops + 1) * sizeof(uint64_t));
    ix->use_chunk = malloc((total ? total : 1) * sizeof(uint32_t));
    ix->use_op = malloc((total ? total : 1) * sizeof(uint32_t));
    ix->use_acc = malloc(total ? total : 1);
    if (!ix->op_use || !ix->use_chunk || !ix->use_op || !ix->use_acc)
        return -ENOMEM;
    uint64_t u = 0;
    for (uint32_t i = 0; i < ix->nops; i++) {
        const pol_op_t *op = &in->ops[i];
        ix->op_use[i] = u;
        for (uint32_t r = op->ref; r < op->ref + op->nref; r++) {
            const pol_ref_t *rf = &in->refs[r];
            uint8_t acc = rf->access & ~POL_NEAR;
            if (!pol_buf_alive(in, ix, rf->buf, i))
                return -EINVAL;
            if ((rf->access & POL_NEAR) && !near)
                continue;
            for (uint32_t k = 0; k < rf->nchunks; k++) {
                uint64_t c = ix->chunk_base[rf->buf] + rf->chunk + k;
                if (last[c] != POL_INF && last[c] >= ix->op_use[i]) {
                    ix->use_acc[last[c]] |= acc;
                    continue;
                }
                ix->use_chunk[u] = (uint32_t)c;
                ix->use_op[u] = i;
                ix->use_acc[u] = acc;
                last[c] = u++;
            }
        }
    }
    ix->op_use[ix->nops] = u;
    ix->nuses = u;
    return 0;
}

/* Each operation's uses as runs of consecutive chunks (the cost model's view): op_run,
 * run_chunk, run_n. */
static int index_runs(pol_index_t *ix)
{
    uint64_t nr = 0, nu = ix->nuses;
    for (uint64_t u = 0; u < nu; u++)
        nr += u == 0 || ix->use_op[u] != ix->use_op[u - 1] ||
              ix->use_chunk[u] != ix->use_chunk[u - 1] + 1;
    ix->op_run = malloc((ix->nops + 1) * sizeof(uint64_t));
    ix->run_chunk = malloc((nr ? nr : 1) * sizeof(uint32_t));
    ix->run_n = malloc((nr ? nr : 1) * sizeof(uint32_t));
    if (!ix->op_run || !ix->run_chunk || !ix->run_n)
        return -ENOMEM;
    uint64_t r = 0;
    for (uint32_t i = 0; i < ix->nops; i++) {
        ix->op_run[i] = r;
        for (uint64_t u = ix->op_use[i]; u < ix->op_use[i + 1]; u++) {
            if (u > ix->op_use[i] && ix->use_chunk[u] == ix->use_chunk[u - 1] + 1) {
                ix->run_n[r - 1]++;
                continue;
            }
            ix->run_chunk[r] = ix->use_chunk[u];
            ix->run_n[r++] = 1;
        }
    }
    ix->op_run[ix->nops] = r;
    return 0;
}

/* Do the uses at ops a < b of buffer bf belong to one life? */
static int same_life(const pol_index_t *ix, uint32_t bf, uint32_t a, uint32_t b)
{
    return ix->buf_wrap[bf] != 2 || !(a <= ix->life_dies[bf] && b >= ix->life_born[bf]);
}

/* Next-use links and each chunk's first uses.  `last` is scratch as in index_uses. */
static int index_links(pol_index_t *ix, uint64_t *last)
{
    uint64_t nu = ix->nuses, nc = ix->nchunks;
    ix->use_next = malloc((nu ? nu : 1) * sizeof(uint64_t));
    ix->chunk_first = malloc((nc ? nc : 1) * sizeof(uint64_t));
    ix->chunk_born_use = malloc((nc ? nc : 1) * sizeof(uint64_t));
    uint64_t *first = malloc((nc ? nc : 1) * sizeof(uint64_t));
    if (!ix->use_next || !ix->chunk_first || !ix->chunk_born_use || !first) {
        free(first);
        return -ENOMEM;
    }
    for (uint64_t c = 0; c < nc; c++)
        last[c] = first[c] = ix->chunk_first[c] = ix->chunk_born_use[c] = POL_INF;
    for (uint64_t u = 0; u < nu; u++) {
        uint32_t c = ix->use_chunk[u], bf = ix->chunk_buf[c], op = ix->use_op[u];
        ix->use_next[u] = POL_INF;
        if (first[c] == POL_INF)
            first[c] = u;
        if (last[c] != POL_INF && same_life(ix, bf, ix->use_op[last[c]], op))
            ix->use_next[last[c]] = u;
        if (ix->buf_wrap[bf] && ix->chunk_born_use[c] == POL_INF && op >= ix->life_born[bf])
            ix->chunk_born_use[c] = u;
        last[c] = u;
    }
    for (uint64_t c = 0; c < nc; c++) {
        if (first[c] == POL_INF)
            continue;
        uint32_t bf = ix->chunk_buf[c], f_op = ix->use_op[first[c]];
        uint8_t w = ix->buf_wrap[bf];
        int first_old = w == 0 || (w == 2 && f_op <= ix->life_dies[bf]);
        if (first_old)
            ix->chunk_first[c] = first[c];
        /* The last use links to the next iteration's first when one life spans both. */
        if (w == 0 || (w == 2 && first_old && ix->use_op[last[c]] >= ix->life_born[bf]))
            ix->use_next[last[c]] = first[c] + nu;
        if (w == 2 && ix->chunk_born_use[c] == POL_INF && first_old)
            ix->chunk_born_use[c] = first[c] + nu;
    }
    free(first);
    ix->use_next_op = malloc((nu ? nu : 1) * sizeof(uint32_t));
    if (!ix->use_next_op)
        return -ENOMEM;
    for (uint64_t u = 0; u < nu; u++)
        ix->use_next_op[u] = ix->use_next[u] == POL_INF ? UINT32_MAX
                                                        : ix->use_op[ix->use_next[u] % nu];
    return 0;
}

int pol_has_near(const pol_input_t *in)
{
    for (size_t r = 0; r < in->nrefs; r++)
        if (in->refs[r].access & POL_NEAR)
            return 1;
    return 0;
}

int pol_index_build(const pol_input_t *in, pol_index_t *ix, int near)
{
    memset(ix, 0, sizeof(*ix));
    ix->nops = (uint32_t)in->nops;
    ix->nbufs = (uint32_t)in->nbufs;
    for (int t = 0; t < POL_NTIERS; t++)
        ix->cap[t] = in->m.cap[t] / in->m.chunk;
    ix->gpu_cap = ix->cap[POL_GPU];
    ix->near_refs = (uint8_t)pol_has_near(in);
    int rc = index_lives(in, ix);
    if (!rc)
        rc = index_chunks(in, ix);
    if (!rc)
        rc = index_slots(in, ix);
    uint64_t *last = NULL;
    if (!rc) {
        last = malloc((ix->nchunks ? ix->nchunks : 1) * sizeof(uint64_t));
        if (!last)
            rc = -ENOMEM;
        for (uint64_t c = 0; last && c < ix->nchunks; c++)
            last[c] = POL_INF;
    }
    if (!rc)
        rc = index_uses(in, ix, last, near);
    if (!rc)
        rc = index_links(ix, last);
    if (!rc)
        rc = index_runs(ix);
    free(last);
    if (!rc && !(ix->buf_nvme = malloc(ix->nbufs ? ix->nbufs : 1)))
        rc = -ENOMEM;
    for (uint32_t b = 0; !rc && b < ix->nbufs; b++)
        ix->buf_nvme[b] = in->bufs[b].nvme_ok;
    for (size_t r = 0; !rc && !near && r < in->nrefs; r++)
        if (in->refs[r].access & POL_NEAR)
            ix->buf_nvme[in->refs[r].buf] = 0;  /* (reached where it is) */
    if (!rc) {
        uint64_t crossing = pol_forced_chunks(in, ix), least = pol_least_fetches(in, ix);
        ix->forced = crossing > least ? crossing : least;
        ix->forced_out = pol_least_writebacks(in, ix);
    }
    if (!rc && near && ix->near_refs) {
        /* (the bound is the lesser of this one and that of the plans that leave POL_NEAR uses
         * out: usually theirs, but POL_NEAR uses can make an operation reach more than the GPU
         * holds, and its uses in place count for neither bound) */
        pol_index_t lo;
        if ((rc = pol_index_build(in, &lo, 0)) == 0) {
            ix->forced = lo.forced < ix->forced ? lo.forced : ix->forced;
            ix->forced_out = lo.forced_out < ix->forced_out ? lo.forced_out : ix->forced_out;
            pol_index_free(&lo);
        }
    }
    if (rc)
        pol_index_free(ix);
    return rc;
}

/* The GPU chunks operation i needs at once: its own chunks and the pinned ones alive
 * (pinned lives counted over a difference array), the most over all operations. */
uint64_t pol_min_gpu_chunks(const pol_input_t *in, const pol_index_t *ix, const uint8_t *pin)
{
    uint32_t n = ix->nops;
    int64_t *d = calloc(n + 1, sizeof(int64_t));
    if (!d)
        return POL_INF;
    for (uint32_t b = 0; b < ix->nbufs; b++) {
        int64_t k = (int64_t)(ix->chunk_base[b + 1] - ix->chunk_base[b]);
        uint32_t lb = ix->life_born[b], ld = ix->life_dies[b];
        if (!pin[b])
            continue;
        if (ix->buf_wrap[b] == 0)
            d[0] += k, d[n] -= k;
        else if (ix->buf_wrap[b] == 1)
            d[lb] += k, d[ld + 1] -= k;
        else
            d[lb] += k, d[n] -= k, d[0] += k, d[ld + 1] -= k;
    }
    uint64_t worst = 0;
    int64_t run = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t need = 0;
        run += d[i];
        for (uint64_t u = ix->op_use[i]; u < ix->op_use[i + 1] && !pol_op_in_place(ix, i); u++)
            need += !pin[ix->chunk_buf[ix->use_chunk[u]]];
        if (need + (uint64_t)run > worst)
            worst = need + (uint64_t)run;
    }
    free(d);
    return worst;
}
