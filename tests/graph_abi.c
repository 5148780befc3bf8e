/* SPDX-License-Identifier: MIT */
/*
 * graph_abi.c - the older ABIs of the capture and graph entry points, reached the way the CUDA
 * runtime reaches them (cuGetProcAddress with a version and flags): cuStreamBeginCapture
 * without a mode (CUDA 10.0), cuStreamGetCaptureInfo with status and id only (10.1),
 * cuGraphInstantiate with an error node and a log buffer (10.0 and 11.0), the kernel node
 * parameters without kern/ctx (10.0), and the per-thread cuGraphLaunch and capture calls.
 */
#include <string.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry bump(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void bump(const sim_launch_t *l, void **params)
{
    int *p = *(int **)params[0];
    *p += 1;
    sim_kernel_access(p, sizeof(int), SIM_ACCESS_READWRITE);
}

typedef CUresult (*begin_v1_t)(CUstream);
typedef CUresult (*info_v1_t)(CUstream, CUstreamCaptureStatus *, cuuint64_t *);
typedef CUresult (*inst_v1_t)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
typedef CUresult (*launch_t)(CUgraphExec, CUstream);
typedef CUresult (*begin_v2_t)(CUstream, CUstreamCaptureMode);
typedef CUresult (*end_t)(CUstream, CUgraph *);

static void *proc(const char *name, int version, cuuint64_t flags)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK_CU(cuGetProcAddress(name, &fn, version, flags, &st));
    EXPECT(fn && st == CU_GET_PROC_ADDRESS_SUCCESS, "%s@%d not found", name, version);
    return fn;
}

int main(void)
{
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUdeviceptr d;
    CUgraph g;
    CUgraphExec exec;
    CUstreamCaptureStatus st;
    cuuint64_t id = 0;
    int v = 0;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "bump"));
    CHECK_CU(cuMemAlloc(&d, sizeof(int)));
    CHECK_CU(cuMemsetD32(d, 0, 1));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    begin_v1_t begin_v1 = (begin_v1_t)proc("cuStreamBeginCapture", 10000, 0);
    info_v1_t info_v1 = (info_v1_t)proc("cuStreamGetCaptureInfo", 10010, 0);
    EXPECT((void *)proc("cuStreamBeginCapture", 10010, 0) == (void *)cuStreamBeginCapture_v2,
           "cuStreamBeginCapture@10010 is not cuStreamBeginCapture_v2");
    CHECK_CU(begin_v1(s));
    CHECK_CU(info_v1(s, &st, &id));
    EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id, "status %d id %llu", (int)st,
           (unsigned long long)id);
    void *args[] = { &d };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    CHECK_CU(cuStreamEndCapture(s, &g));

    CUgraphNode node;
    size_t n = 1;
    CHECK_CU(cuGraphGetNodes(g, &node, &n));
    CUDA_KERNEL_NODE_PARAMS_v1 p1;
    CUresult (*get_v1)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1 *) =
        (CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1 *))proc(
            "cuGraphKernelNodeGetParams", 10000, 0);
    CHECK_CU(get_v1(node, &p1));
    EXPECT(p1.func == f && *(CUdeviceptr *)p1.kernelParams[0] == d, "v1 kernel node params");

    char log[64];
    CUgraphNode err = (CUgraphNode)1;
    inst_v1_t inst = (inst_v1_t)proc("cuGraphInstantiate", 11000, 0);
    CHECK_CU(inst(&exec, g, &err, log, sizeof(log)));
    EXPECT(err == NULL && log[0] == 0, "error node %p, log \"%s\"", (void *)err, log);

    /* Per-thread variants: NULL is the per-thread default stream. */
    launch_t launch_ptsz = (launch_t)proc("cuGraphLaunch", 10000,
                                          CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CHECK_CU(launch_ptsz(exec, NULL));
    CHECK_CU(launch_ptsz(exec, NULL));
    CHECK_CU(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    CHECK_CU(cuMemcpyDtoH(&v, d, sizeof(v)));
    EXPECT(v == 2, "two launches counted %d", v);

    begin_v2_t begin_ptsz = (begin_v2_t)proc("cuStreamBeginCapture", 10010,
                                             CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    end_t end_ptsz = (end_t)proc("cuStreamEndCapture", 10000,
                                 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CHECK_CU(begin_ptsz(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(cuStreamIsCapturing(CU_STREAM_PER_THREAD, &st));
    EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "per-thread stream status %d", (int)st);
    CUgraph g2;
    CHECK_CU(end_ptsz(NULL, &g2));
    CHECK_CU(cuGraphDestroy(g2));

    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
