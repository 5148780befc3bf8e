/* SPDX-License-Identifier: MIT */
/*
 * graph_capture.c - stream capture of a kernel, a device-to-device copy, a memset and a copy
 * from pageable host memory: nothing runs while capturing, the capture status queries report
 * the capture, the graph has one node of the right type per operation in a chain, the kernel
 * node returns the launch's parameters and private copies of its arguments, and the
 * instantiated graph launched three times redoes the work each time, reading the host buffer
 * as it is when the launch runs.
 */
#define ST_KERNEL_ADD_CONST

#include <string.h>

#include "simtest.h"

#define N 1024
#define HEAD 16

static const char ptx[] = ST_PTX_HEADER ST_PTX_ADD_CONST;

static void expect_status(CUstream s, CUstreamCaptureStatus want)
{
    CUstreamCaptureStatus st;
    CHECK_CU(cuStreamIsCapturing(s, &st));
    EXPECT(st == want, "capture status %d, expected %d", (int)st, (int)want);
}

/* Capture: add 2 to a, copy a to b, set b's head to 5.0f, copy the pageable src into c. */
static CUgraph capture(CUstream s, CUfunction f, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                       const float *src, CUgraphNode *kernel_node)
{
    CUstreamCaptureStatus st;
    cuuint64_t id;
    CUgraph g, g_seen;
    const CUgraphNode *deps;
    const CUgraphEdgeData *edges;
    size_t ndeps;
    unsigned n = N;
    float v = 2.0f, five = 5.0f;
    unsigned bits;
    void *args[] = { &a, &n, &v };

    expect_status(s, CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    expect_status(s, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_CU(cuStreamGetCaptureInfo(s, &st, &id, &g_seen, &deps, &edges, &ndeps));
    EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && g_seen && ndeps == 0,
           "capture info: status %d id %llu graph %p deps %zu", (int)st, (unsigned long long)id,
           (void *)g_seen, ndeps);
    CHECK_CU(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 128, s, args, NULL));
    v = -1.0f;      /* the capture holds its own copy of the arguments */
    CHECK_CU(cuStreamGetCaptureInfo(s, &st, NULL, NULL, &deps, &edges, &ndeps));
    EXPECT(ndeps == 1 && deps[0], "after the kernel: %zu dependencies", ndeps);
    *kernel_node = deps[0];
    CHECK_CU(cuMemcpyDtoDAsync(b, a, N * sizeof(float), s));
    memcpy(&bits, &five, sizeof(bits));
    CHECK_CU(cuMemsetD32Async(b, bits, HEAD, s));
    CHECK_CU(cuMemcpyHtoDAsync(c, src, N * sizeof(float), s));
    CHECK_CU(cuStreamEndCapture(s, &g));
    EXPECT(g == g_seen, "end capture returned %p, capture info said %p", (void *)g,
           (void *)g_seen);
    expect_status(s, CU_STREAM_CAPTURE_STATUS_NONE);
    return g;
}

