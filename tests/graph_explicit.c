/* SPDX-License-Identifier: MIT */
/*
 * graph_explicit.c - a graph built node by node: kernel nodes (kernelParams and `extra`
 * forms), memset, empty, memcpy and host nodes joined by dependencies given at creation and
 * with cuGraphAddDependencies.  Checks the edge queries, the parameter queries, that changing
 * a node's parameters affects later instantiations only, that cuGraphExecKernelNodeSetParams
 * affects only the executable graph, that invalid edges are refused and that a cycle fails
 * instantiation with the offending node reported.  An `extra` buffer size with a struct's tail
 * padding (more than the parameters) is CUDA_ERROR_INVALID_VALUE, as the real driver says.
 */
#define ST_KERNEL_ADD_CONST

#include <stddef.h>
#include <string.h>

#include "simtest.h"

#define N 256

static const char ptx[] =
    ST_PTX_HEADER ST_PTX_ADD_CONST
    ".visible .entry add_into(.param .u64 dst, .param .u64 src, .param .u32 n)\n{\n ret;\n}\n";

/* dst[i] += src[i] */
SIM_KERNEL void add_into(const sim_launch_t *l, void **params)
{
    float *dst = *(float **)params[0];
    const float *src = *(const float **)params[1];
    unsigned n = *(unsigned *)params[2];
    for (unsigned i = 0; i < n; i++)
        dst[i] += src[i];
    sim_kernel_access(dst, n * sizeof(float), SIM_ACCESS_READWRITE);
    sim_kernel_access(src, n * sizeof(float), SIM_ACCESS_READ);
}

static int host_calls;
static float host_seen;

static void on_host(void *data)
{
    host_calls++;
    host_seen = *(const float *)data;   /* pinned host memory written by the memcpy node */
}

typedef struct nodes {
    CUgraphNode k1, mset, k2, empty, copy, host;
} nodes_t;

static CUDA_KERNEL_NODE_PARAMS kparams(CUfunction f, void **args, void **extra)
{
    CUDA_KERNEL_NODE_PARAMS p = { 0 };
    p.func = f;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 128;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = args;
    p.extra = extra;
    return p;
}

/*
 * k1: a += 1            (root)
 * mset: b = 3.0f        (root)
 * k2: b += a  (extra)   after mset, and k1 through cuGraphAddDependencies
 * empty                 after k1, k2
 * copy: out[0..N) = b   after empty
 * host: reads out[0]    after copy
 */
static void build(CUgraph g, CUfunction add_const_f, CUfunction add_into_f, CUdeviceptr a,
                  CUdeviceptr b, float *out, nodes_t *nd)
{
    unsigned n = N, bits;
    float one = 1.0f, three = 3.0f;
    void *args1[] = { &a, &n, &one };
    CUDA_KERNEL_NODE_PARAMS p1 = kparams(add_const_f, args1, NULL);
    CHECK_CU(cuGraphAddKernelNode(&nd->k1, g, NULL, 0, &p1));

    memcpy(&bits, &three, sizeof(bits));
    CUDA_MEMSET_NODE_PARAMS ms = { b, 0, bits, 4, N, 1 };
    CHECK_CU(cuGraphAddMemsetNode(&nd->mset, g, NULL, 0, &ms, NULL));

    struct add_into_args { CUdeviceptr dst, src; unsigned n; } buf = { b, a, N };
    size_t size = sizeof(buf);      /* with tail padding: more than the parameters */
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                      CU_LAUNCH_PARAM_END };
    CUDA_KERNEL_NODE_PARAMS p2 = kparams(add_into_f, NULL, extra);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode(&nd->k2, g, &nd->mset, 1, &p2));
    size = offsetof(struct add_into_args, n) + sizeof(buf.n);
    CHECK_CU(cuGraphAddKernelNode(&nd->k2, g, &nd->mset, 1, &p2));
    CHECK_CU(cuGraphAddDependencies(g, &nd->k1, &nd->k2, NULL, 1));

    CUgraphNode both[] = { nd->k1, nd->k2 };
    CHECK_CU(cuGraphAddEmptyNode(&nd->empty, g, both, 2));

    CUDA_MEMCPY3D cp = { 0 };
    cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.srcDevice = b;
    cp.dstMemoryType = CU_MEMORYTYPE_HOST;
    cp.dstHost = out;
    cp.WidthInBytes = N * sizeof(float);
    cp.Height = cp.Depth = 1;
    CHECK_CU(cuGraphAddMemcpyNode(&nd->copy, g, &nd->empty, 1, &cp, NULL));

    CUDA_HOST_NODE_PARAMS hp = { on_host, out };
    CHECK_CU(cuGraphAddHostNode(&nd->host, g, &nd->copy, 1, &hp));
}

