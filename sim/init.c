/* SPDX-License-Identifier: MIT */
/*
 * init.c - driver initialisation, versions, error strings and device queries.
 *
 * cuInit reads the options, builds the devices of the machine model (each with a reserved
 * virtual-address arena for cuMemAlloc), installs the fault handler and starts the executor.
 * Device attributes describe an H100-class part, with the VMM features Elixir relies on;
 * ELIXIR_SIM_HOST_VMM=0 models a device that cannot map host memory through VMM.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim.h"

sim_device_t *sim_devs;
int sim_ndevs;
int sim_initialized;
pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;

typedef struct err_row {
    CUresult value;
    const char *name;
    const char *text;
} err_row_t;

static const err_row_t errors[] = {
#include "sim_errors.h"
};

static CUresult setup_device(sim_device_t *d, int ordinal)
{
    d->ordinal = ordinal;
    d->total = sim_cfg.model.memory;
    d->pcie.duplex_gbps = sim_cfg.model.duplex_gbps;
    /* Four times the capacity of address space, so that freed ranges are not reused at once
     * (an access after free then faults) and fragmentation never limits allocation. */
    d->arena_size = d->total * 4;
    d->arena = sim_map_anon(NULL, d->arena_size, PROT_NONE);
    if (!d->arena)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (int i = 0; i < 16; i++)
        d->uuid.bytes[i] = (char)(0x5a ^ (i * 37) ^ (ordinal * 101));
    d->uuid.bytes[6] = (char)((d->uuid.bytes[6] & 0x0f) | 0x40);
    return CUDA_SUCCESS;
}

/*
 * A child forked after cuInit cannot use CUDA: the real driver answers every call, cuInit
 * included, with CUDA_ERROR_NOT_INITIALIZED.  The executor thread does not exist in the child
 * either, so the simulator does the same.
 */
static void after_fork_child(void)
{
    if (!sim_initialized)
        return;
    sim_initialized = 0;
    init_result = CUDA_ERROR_NOT_INITIALIZED;
}

static void do_init(void)
{
    sim_config_load();
    sim_ndevs = sim_cfg.model.devices;
    sim_devs = calloc((size_t)sim_ndevs, sizeof(*sim_devs));
    if (!sim_devs) {
        init_result = CUDA_ERROR_OUT_OF_MEMORY;
        return;
    }
    for (int i = 0; i < sim_ndevs; i++) {
        init_result = setup_device(&sim_devs[i], i);
        if (init_result != CUDA_SUCCESS)
            return;
    }
    sim_fault_install();
    sim_exec_start();
    pthread_atfork(NULL, NULL, after_fork_child);
    sim_initialized = 1;
    init_result = CUDA_SUCCESS;
    SIM_INFO("machine %s: %d device(s) of %llu MiB", sim_cfg.model.name, sim_ndevs,
             (unsigned long long)(sim_cfg.model.memory >> 20));
}

SIM_API CUresult CUDAAPI cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&init_once, do_init);
    return init_result;
}

CUresult sim_check_init(void)
{
    return sim_initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult sim_device_get(CUdevice dev, sim_device_t **out)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (dev < 0 || dev >= sim_ndevs)
        return CUDA_ERROR_INVALID_DEVICE;
    if (out)
        *out = &sim_devs[dev];
    return CUDA_SUCCESS;
}

/* Charge `bytes` of device memory to `device`; -ENOMEM beyond its capacity. */
int sim_reserve_charge(int device, uint64_t bytes)
{
    sim_device_t *d = &sim_devs[device];
    uint64_t used = atomic_load(&d->used);

    do {
        if (bytes > d->total || used > d->total - bytes)
            return -ENOMEM;
    } while (!atomic_compare_exchange_weak(&d->used, &used, used + bytes));
    return 0;
}

void sim_reserve_uncharge(int device, uint64_t bytes)
{
    atomic_fetch_sub(&sim_devs[device].used, bytes);
}

/* Page-locked host memory of the whole process (ELIXIR_SIM_HOST_MEMORY; 0: no limit). */
static _Atomic uint64_t host_pinned;

int sim_pinned_charge(uint64_t bytes)
{
    uint64_t limit = sim_cfg.host_memory, used = atomic_load(&host_pinned);

    do {
        if (limit && (bytes > limit || used > limit - bytes))
            return -ENOMEM;
    } while (!atomic_compare_exchange_weak(&host_pinned, &used, used + bytes));
    return 0;
}

