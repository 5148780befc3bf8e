/* SPDX-License-Identifier: MIT */
/*
 * shim_res_peer_kernel.c - kernels on one device that dereference another device's arena
 * (peer access).
 *
 * Two simulated devices, a 4 MiB GPU budget each.  On device 1, buffer e1 (2 MiB, filled by
 * kernel).  Device 0's context enables peer access to device 1's; on a stream of its own, a
 * graph captured there that adds 5 to e1 is run, a launch adds 1 to e1, and the graph runs
 * again (the access the capture left must outlast that launch's).  The graph runs while e1 is
 * all device 1 has in use: a graph launch is a fence on every device, which where evicted
 * chunks are unmapped pins all a device has in use.  Then on device 1, buffers a, b and c
 * (2 MiB each, filled by kernel) leave a and b on the host (e1, pinned by the capture, stays).
 * Device 0 launches, on the legacy stream: sh_add on a (evicted: it adds 10 to every word);
 * sh_verify of b into a word on device 0 (a kernel whose parameters are all words, launched
 * before on device 0's own memory: the shim's fast path must give way); sh_add on the middle
 * of c; and on its stream, sh_fill of c's first half.  Last, add_via adds to a, and to f1
 * (allocated on device 1 after the enable), through pointers it loads from device 0's memory,
 * which the shim never sees: it reaches them because the shim mirrors the peer access the
 * application enabled onto device 1's arena, its present mappings and its later ones (with
 * evicted chunks mapped only: where they are unmapped, such a pointer faults, a documented
 * limit).  Then device 0 disables peer access, and has none left to a, b or c.  Each kernel
 * finds its data, and back on device 1 every buffer holds what it should, and a new buffer
 * still pages the others out (nothing stayed held).  The transcript must equal the one
 * without the shim, with evicted chunks mapped (host VMM) and unmapped
 * (ELIXIR_SIM_HOST_VMM=0), and with the race checker failing the run on any race.
 */
#define SH_RES_KERNELS
#define ST_KERNEL_ADD_VIA
#include "shim_test.h"

#define MIB SH_MIB
#define BYTES (2 * MIB)
#define WORDS (BYTES / 4)
#define HALF (WORDS / 2)

static uint32_t host[WORDS];

/* On the current context's legacy stream: add_via with p's address stored in holder. */
static void add_through(CUdeviceptr holder, CUdeviceptr p, uint32_t v)
{
    uint64_t n = WORDS;
    void *args[] = { &holder, &n, &v };

    CHECK_CU(cuMemcpyHtoD(holder, &p, 8));
    CHECK_CU(sh_launch(st_function(ST_PTX_HEADER ST_PTX_ADD_VIA, "add_via"), NULL, args));
    CHECK_CU(cuCtxSynchronize());
}

/* Words [from, to) of p hold sh_pattern(seed, i) + plus (and the others are not looked at). */
static void expect_words(CUdeviceptr p, uint64_t from, uint64_t to, uint32_t seed,
                         uint32_t plus, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(host, p, BYTES));
    for (uint64_t i = from; i < to; i++)
        EXPECT(host[i] == sh_pattern(seed, i) + plus, "%s: word %llu is 0x%08x, expected 0x%08x",
               what, (unsigned long long)i, host[i], sh_pattern(seed, i) + plus);
    printf("%s: words %llu.. hold pattern %u + %u\n", what, (unsigned long long)from, seed,
           plus);
}

static void add(CUfunction f, CUstream s, CUdeviceptr p, uint64_t words, uint32_t v)
{
    void *args[] = { &p, &words, &v };

    CHECK_CU(sh_launch(f, s, args));
}

/* sh_add(e1, WORDS, 5) captured on s and run as a graph; then 1 added to e1 by a launch on
 * s, and the graph run again. */
static void captured_add(CUfunction f, CUstream s, CUdeviceptr e1)
{
    CUgraph g;
    CUgraphExec ge;

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    add(f, s, e1, WORDS, 5);
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphLaunch(ge, s));
    add(f, s, e1, WORDS, 1);
    CHECK_CU(cuGraphLaunch(ge, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuGraphDestroy(g));
}

