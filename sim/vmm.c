/* SPDX-License-Identifier: MIT */
/*
 * vmm.c - virtual memory management.
 */
#include "sim.h"

struct sim_phys { int host; };

const sim_mapping_t *sim_vmm_lookup(const sim_range_t *r, uint64_t addr)
{
    for (const sim_mapping_t *m = r->maps; m; m = m->next)
        if (addr >= m->va && addr - m->va < m->size)
            return m;
    return NULL;
}

int sim_vmm_phys_is_host(const struct sim_phys *p)
{
    return p->host;
}
