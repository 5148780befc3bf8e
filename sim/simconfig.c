/* SPDX-License-Identifier: MIT */
/*
 * simconfig.c - the simulator's machine models and ELIXIR_SIM_* options (simconfig.h): one
 * table holds every option (name, kind, default, description) and one parser per kind sets
 * a sim_config_t.  Machine models are named presets; the per-model fields (devices, memory,
 * bandwidths) can each be overridden by their own option.  Pure: no state beyond the tables,
 * no I/O, so that elixir-sim links it too.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "simconfig.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define GIB (1024ull * 1024 * 1024)

/*
 * The host link.  Each direction has its own bandwidth, and a copy engine per direction; but a
 * PCIe link is not fully duplex in practice: with both directions busy, an A100 on PCIe 4.0
 * x16 measured 24-25 GB/s device-to-host while host-to-device fell to 11-13 GB/s, from about
 * 25 GB/s each alone (nvbandwidth, *_bidirectional_memcpy_ce: NVIDIA/nvbandwidth issues 11
 * and 53).  So both directions together are held to a duplex figure, 24 + 12 = 36 GB/s on
 * that link (link.c says how the two share it).  The 25 GB/s one-way figure is that same
 * measurement.  The SXM model's 50 GB/s each way is PCIe 5.0 x16 at the same efficiency; its
 * duplex figure, 72 GB/s, is the A100's ratio (36 / 25) applied to it, not a measurement.
 *
 * The NVMe drive (nvme.c), the same in every model: one PCIe 4.0 x4 drive of the class rated
 * 7.0 GB/s sequential read and 5.0 GB/s sequential write (Samsung 980 PRO 1 TB, the maker's
 * figures), 80 us from submission to completion beside the transfer (of the order of a TLC
 * NAND page read; an assumption, not a measurement), and reads and writes together held to
 * the read figure, 7 GB/s (the x4 link carries about 7.9 GB/s each way; what limits a mixed
 * load is the drive, and a mixed load does not beat the pure read rate on such drives).
 */
#define NVME_980PRO .nvme_read_gbps = 7.0, .nvme_write_gbps = 5.0, .nvme_duplex_gbps = 7.0, \
                    .nvme_latency_us = 80.0

static const sim_model_t models[] = {
    { .name = "default", .devices = 1, .memory = 1 * GIB, .hbm_gbps = 2000, .tflops = 51,
      .h2d_gbps = 25, .d2h_gbps = 25, .duplex_gbps = 36, .pageable_gbps = 10,
      .nvlink_gbps = 0, .launch_us = 2.0, .api_us = 1.0, .sms = 114,
      .device_name = "Elixir Simulated H100 PCIe (1 GiB)", NVME_980PRO },
    { .name = "h100-pcie", .devices = 1, .memory = 80 * GIB, .hbm_gbps = 2000, .tflops = 51,
      .h2d_gbps = 25, .d2h_gbps = 25, .duplex_gbps = 36, .pageable_gbps = 10,
      .nvlink_gbps = 0, .launch_us = 2.0, .api_us = 1.0, .sms = 114,
      .device_name = "Elixir Simulated H100 PCIe", NVME_980PRO },
    { .name = "h100-nvlink-4", .devices = 4, .memory = 80 * GIB, .hbm_gbps = 3350, .tflops = 67,
      .h2d_gbps = 50, .d2h_gbps = 50, .duplex_gbps = 72, .pageable_gbps = 12,
      .nvlink_gbps = 450, .launch_us = 2.0, .api_us = 1.0, .sms = 132,
      .device_name = "Elixir Simulated H100 SXM", NVME_980PRO },
};

const sim_model_t *sim_model_find(const char *name)
{
    for (size_t i = 0; i < ARRAY_LEN(models); i++)
        if (strcasecmp(models[i].name, name) == 0)
            return &models[i];
    return NULL;
}

const char *sim_model_names(void)
{
    static char names[256];

    if (!names[0])
        for (size_t i = 0, n = 0; i < ARRAY_LEN(models); i++)
            n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
                                  models[i].name);
    return names;
}

/*
 * Parse a size: digits with an optional K, M, G or T suffix (powers of 1024, an optional
 * trailing "B" or "iB" accepted).  Returns 0, or -EINVAL for anything else or an overflow.
 */
