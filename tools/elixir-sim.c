/* SPDX-License-Identifier: MIT */
/*
 * elixir-sim - run a command on the simulated CUDA machine.
 *
 *   elixir-sim [--memory SIZE] [--devices N] [--machine NAME] -- CMD [ARGS...]
 *
 * The simulator is an ordinary libcuda.so.1 in the build tree, so running a program on it only
 * takes the right environment: LD_LIBRARY_PATH starts with <bin>/../sim (where <bin> is the
 * directory of this executable, from /proc/self/exe), ELIXIR_SIM_KERNELS gains
 * <bin>/../examples/kernels_sim.so when it exists, and the options become ELIXIR_SIM_MEMORY,
 * ELIXIR_SIM_DEVICES and ELIXIR_SIM_MACHINE.  Then CMD replaces this process (execvp).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define USAGE "usage: elixir-sim [--memory SIZE] [--devices N] [--machine NAME] -- CMD [ARGS...]\n"

static void usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "elixir-sim: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n" USAGE "Try 'elixir-sim --help' for more.\n");
    exit(2);
}

static void help(void)
{
    printf(USAGE
           "\nRun CMD on the simulated CUDA driver (the libcuda.so.1 of this build tree).\n\n"
           "  --memory SIZE   memory per device: digits with an optional K, M or G suffix\n"
           "                  (sets ELIXIR_SIM_MEMORY)\n"
           "  --devices N     number of devices (sets ELIXIR_SIM_DEVICES)\n"
           "  --machine NAME  machine model (sets ELIXIR_SIM_MACHINE)\n"
           "  --help          print this help\n\n"
           "LD_LIBRARY_PATH gets the simulator's directory in front, and ELIXIR_SIM_KERNELS the\n"
           "example kernels (build/examples/kernels_sim.so) at its end.  Other ELIXIR_SIM_*\n"
           "variables pass through unchanged.\n");
}

/* A size is digits with an optional K, M or G suffix (either case); the simulator parses it. */
static int valid_size(const char *s)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0)
        return 0;
    return s[n] == '\0' || (strchr("kKmMgG", s[n]) && s[n + 1] == '\0');
}

static int valid_count(const char *s)
{
    size_t n = strspn(s, "0123456789");
    return n > 0 && n < 6 && s[n] == '\0' && atoi(s) > 0;
}

/* The directory holding this executable, into dir (PATH_MAX bytes); 0 or -errno. */
static int exe_dir(char *dir)
{
    ssize_t n = readlink("/proc/self/exe", dir, PATH_MAX - 1);
    if (n < 0)
        return -errno;
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -ENOENT;
    *slash = '\0';
    return 0;
}

/* Sets name to first + sep + old value (front) or old value + sep + first (back). */
static int env_join(const char *name, const char *value, int front)
{
    const char *old = getenv(name);
    if (!old || !*old)
        return setenv(name, value, 1) ? -errno : 0;
    size_t len = strlen(old) + strlen(value) + 2;
    char *s = malloc(len);
    if (!s)
        return -ENOMEM;
    snprintf(s, len, "%s:%s", front ? value : old, front ? old : value);
    int rc = setenv(name, s, 1) ? -errno : 0;
    free(s);
    return rc;
}

/* Points the dynamic loader and the simulator at this build tree. */
static int set_paths(void)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    int rc = exe_dir(dir);
    if (rc < 0)
        return rc;
    snprintf(path, sizeof(path), "%s/../sim", dir);
    rc = env_join("LD_LIBRARY_PATH", path, 1);
    if (rc < 0)
        return rc;
    snprintf(path, sizeof(path), "%s/../examples/kernels_sim.so", dir);
    if (access(path, R_OK) == 0)
        rc = env_join("ELIXIR_SIM_KERNELS", path, 0);
    return rc;
}

typedef struct sim_opt {
    const char *name, *var, *want;
    int (*valid)(const char *);
} sim_opt_t;

static int valid_name(const char *s)
{
    return *s != '\0';
}

static const sim_opt_t options[] = {
    { "--memory", "ELIXIR_SIM_MEMORY", "digits with an optional K, M or G suffix", valid_size },
    { "--devices", "ELIXIR_SIM_DEVICES", "a positive number", valid_count },
    { "--machine", "ELIXIR_SIM_MACHINE", "a machine name", valid_name },
};

static const sim_opt_t *find_option(const char *name)
{
    for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
        if (strcmp(options[i].name, name) == 0)
            return &options[i];
    return NULL;
}

/* Parses the options into the environment; returns the index of CMD in argv. */
static int parse(int argc, char **argv)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0)
            return i + 1;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            help();
            exit(0);
        }
        if (arg[0] != '-')
            return i; /* CMD without "--" */
        const sim_opt_t *opt = find_option(arg);
        if (!opt)
            usage_error("unknown option '%s'", arg);
        if (i + 1 >= argc)
            usage_error("option '%s' needs a value", arg);
        const char *val = argv[++i];
        if (!opt->valid(val)) {
            fprintf(stderr, "elixir-sim: bad %s '%s': want %s\n", opt->name, val, opt->want);
            exit(2);
        }
        if (setenv(opt->var, val, 1) != 0)
            usage_error("cannot set %s", opt->var);
    }
    return i;
}

int main(int argc, char **argv)
{
    int cmd = parse(argc, argv);
    if (cmd >= argc)
        usage_error("%s", "no command to run");
    int rc = set_paths();
    if (rc < 0) {
        fprintf(stderr, "elixir-sim: cannot find the simulator: %s\n", strerror(-rc));
        return 1;
    }
    execvp(argv[cmd], argv + cmd);
    fprintf(stderr, "elixir-sim: cannot run '%s': %s\n", argv[cmd], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
