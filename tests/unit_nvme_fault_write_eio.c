/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_fault_write_eio.c - a write that fails with an I/O error (injected by the fault
 * plan): the operation reports EIO, the area degrades and refuses writes, data already there is
 * intact (the scenario of tests/nvme_fault.h, both engines).
 */
#include "nvme_fault.h"

int main(void)
{
    return nt_fault_main(1, "eio", -EIO);
}