static void scenario(void)
{
    CUdeviceptr a, b, c, e, e1, f1 = 0, x, bad;
    CUstream s;
    uint32_t wrong = 1;

    CUcontext c1 = st_setup(1);
    CUfunction fill1 = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuMemAlloc(&e1, BYTES));
    CHECK_CU(sh_fill_async(fill1, e1, WORDS, 4, NULL));
    CHECK_CU(cuCtxSynchronize());

    CUcontext c0 = st_setup(0);
    CHECK_CU(cuCtxEnablePeerAccess(c1, 0));
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction verify = st_function(sh_res_ptx, "sh_verify");
    CUfunction addf = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuMemAlloc(&bad, 4));
    CHECK_CU(cuMemAlloc(&x, BYTES));
    CHECK_CU(sh_fill_async(fill, x, WORDS, 9, NULL));
    sh_expect_verified(verify, x, WORDS, 9, bad, "x on device 0");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    captured_add(addf, s, e1);          /* (while e1 is all device 1 has in use) */

    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuMemAlloc(&a, BYTES));
    CHECK_CU(sh_fill_async(fill1, a, WORDS, 1, NULL));
    CHECK_CU(cuMemAlloc(&b, BYTES));
    CHECK_CU(sh_fill_async(fill1, b, WORDS, 2, NULL));
    CHECK_CU(cuMemAlloc(&c, BYTES));
    CHECK_CU(sh_fill_async(fill1, c, WORDS, 3, NULL));
    CHECK_CU(cuCtxSynchronize());

    CHECK_CU(cuCtxSetCurrent(c0));
    add(addf, NULL, a, WORDS, 10);
    CHECK_CU(sh_verify_async(verify, b, WORDS, 2, bad, NULL));
    CHECK_CU(cuMemcpyDtoH(&wrong, bad, 4));
    EXPECT(wrong == 0, "device 0's sh_verify of b on device 1: %u words wrong", wrong);
    printf("b on device 1 verified by a kernel on device 0\n");
    add(addf, NULL, c + BYTES / 2, HALF, 20);
    CHECK_CU(sh_fill_async(fill, c, HALF, 7, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuCtxSynchronize());
    const char *host_vmm = getenv("ELIXIR_SIM_HOST_VMM");
    int via = !host_vmm || strcmp(host_vmm, "0") != 0;
    if (via) {              /* pointers the shim never sees: a, and f1 mapped after the enable */
        CHECK_CU(cuCtxSetCurrent(c1));
        CHECK_CU(cuMemAlloc(&f1, BYTES));
        CHECK_CU(sh_fill_async(fill1, f1, WORDS, 6, NULL));
        CHECK_CU(cuCtxSynchronize());
        CHECK_CU(cuCtxSetCurrent(c0));
        add_through(x, a, 100);
        add_through(x, f1, 3);
        printf("a and f1 on device 1 added to through pointers in device 0's memory\n");
    }
    CHECK_CU(cuCtxDisablePeerAccess(c1));
    sh_expect_no_access(a, 0, "a");
    sh_expect_no_access(b, 0, "b");
    sh_expect_no_access(c, 0, "c");
    CHECK_CU(cuMemFree(x));
    CHECK_CU(cuMemFree(bad));

    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuMemAlloc(&e, BYTES));
    CHECK_CU(sh_fill_async(fill1, e, WORDS, 5, NULL));
    expect_words(e, 0, WORDS, 5, 0, "e, a new buffer on device 1");
    expect_words(a, 0, WORDS, 1, via ? 110 : 10, "a, added to by device 0");
    expect_words(b, 0, WORDS, 2, 0, "b, read by device 0");
    expect_words(c, 0, HALF, 7, 0, "c's first half, filled by device 0");
    expect_words(c, HALF, WORDS, 3, 20, "c's second half, added to by device 0");
    expect_words(e1, 0, WORDS, 4, 11, "e1, added to by a graph on device 0 (twice) and a kernel");
    if (via) {
        expect_words(f1, 0, WORDS, 6, 3, "f1, added to through memory by device 0");
        CHECK_CU(cuMemFree(f1));
    }
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(c));
    CHECK_CU(cuMemFree(e));
    CHECK_CU(cuMemFree(e1));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_two_devices(host_vmm, "ELIXIR_GPU_MEMORY=4M", &plain, &shim);
    EXPECT(sh_migrations_out(shim.err, 1) >= 3,
           "%s: device 1 did not page out (a and b, then for e):\n%s", what, shim.err);
    int pins, fences;
    sh_pins(shim.err, 1, &pins, &fences);
    EXPECT(pins == 1 && fences == 0, "%s: %d pins (fences %d) on device 1, expected e1's only:"
           "\n%s", what, pins, fences, shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