void sim_pinned_uncharge(uint64_t bytes)
{
    atomic_fetch_sub(&host_pinned, bytes);
}

SIM_API int sim_other_process_memory(int device, uint64_t bytes)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

    if (sim_check_init() != CUDA_SUCCESS || device < 0 || device >= sim_ndevs)
        return -EINVAL;
    pthread_mutex_lock(&lock);
    sim_device_t *d = &sim_devs[device];
    uint64_t held = d->others;
    int err = 0;
    if (bytes > held)
        err = sim_reserve_charge(device, bytes - held);
    else
        sim_reserve_uncharge(device, held - bytes);
    if (!err)
        d->others = bytes;
    pthread_mutex_unlock(&lock);
    return err;
}

SIM_API int sim_other_process_pinned(uint64_t bytes)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static uint64_t held;           /* what the other processes pin now */

    if (sim_check_init() != CUDA_SUCCESS)
        return -EINVAL;
    pthread_mutex_lock(&lock);
    int err = 0;
    if (bytes > held)
        err = sim_pinned_charge(bytes - held);
    else
        sim_pinned_uncharge(held - bytes);
    if (!err)
        held = bytes;
    pthread_mutex_unlock(&lock);
    return err;
}

SIM_API CUresult CUDAAPI cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

/* cuGetErrorName (name) and cuGetErrorString: the error's entry, *str NULL for an unknown one. */
static CUresult error_text(CUresult error, const char **str, int name)
{
    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < SIM_ARRAY_LEN(errors); i++)
        if (errors[i].value == error) {
            *str = name ? errors[i].name : errors[i].text;
            return CUDA_SUCCESS;
        }
    *str = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult CUDAAPI cuGetErrorName(CUresult error, const char **str)
{
    return error_text(error, str, 1);
}

SIM_API CUresult CUDAAPI cuGetErrorString(CUresult error, const char **str)
{
    return error_text(error, str, 0);
}

SIM_API CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = sim_ndevs;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= sim_ndevs)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = sim_device_get(dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", sim_cfg.model.device_name);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    sim_device_t *d;
    CUresult r = sim_device_get(dev, &d);
    if (r != CUDA_SUCCESS)
        return r;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = d->total;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    sim_device_t *d;
    CUresult r = sim_device_get(dev, &d);
    if (r != CUDA_SUCCESS)
        return r;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    *uuid = d->uuid;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid(uuid, dev);
}

SIM_API CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    CUresult r = sim_device_get(dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    *major = 9;
    *minor = 0;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUresult r = sim_device_get(dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 0x18 + dev);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    unsigned domain, bus, slot, fn;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!dev || !pciBusId)
        return CUDA_ERROR_INVALID_VALUE;
    if (sscanf(pciBusId, "%x:%x:%x.%x", &domain, &bus, &slot, &fn) != 4 &&
        sscanf(pciBusId, "%x:%x.%x", &bus, &slot, &fn) != 3)
        return CUDA_ERROR_INVALID_VALUE;
    if (bus < 0x18 || bus >= 0x18u + (unsigned)sim_ndevs)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = (CUdevice)(bus - 0x18);
    return CUDA_SUCCESS;
}

/* Attribute values of an H100-class device; 0 for anything not listed. */
static int attribute_value(CUdevice_attribute a, int dev)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return SIM_SHARED_PER_BLOCK;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1755000;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return sim_cfg.model.sms;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x18 + dev;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 1593000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return SIM_SHARED_PER_BLOCK_OPTIN;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: return 1;
    case CU_DEVICE_ATTRIBUTE_NUMA_ID: return -1;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return sim_cfg.host_vmm;
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return sim_cfg.host_vmm;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: return dev;
    default: return 0;
    }
}

SIM_API CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult r = sim_device_get(dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pi || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = attribute_value(attrib, dev);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peer)
{
    CUresult r = sim_device_get(dev, NULL);
    if (r == CUDA_SUCCESS)
        r = sim_device_get(peer, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    *canAccessPeer = dev != peer;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
                                                 CUdevice src, CUdevice dst)
{
    CUresult r = sim_device_get(src, NULL);
    if (r == CUDA_SUCCESS)
        r = sim_device_get(dst, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!value || src == dst)
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *value = sim_cfg.model.nvlink_gbps > 0 ? 0 : 1; break;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED: *value = 1; break;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED: *value = sim_cfg.model.nvlink_gbps > 0; break;
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED: *value = 1; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