int sim_parse_size(const char *s, uint64_t *out)
{
    char *end;
    uint64_t mult = 1;

    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -EINVAL;
    switch (*end) {
    case 'k': case 'K': mult = 1ull << 10; end++; break;
    case 'm': case 'M': mult = 1ull << 20; end++; break;
    case 'g': case 'G': mult = 1ull << 30; end++; break;
    case 't': case 'T': mult = 1ull << 40; end++; break;
    default: break;
    }
    if (mult > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
        end += strlen(end);
    else if (mult == 1 && strcmp(end, "B") == 0)
        end++;
    if (*end || (v && mult > UINT64_MAX / v))
        return -EINVAL;
    *out = v * mult;
    return 0;
}

enum opt_kind { OPT_MODEL, OPT_INT, OPT_SIZE, OPT_LIMIT, OPT_DOUBLE, OPT_CHOICE, OPT_STRING };

typedef struct option {
    const char *name;
    int kind;
    const char *def;            /* default, as text ("" : taken from the machine model) */
    const char *choices;        /* OPT_CHOICE: space-separated accepted words, in value order */
    const char *desc;
    size_t field;               /* OPT_DOUBLE: offset of the figure in sim_model_t */
    int zero_ok;                /* OPT_DOUBLE: 0 is accepted */
} option_t;

#define RATE(f) .field = offsetof(sim_model_t, f)

static const option_t options[] = {
    { "MACHINE", OPT_MODEL, "default", NULL,
      "machine model: default (1 x 1 GiB), h100-pcie (1 x 80 GiB), h100-nvlink-4 (4 x 80 GiB)", 0, 0 },
    { "DEVICES", OPT_INT, "", NULL, "number of devices (1-16)", 0, 0 },
    { "MEMORY", OPT_SIZE, "", NULL, "memory per device, e.g. 1G, 512M", 0, 0 },
    { "HBM_GBPS", OPT_DOUBLE, "", NULL, "device memory bandwidth, GB/s", RATE(hbm_gbps) },
    { "TFLOPS", OPT_DOUBLE, "", NULL, "device arithmetic rate, TFLOP/s", RATE(tflops) },
    { "PCIE_GBPS", OPT_DOUBLE, "", NULL, "pinned host <-> device bandwidth each way, GB/s",
      RATE(h2d_gbps) },
    { "PCIE_H2D_GBPS", OPT_DOUBLE, "", NULL, "pinned host -> device bandwidth, GB/s",
      RATE(h2d_gbps) },
    { "PCIE_D2H_GBPS", OPT_DOUBLE, "", NULL, "pinned device -> host bandwidth, GB/s",
      RATE(d2h_gbps) },
    { "PCIE_DUPLEX_GBPS", OPT_DOUBLE, "", NULL,
      "host link, both directions together, GB/s (0: each direction alone)",
      RATE(duplex_gbps), 1 },
    { "PAGEABLE_GBPS", OPT_DOUBLE, "", NULL, "pageable host <-> device bandwidth, GB/s",
      RATE(pageable_gbps) },
    { "NVLINK_GBPS", OPT_DOUBLE, "", NULL, "peer bandwidth, GB/s (0: peers use PCIe)",
      RATE(nvlink_gbps), 1 },
    { "NVME_READ_GBPS", OPT_DOUBLE, "", NULL, "NVMe drive -> host bandwidth, GB/s",
      RATE(nvme_read_gbps) },
    { "NVME_WRITE_GBPS", OPT_DOUBLE, "", NULL, "host -> NVMe drive bandwidth, GB/s",
      RATE(nvme_write_gbps) },
    { "NVME_DUPLEX_GBPS", OPT_DOUBLE, "", NULL,
      "NVMe reads and writes together, GB/s (0: each direction alone)",
      RATE(nvme_duplex_gbps), 1 },
    { "NVME_LATENCY_US", OPT_DOUBLE, "", NULL, "NVMe time from submission to completion "
      "beside the transfer, us", RATE(nvme_latency_us), 1 },
    { "RACECHECK", OPT_CHOICE, "report", "off report fail",
      "race checker: off, report (log races), fail (log, then exit 66 at exit)", 0, 0 },
    { "STATS", OPT_CHOICE, "0", "0 1", "print operation statistics at exit", 0, 0 },
    { "LOG", OPT_CHOICE, "warn", "error warn info trace", "log level", 0, 0 },
    { "EXEC", OPT_CHOICE, "async", "async lazy",
      "async: a thread runs queued work at once; lazy: only when the host waits", 0, 0 },
    { "HOST_VMM", OPT_CHOICE, "1", "0 1",
      "1: cuMemCreate takes HOST and HOST_NUMA locations; 0: a device without host VMM", 0, 0 },
    { "ALLOC_COSTS", OPT_CHOICE, "1", "0 1",
      "1: allocation and VMM calls take host time as on an H100 (simcuda.h); 0: none", 0, 0 },
    { "HOST_MEMORY", OPT_LIMIT, "unlimited", NULL,
      "page-locked host memory of the process, e.g. 8G, or unlimited", 0, 0 },
    { "KERNELS", OPT_STRING, "", NULL, "colon-separated shared objects holding host kernels", 0, 0 },
    { "VERBOSE", OPT_CHOICE, "0", "0 1", "print every option at start-up", 0, 0 },
};

static int choice_index(const char *choices, const char *v)
{
    size_t n = strlen(v);
    int i = 0;

    for (const char *p = choices; *p; i++) {
        const char *e = strchr(p, ' ');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncasecmp(p, v, n) == 0)
            return i;
        if (!e)
            break;
        p = e + 1;
    }
    /* common synonyms */
    if (strcmp(v, "1") == 0 || strcasecmp(v, "on") == 0)
        return strcmp(choices, "off report fail") == 0 ? 1 : -1;
    if (strcmp(v, "0") == 0 && strcmp(choices, "off report fail") == 0)
        return 0;
    return -1;
}

