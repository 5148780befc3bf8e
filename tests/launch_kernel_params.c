/* SPDX-License-Identifier: MIT */
/*
 * launch_kernel_params.c - cuLaunchKernel with kernelParams: each pointer's value is copied
 * into the kernel's parameter of the size the PTX declares (8-, 16-, 32-, 64-bit integers,
 * f32, f64 and a pointer), and the host kernel receives the launch's grid, block, dynamic
 * shared memory, device, stream and entry name in its sim_launch_t.
 */
#include <stdint.h>
#include <string.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry mixed(.param .u8 a, .param .u16 b, .param .u32 c, .param .u64 d,\n"
    "    .param .f32 e, .param .f64 f, .param .u64 .ptr .global .align 8 out)\n{\n ret;\n}\n";

typedef struct seen {
    uint64_t a, b, c, d;
    float e;
    double f;
    unsigned grid[3], block[3], shared;
    int device;
    void *stream;
    char name[16];
} seen_t;

SIM_KERNEL void mixed(const sim_launch_t *l, void **params)
{
    seen_t *out = *(seen_t **)params[6];
    out->a = *(uint8_t *)params[0];
    out->b = *(uint16_t *)params[1];
    out->c = *(uint32_t *)params[2];
    out->d = *(uint64_t *)params[3];
    out->e = *(float *)params[4];
    out->f = *(double *)params[5];
    memcpy(out->grid, l->grid, sizeof(out->grid));
    memcpy(out->block, l->block, sizeof(out->block));
    out->shared = l->shared_bytes;
    out->device = l->device;
    out->stream = l->stream;
    snprintf(out->name, sizeof(out->name), "%s", l->name);
}

int main(void)
{
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUdeviceptr out;
    seen_t got;
    uint8_t a = 0xab;
    uint16_t b = 0xbeef;
    uint32_t c = 0xdeadbeef;
    uint64_t d = 0x0123456789abcdefull;
    float e = 1.5f;
    double dbl = -2.25;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "mixed"));
    CHECK_CU(cuMemAlloc(&out, sizeof(seen_t)));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT));

    void *args[] = { &a, &b, &c, &d, &e, &dbl, &out };
    CHECK_CU(cuLaunchKernel(f, 3, 2, 1, 32, 4, 2, 1024, s, args, NULL));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(&got, out, sizeof(got)));
    EXPECT(got.a == a && got.b == b && got.c == c && got.d == d,
           "integers: got 0x%llx 0x%llx 0x%llx 0x%llx", (unsigned long long)got.a,
           (unsigned long long)got.b, (unsigned long long)got.c, (unsigned long long)got.d);
    EXPECT(got.e == e && got.f == dbl, "floats: got %f %f", got.e, got.f);
    EXPECT(got.grid[0] == 3 && got.grid[1] == 2 && got.grid[2] == 1, "grid %u %u %u",
           got.grid[0], got.grid[1], got.grid[2]);
    EXPECT(got.block[0] == 32 && got.block[1] == 4 && got.block[2] == 2, "block %u %u %u",
           got.block[0], got.block[1], got.block[2]);
    EXPECT(got.shared == 1024, "shared bytes %u", got.shared);
    EXPECT(got.device == 0, "device %d", got.device);
    EXPECT(got.stream == (void *)s, "stream %p, expected %p", got.stream, (void *)s);
    EXPECT(strcmp(got.name, "mixed") == 0, "name \"%s\"", got.name);

    /* A function with parameters needs them. */
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(out));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