static void check_structure(CUgraph g, const nodes_t *nd, CUdeviceptr a, CUdeviceptr b)
{
    CUgraphNode list[4], from[8], to[8];
    size_t n = 4;
    CHECK_CU(cuGraphGetRootNodes(g, list, &n));
    EXPECT(n == 2 && list[0] == nd->k1 && list[1] == nd->mset, "%zu roots", n);
    n = 0;
    CHECK_CU(cuGraphGetEdges(g, NULL, NULL, NULL, &n));
    EXPECT(n == 6, "%zu edges, expected 6", n);
    n = 8;
    CHECK_CU(cuGraphGetEdges(g, from, to, NULL, &n));
    EXPECT(n == 6 && from[1] == nd->k1 && to[1] == nd->k2, "edges: %zu, second %p->%p", n,
           (void *)from[1], (void *)to[1]);
    n = 4;
    CHECK_CU(cuGraphNodeGetDependencies(nd->empty, list, NULL, &n));
    EXPECT(n == 2 && list[0] == nd->k1 && list[1] == nd->k2, "empty node has %zu deps", n);
    n = 4;
    CHECK_CU(cuGraphNodeGetDependentNodes(nd->k1, list, NULL, &n));
    EXPECT(n == 2 && list[0] == nd->k2 && list[1] == nd->empty, "k1 has %zu dependents", n);

    CUDA_KERNEL_NODE_PARAMS kp;
    CHECK_CU(cuGraphKernelNodeGetParams(nd->k2, &kp));
    EXPECT(!kp.kernelParams && kp.extra && kp.extra[0] == CU_LAUNCH_PARAM_BUFFER_POINTER,
           "extra form not returned");
    const CUdeviceptr *packed = kp.extra[1];
    EXPECT(packed[0] == b && packed[1] == a && *(size_t *)kp.extra[3] == 20,
           "packed arguments 0x%llx 0x%llx", (unsigned long long)packed[0],
           (unsigned long long)packed[1]);
    CUDA_HOST_NODE_PARAMS hp;
    CHECK_CU(cuGraphHostNodeGetParams(nd->host, &hp));
    EXPECT(hp.fn == on_host, "host node function");
}

static void refuse_bad_edges(CUgraph g, const nodes_t *nd)
{
    CUgraph other;
    CUgraphNode foreign;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddDependencies(g, &nd->k1, &nd->k2, NULL, 1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddDependencies(g, &nd->k1, &nd->k1, NULL, 1));
    CUgraphNode dup[] = { nd->k1, nd->k1 };
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddEmptyNode(&foreign, g, dup, 2));
    CHECK_CU(cuGraphCreate(&other, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddEmptyNode(&foreign, other, &nd->k1, 1));
    CHECK_CU(cuGraphDestroy(other));
    CUDA_MEMSET_NODE_PARAMS bad = { 0, 0, 0, 3, 1, 1 };
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemsetNode(&foreign, g, NULL, 0, &bad, NULL));
}