/* Apply the value text v of option o to c; returns 0 or -EINVAL. */
static int apply(sim_config_t *c, const option_t *o, const char *v)
{
    sim_model_t *m = &c->model;
    uint64_t sz;
    char *end;

    switch (o->kind) {
    case OPT_MODEL: {
        const sim_model_t *found = sim_model_find(v);
        if (!found)
            return -EINVAL;
        *m = *found;
        return 0;
    }
    case OPT_INT: {
        long n = strtol(v, &end, 10);
        if (!isdigit((unsigned char)*v) || *end || n < 1 || n > 16)
            return -EINVAL;
        m->devices = (int)n;
        return 0;
    }
    case OPT_SIZE:
        if (sim_parse_size(v, &sz) || sz < (2ull << 20))
            return -EINVAL;
        m->memory = sz;
        return 0;
    case OPT_LIMIT:
        if (strcasecmp(v, "unlimited") == 0)
            sz = 0;
        else if (sim_parse_size(v, &sz) || sz == 0)
            return -EINVAL;
        c->host_memory = sz;
        return 0;
    case OPT_DOUBLE: {
        double d = strtod(v, &end);
        if (*v == 0 || *end || !isfinite(d) || d < 0 || d > 1e7)     /* (nan passes < and >) */
            return -EINVAL;
        if (d == 0 && !o->zero_ok)
            return -EINVAL;
        *(double *)((char *)m + o->field) = d;
        if (strcmp(o->name, "PCIE_GBPS") == 0)
            m->d2h_gbps = d;                /* both directions */
        return 0;
    }
    case OPT_CHOICE: {
        int i = choice_index(o->choices, v);
        if (i < 0)
            return -EINVAL;
        if (strcmp(o->name, "RACECHECK") == 0)
            c->racecheck = i;
        else if (strcmp(o->name, "STATS") == 0)
            c->stats = i;
        else if (strcmp(o->name, "LOG") == 0)
            c->log_level = i;
        else if (strcmp(o->name, "EXEC") == 0)
            c->lazy = i;
        else if (strcmp(o->name, "HOST_VMM") == 0)
            c->host_vmm = i;
        else if (strcmp(o->name, "ALLOC_COSTS") == 0)
            c->alloc_costs = i;
        return 0;
    }
    case OPT_STRING:
        if (strlen(v) >= sizeof(c->kernels))
            return -EINVAL;
        strcpy(c->kernels, v);
        return 0;
    }
    return -EINVAL;
}

static const char *form_of(const option_t *o)
{
    switch (o->kind) {
    case OPT_MODEL: return sim_model_names();
    case OPT_INT: return "an integer from 1 to 16";
    case OPT_SIZE: return "a size of at least 2M, digits with an optional K/M/G/T suffix";
    case OPT_LIMIT: return "unlimited, or a size above 0, digits with an optional K/M/G/T suffix";
    case OPT_DOUBLE:
        return o->zero_ok ? "a number from 0 to 10000000" : "a number above 0, at most 10000000";
    case OPT_CHOICE: return o->choices;
    default: return "a string";
    }
}

int sim_option_count(void)
{
    return (int)ARRAY_LEN(options);
}

int sim_option_find(const char *name)
{
    for (size_t i = 0; i < ARRAY_LEN(options); i++)
        if (strcmp(options[i].name, name) == 0)
            return (int)i;
    return -1;
}

const char *sim_option_name(int i)
{
    return options[i].name;
}

const char *sim_option_default(int i)
{
    return options[i].def;
}

const char *sim_option_desc(int i)
{
    return options[i].desc;
}

const char *sim_option_form(int i)
{
    return form_of(&options[i]);
}

void sim_config_defaults(sim_config_t *c)
{
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < ARRAY_LEN(options); i++)
        if (options[i].def[0])
            apply(c, &options[i], options[i].def);
}

int sim_option_apply(sim_config_t *c, int i, const char *v)
{
    sim_config_t tmp = *c;

    if (apply(&tmp, &options[i], v) < 0)
        return -EINVAL;
    *c = tmp;
    return 0;
}
