/* SPDX-License-Identifier: MIT */
/*
 * init_error_names.c - cuGetErrorName and cuGetErrorString as documented: the name and the
 * description of every CUresult the header declares (checked on a few, and that the two
 * differ), CUDA_ERROR_INVALID_VALUE with *pStr set to NULL for a code that is not one, and
 * on the simulator CUDA_ERROR_INVALID_VALUE for a NULL pStr (the docs do not say; the real
 * driver crashes).  Both work before cuInit.
 */
#include <string.h>

#include "simtest.h"

static void expect_name(CUresult e, const char *want)
{
    const char *name = NULL, *text = NULL;
    CHECK_CU(cuGetErrorName(e, &name));
    CHECK_CU(cuGetErrorString(e, &text));
    EXPECT(name && strcmp(name, want) == 0, "cuGetErrorName(%d): %s, want %s", (int)e,
           name ? name : "NULL", want);
    EXPECT(text && *text && strcmp(text, name) != 0, "cuGetErrorString(%d): %s", (int)e,
           text ? text : "NULL");
}

static void expect_unknown(CUresult e)
{
    const char *s = "not touched";
    EXPECT(cuGetErrorName(e, &s) == CUDA_ERROR_INVALID_VALUE && s == NULL,
           "cuGetErrorName(%d) of no error: %s", (int)e, s ? s : "NULL");
    s = "not touched";
    EXPECT(cuGetErrorString(e, &s) == CUDA_ERROR_INVALID_VALUE && s == NULL,
           "cuGetErrorString(%d) of no error: %s", (int)e, s ? s : "NULL");
}

int main(void)
{
    expect_name(CUDA_SUCCESS, "CUDA_SUCCESS");
    expect_name(CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY");
    expect_name(CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE");
    expect_name(CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS");
    expect_name(CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN");
    expect_unknown((CUresult)12345);
    expect_unknown((CUresult)-1);
    if (st_simulated()) {               /* the real driver (580) crashes */
        EXPECT(cuGetErrorName(CUDA_SUCCESS, NULL) == CUDA_ERROR_INVALID_VALUE,
               "cuGetErrorName with a NULL pStr");
        EXPECT(cuGetErrorString(CUDA_SUCCESS, NULL) == CUDA_ERROR_INVALID_VALUE,
               "cuGetErrorString with a NULL pStr");
    }
    printf("names and descriptions as documented\n");
    return 0;
}