static void run(CUgraphExec exec, CUstream s, CUdeviceptr a, float *host_a, const float *out,
                float want_a, float want_out)
{
    CHECK_CU(cuGraphLaunch(exec, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(host_a, a, N * sizeof(float)));
    for (int i = 0; i < N; i++) {
        EXPECT(host_a[i] == want_a, "a[%d] = %f, expected %f", i, host_a[i], want_a);
        EXPECT(out[i] == want_out, "out[%d] = %f, expected %f", i, out[i], want_out);
    }
    EXPECT(host_seen == want_out, "host node saw %f, expected %f", host_seen, want_out);
}

static void check_cycle(void)
{
    CUgraph g;
    CUgraphNode x, y;
    CUgraphExec exec;
    CHECK_CU(cuGraphCreate(&g, 0));
    CHECK_CU(cuGraphAddEmptyNode(&x, g, NULL, 0));
    CHECK_CU(cuGraphAddEmptyNode(&y, g, &x, 1));
    CHECK_CU(cuGraphAddDependencies(g, &y, &x, NULL, 1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiate(&exec, g, 0));
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = { 0 };
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiateWithParams(&exec, g, &ip));
    EXPECT(ip.result_out == CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE && ip.hErrNode_out,
           "result %d, error node %p", (int)ip.result_out, (void *)ip.hErrNode_out);
    CHECK_CU(cuGraphDestroyNode(y));
    ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    CHECK_CU(cuGraphInstantiateWithParams(&exec, g, &ip));
    EXPECT(ip.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS && !ip.hErrNode_out, "result %d",
           (int)ip.result_out);
    cuuint64_t flags;
    CHECK_CU(cuGraphExecGetFlags(exec, &flags));
    EXPECT(flags == CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, "flags %llu", (unsigned long long)flags);
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(g));
}

int main(void)
{
    CUgraph g;
    CUgraphExec exec;
    CUstream s;
    CUdeviceptr a, b;
    nodes_t nd;
    float *out, host_a[N];

    CUmodule mod;
    CUfunction add_const_f, add_into_f;
    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&add_const_f, mod, "add_const"));
    CHECK_CU(cuModuleGetFunction(&add_into_f, mod, "add_into"));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    CHECK_CU(cuMemAlloc(&a, N * sizeof(float)));
    CHECK_CU(cuMemAlloc(&b, N * sizeof(float)));
    CHECK_CU(cuMemAllocHost((void **)&out, N * sizeof(float)));
    CHECK_CU(cuMemsetD32(a, 0, N));

    CHECK_CU(cuGraphCreate(&g, 0));
    build(g, add_const_f, add_into_f, a, b, out, &nd);
    check_structure(g, &nd, a, b);
    refuse_bad_edges(g, &nd);

    /* a: 0 -> 1, b = 3 + 1 */
    CHECK_CU(cuGraphInstantiate(&exec, g, 0));
    run(exec, s, a, host_a, out, 1.0f, 4.0f);
    run(exec, s, a, host_a, out, 2.0f, 5.0f);
    EXPECT(host_calls == 2, "host node ran %d times", host_calls);

    /* A node's new parameters apply to later instantiations, not to this one. */
    unsigned n = N;
    float ten = 10.0f, hundred = 100.0f;
    void *args10[] = { &a, &n, &ten }, *args100[] = { &a, &n, &hundred };
    CUDA_KERNEL_NODE_PARAMS p10 = kparams(add_const_f, args10, NULL);
    CHECK_CU(cuGraphKernelNodeSetParams(nd.k1, &p10));
    run(exec, s, a, host_a, out, 3.0f, 6.0f);
    CUDA_KERNEL_NODE_PARAMS p100 = kparams(add_const_f, args100, NULL);
    CHECK_CU(cuGraphExecKernelNodeSetParams(exec, nd.k1, &p100));
    run(exec, s, a, host_a, out, 103.0f, 106.0f);
    CUDA_KERNEL_NODE_PARAMS kp;
    CHECK_CU(cuGraphKernelNodeGetParams(nd.k1, &kp));
    EXPECT(*(float *)kp.kernelParams[2] == 10.0f, "node value %f", *(float *)kp.kernelParams[2]);
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphInstantiate(&exec, g, 0));
    run(exec, s, a, host_a, out, 113.0f, 116.0f);
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(g));

    check_cycle();
    CHECK_CU(cuMemFreeHost(out));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
