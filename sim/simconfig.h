/* SPDX-License-Identifier: MIT */
/*
 * simconfig.h - the simulator's machine models and its ELIXIR_SIM_* options, as data and pure
 * parsers: no state, no I/O, nothing of the driver.  The simulator (options.c) reads its
 * configuration through them, and elixir-sim checks the values it passes on with the same
 * rules, so the two cannot disagree.
 */
#ifndef SIM_SIMCONFIG_H
#define SIM_SIMCONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_model {
    const char *name;
    int devices;
    uint64_t memory;        /* bytes per device */
    double hbm_gbps;        /* device memory bandwidth, GB/s */
    double tflops;          /* fp32 rate, TFLOP/s */
    double h2d_gbps;        /* pinned host -> device */
    double d2h_gbps;        /* pinned device -> host */
    double duplex_gbps;     /* both PCIe directions together (link.c) */
    double pageable_gbps;   /* pageable host <-> device (staged) */
    double nvlink_gbps;     /* device <-> device; 0: peers go over PCIe */
    double launch_us;       /* fixed device-side latency of a kernel */
    double api_us;          /* host time charged per enqueued operation */
    int sms;
    const char *device_name;
    double nvme_read_gbps;  /* the NVMe drive (nvme.c): drive -> host */
    double nvme_write_gbps; /* host -> drive */
    double nvme_duplex_gbps;    /* reads and writes together */
    double nvme_latency_us; /* from submission to completion, beside the transfer */
} sim_model_t;

enum sim_racecheck { SIM_RACE_OFF, SIM_RACE_REPORT, SIM_RACE_FAIL };

typedef struct sim_config {
    sim_model_t model;
    int racecheck;          /* enum sim_racecheck */
    int stats;
    int log_level;          /* 0 error, 1 warn, 2 info, 3 trace */
    int lazy;               /* run queued work only when the host waits */
    int host_vmm;           /* HOST/HOST_NUMA locations for cuMemCreate (ELIXIR_SIM_HOST_VMM) */
    int alloc_costs;        /* allocation and VMM calls take host time (ELIXIR_SIM_ALLOC_COSTS) */
    uint64_t host_memory;   /* page-locked host memory limit, 0: none (ELIXIR_SIM_HOST_MEMORY) */
    char kernels[4096];     /* ELIXIR_SIM_KERNELS */
} sim_config_t;

/* Digits with an optional K, M, G or T suffix (powers of 1024; a trailing "B" or "iB" is
 * accepted) into *out; 0, or -EINVAL for anything else or an overflow. */
int sim_parse_size(const char *s, uint64_t *out);
/* The machine model called name (exact), or NULL. */
const sim_model_t *sim_model_find(const char *name);
/* The names of the machine models, ", "-separated ("default, h100-pcie, ..."). */
const char *sim_model_names(void);

/* The options: index 0 .. sim_option_count() - 1; names are after "ELIXIR_SIM_". */
int sim_option_count(void);
/* The index of the option called name (exact, after "ELIXIR_SIM_"), or -1. */
int sim_option_find(const char *name);
const char *sim_option_name(int i);
/* The default as text ("": the machine model's value), and the description. */
const char *sim_option_default(int i);
const char *sim_option_desc(int i);
/* What option i accepts, as a phrase for an error message. */
const char *sim_option_form(int i);
/* Set c to the defaults: every field zero, then every option's default applied. */
void sim_config_defaults(sim_config_t *c);
/* Parse the value text v of option i into c; 0, or -EINVAL (c unchanged) when v is not one of
 * the accepted forms. */
int sim_option_apply(sim_config_t *c, int i, const char *v);

#endif
