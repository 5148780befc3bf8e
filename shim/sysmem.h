/* SPDX-License-Identifier: MIT */
/*
 * sysmem.h - how much memory this process may use: physical memory, or less where a control
 * group limits it (sysmem.c).
 */
#ifndef ELIXIR_SYSMEM_H
#define ELIXIR_SYSMEM_H

#include <stdint.h>

/* The lowest memory limit of the cgroups that the file `proc_cgroup` (the format of
 * /proc/self/cgroup) places the process in, the cgroup file systems being mounted under
 * `root` (cgroup v2 at root, v1's memory controller at root/memory); UINT64_MAX when none
 * limits it or nothing can be read. */
uint64_t shim_cgroup_limit(const char *proc_cgroup, const char *root);
/* Physical memory, or the process's cgroup limit (/proc/self/cgroup, /sys/fs/cgroup) where
 * that is lower; in bytes. */
uint64_t shim_host_memory(void);

/* How many processes of this job run on this machine, as its launcher says (the first of
 * LOCAL_WORLD_SIZE: torchrun; OMPI_COMM_WORLD_LOCAL_SIZE: Open MPI; MPI_LOCALNRANKS: MPICH
 * that is set and not empty), in *from the variable's name; 0 when that variable says
 * something that is not a number from 1 to 65536; 1 (and *from NULL) when none says. */
unsigned shim_local_processes(const char **from);

#endif /* ELIXIR_SYSMEM_H */
