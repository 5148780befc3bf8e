/* SPDX-License-Identifier: MIT */
/*
 * graph.c - CUDA graphs and stream capture.
 */
#include "sim.h"

int sim_capture_op(CUstream s, sim_op_t *op, CUresult *res)
{
    return 0;
}