static void check_nodes(CUgraph g, CUfunction f, CUdeviceptr a, CUdeviceptr b,
                        CUgraphNode kernel_node)
{
    static const CUgraphNodeType want[] = { CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_MEMCPY,
                                            CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_MEMCPY };
    CUgraphNode nodes[6], roots[2];
    size_t n = 0, nroots = 2;

    CHECK_CU(cuGraphGetNodes(g, NULL, &n));
    EXPECT(n == 4, "graph has %zu nodes, expected 4", n);
    n = 6;
    CHECK_CU(cuGraphGetNodes(g, nodes, &n));
    EXPECT(n == 4 && !nodes[4] && !nodes[5], "filled %zu nodes", n);
    for (size_t i = 0; i < 4; i++) {
        CUgraphNodeType t;
        CHECK_CU(cuGraphNodeGetType(nodes[i], &t));
        EXPECT(t == want[i], "node %zu has type %d, expected %d", i, (int)t, (int)want[i]);
    }
    EXPECT(nodes[0] == kernel_node, "first node is not the captured kernel");
    CHECK_CU(cuGraphGetRootNodes(g, roots, &nroots));
    EXPECT(nroots == 1 && roots[0] == kernel_node, "%zu root nodes", nroots);

    CUDA_KERNEL_NODE_PARAMS kp;
    CHECK_CU(cuGraphKernelNodeGetParams(kernel_node, &kp));
    EXPECT(kp.func == f, "kernel node function %p, expected %p", (void *)kp.func, (void *)f);
    EXPECT(kp.gridDimX == 4 && kp.gridDimY == 1 && kp.blockDimX == 256 && kp.blockDimZ == 1 &&
           kp.sharedMemBytes == 128, "dims %u %u / %u %u / shared %u", kp.gridDimX, kp.gridDimY,
           kp.blockDimX, kp.blockDimZ, kp.sharedMemBytes);
    EXPECT(kp.kernelParams && !kp.extra, "kernelParams %p extra %p", (void *)kp.kernelParams,
           (void *)kp.extra);
    EXPECT(*(CUdeviceptr *)kp.kernelParams[0] == a && *(unsigned *)kp.kernelParams[1] == N &&
           *(float *)kp.kernelParams[2] == 2.0f, "arguments 0x%llx %u %f",
           (unsigned long long)*(CUdeviceptr *)kp.kernelParams[0],
           *(unsigned *)kp.kernelParams[1], *(float *)kp.kernelParams[2]);

    CUDA_MEMCPY3D cp;
    CHECK_CU(cuGraphMemcpyNodeGetParams(nodes[1], &cp));
    EXPECT(cp.srcMemoryType == CU_MEMORYTYPE_DEVICE && cp.srcDevice == a &&
           cp.dstMemoryType == CU_MEMORYTYPE_DEVICE && cp.dstDevice == b &&
           cp.WidthInBytes == N * sizeof(float) && cp.Height == 1 && cp.Depth == 1,
           "memcpy node: src 0x%llx dst 0x%llx width %zu", (unsigned long long)cp.srcDevice,
           (unsigned long long)cp.dstDevice, cp.WidthInBytes);
    CUDA_MEMSET_NODE_PARAMS mp;
    CHECK_CU(cuGraphMemsetNodeGetParams(nodes[2], &mp));
    EXPECT(mp.dst == b && mp.elementSize == 4 && mp.width == HEAD && mp.height == 1,
           "memset node: dst 0x%llx elem %u width %zu height %zu", (unsigned long long)mp.dst,
           mp.elementSize, mp.width, mp.height);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphKernelNodeGetParams(nodes[1], &kp));
}

static float host_a[N], host_b[N], host_c[N], src[N];

int main(void)
{
    CUdeviceptr a, b, c;
    CUstream s;
    CUgraphNode kernel_node;
    CUgraphExec exec;
    CUmodule mod;
    CUfunction f;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "add_const"));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    CHECK_CU(cuMemAlloc(&a, N * sizeof(float)));
    CHECK_CU(cuMemAlloc(&b, N * sizeof(float)));
    CHECK_CU(cuMemAlloc(&c, N * sizeof(float)));
    for (int i = 0; i < N; i++)
        host_a[i] = (float)i;
    CHECK_CU(cuMemcpyHtoD(a, host_a, sizeof(host_a)));
    CHECK_CU(cuMemsetD32(b, 0, N));

    CUgraph g = capture(s, f, a, b, c, src, &kernel_node);
    CHECK_CU(cuMemcpyDtoH(host_a, a, sizeof(host_a)));
    CHECK_CU(cuMemcpyDtoH(host_b, b, sizeof(host_b)));
    EXPECT(host_a[7] == 7.0f && host_b[7] == 0.0f, "capture executed work: a[7] %f b[7] %f",
           host_a[7], host_b[7]);
    check_nodes(g, f, a, b, kernel_node);

    CHECK_CU(cuGraphInstantiate(&exec, g, 0));
    CHECK_CU(cuGraphUpload(exec, s));
    for (int iter = 1; iter <= 3; iter++) {
        for (int i = 0; i < N; i++)
            src[i] = (float)(iter * 1000 + i);
        CHECK_CU(cuGraphLaunch(exec, s));
        CHECK_CU(cuStreamSynchronize(s));
        CHECK_CU(cuMemcpyDtoH(host_a, a, sizeof(host_a)));
        CHECK_CU(cuMemcpyDtoH(host_b, b, sizeof(host_b)));
        CHECK_CU(cuMemcpyDtoH(host_c, c, sizeof(host_c)));
        for (int i = 0; i < N; i++) {
            float want = (float)i + 2.0f * iter;
            EXPECT(host_a[i] == want, "launch %d: a[%d] = %f, expected %f", iter, i, host_a[i],
                   want);
            EXPECT(host_b[i] == (i < HEAD ? 5.0f : want), "launch %d: b[%d] = %f", iter, i,
                   host_b[i]);
            EXPECT(host_c[i] == src[i], "launch %d: c[%d] = %f, expected %f", iter, i,
                   host_c[i], src[i]);
        }
    }
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(g));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiate(&exec, NULL, 0));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
