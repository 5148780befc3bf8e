/* SPDX-License-Identifier: MIT */
/*
 * res_drv.h - how residency calls the driver: DRV(sym) for the driver's own function, and
 * DRVT(sym) for the calls whose host time ELIXIR_STATS measures (stats.c).
 */
#ifndef ELIXIR_RES_DRV_H
#define ELIXIR_RES_DRV_H

#include "shim.h"

#define DRV(sym) SHIM_DRIVER_CALL(sym)

/*
 * DRVT(sym): the driver's sym for a call whose host time ELIXIR_STATS measures (shim_ht_t):
 * residency's copies, mapping calls, memory made and released, event records, queries,
 * stream waits and host waits, whatever they are for.
 */
#define DRVT(sym) drvt_##sym
#define DRVT_FN(kind, sym, params, args)                                                       \
    static inline CUresult drvt_##sym params                                                   \
    {                                                                                          \
        uint64_t t0 = shim_ht_begin();                                                         \
        CUresult r = DRV(sym) args;                                                            \
        shim_ht_end(SHIM_HT_##kind, t0);                                                       \
        return r;                                                                              \
    }
DRVT_FN(QUERY, cuEventQuery, (CUevent e), (e))
DRVT_FN(RECORD, cuEventRecord, (CUevent e, CUstream s), (e, s))
DRVT_FN(RECORD, cuEventRecord_ptsz, (CUevent e, CUstream s), (e, s))
DRVT_FN(STREAM_WAIT, cuStreamWaitEvent, (CUstream s, CUevent e, unsigned flags), (s, e, flags))
DRVT_FN(SYNC, cuEventSynchronize, (CUevent e), (e))
DRVT_FN(SYNC, cuStreamSynchronize, (CUstream s), (s))
DRVT_FN(SYNC, cuCtxSynchronize, (void), ())
DRVT_FN(MOVE_COPY, cuMemcpyDtoDAsync_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s),
        (dst, src, n, s))
DRVT_FN(MOVE_COPY, cuMemcpyDtoHAsync_v2, (void *dst, CUdeviceptr src, size_t n, CUstream s),
        (dst, src, n, s))
DRVT_FN(MOVE_COPY, cuMemcpyHtoDAsync_v2, (CUdeviceptr dst, const void *src, size_t n, CUstream s),
        (dst, src, n, s))
DRVT_FN(MAP, cuMemMap, (CUdeviceptr va, size_t size, size_t offset,
        CUmemGenericAllocationHandle h, unsigned long long flags),
        (va, size, offset, h, flags))
DRVT_FN(MAP, cuMemUnmap, (CUdeviceptr va, size_t size), (va, size))
DRVT_FN(MAP, cuMemSetAccess, (CUdeviceptr va, size_t size, const CUmemAccessDesc *desc, size_t n),
        (va, size, desc, n))
DRVT_FN(PHYS, cuMemCreate, (CUmemGenericAllocationHandle *h, size_t size,
        const CUmemAllocationProp *prop, unsigned long long flags),
        (h, size, prop, flags))
DRVT_FN(PHYS, cuMemRelease, (CUmemGenericAllocationHandle h), (h))

#endif /* ELIXIR_RES_DRV_H */
