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
 *
 * Before that it checks what it passes on, and refuses to start CMD (exit 2) when:
 *   - an ELIXIR_SIM_* variable (set by an option or already in the environment) is not an
 *     option of the simulator, or its value is not valid: the rules are the simulator's own
 *     (sim/simconfig.c, linked in), under which it would stop the program at cuInit;
 *   - LD_PRELOAD names libelixir.so by a relative path, or one that cannot be read: the
 *     dynamic loader would then run CMD without the shim, saying little or nothing.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simconfig.h"

#define USAGE "usage: elixir-sim [--memory SIZE] [--devices N] [--machine NAME] -- CMD [ARGS...]\n"

extern char **environ;

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
           "  --memory SIZE   memory per device: at least 2M, digits with an optional K, M, G\n"
           "                  or T suffix (sets ELIXIR_SIM_MEMORY)\n"
           "  --devices N     number of devices, 1 to 16 (sets ELIXIR_SIM_DEVICES)\n"
           "  --machine NAME  machine model: %s\n"
           "                  (sets ELIXIR_SIM_MACHINE)\n"
           "  --help          print this help\n"
           "  --version       print the version\n\n"
           "LD_LIBRARY_PATH gets the simulator's directory in front, and ELIXIR_SIM_KERNELS the\n"
           "example kernels (build/examples/kernels_sim.so) at its end.  Other ELIXIR_SIM_*\n"
           "variables pass through unchanged.  Every ELIXIR_SIM_* variable is checked with the\n"
           "simulator's own rules, and LD_PRELOAD must name libelixir.so by an absolute path\n"
           "that exists; otherwise CMD does not start (exit status 2).\n", sim_model_names());
}

/* Refuse to start CMD: the message, then exit 2. */
__attribute__((format(printf, 1, 2), noreturn)) static void refuse(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "elixir-sim: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(2);
}

/* Refuse value v of simulator option i when the simulator would not take it; `given` says
 * where it came from ("--memory " or "ELIXIR_SIM_MEMORY="). */
static void check_value(int i, const char *given, const char *v)
{
    sim_config_t scratch;

    sim_config_defaults(&scratch);
    if (sim_option_apply(&scratch, i, v) == 0)
        return;
    if (strcmp(sim_option_name(i), "MACHINE") == 0)
        refuse("unknown machine model %s\"%s\": the known models are %s", given, v,
               sim_model_names());
    refuse("%s\"%s\" is not valid: expected %s", given, v, sim_option_form(i));
}

/* Every ELIXIR_SIM_* variable of the environment must be an option with a valid value. */
static void check_sim_environment(void)
{
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "ELIXIR_SIM_", 11) != 0)
            continue;
        const char *name = *e + 11, *eq = strchr(name, '=');
        char opt[64], given[96];
        int i = -1;
        if (eq && (size_t)(eq - name) < sizeof(opt)) {
            snprintf(opt, sizeof(opt), "%.*s", (int)(eq - name), name);
            i = sim_option_find(opt);
        }
        if (i < 0) {
            fprintf(stderr, "elixir-sim: ELIXIR_SIM_%.*s is not an option of the simulator; "
                    "its options are", eq ? (int)(eq - name) : 64, name);
            for (int j = 0; j < sim_option_count(); j++)
                fprintf(stderr, "%s ELIXIR_SIM_%s", j ? "," : "", sim_option_name(j));
            fprintf(stderr, "\n");
            exit(2);
        }
        snprintf(given, sizeof(given), "ELIXIR_SIM_%s=", opt);
        check_value(i, given, eq + 1);
    }
}

/* An LD_PRELOAD entry (separated by ':' or spaces) naming libelixir must be an absolute path
 * to a readable file: a relative one is looked up from wherever CMD runs (or, without a '/',
 * in the library search path), and one that cannot be opened is skipped by the loader, CMD
 * then running without the shim. */
static void check_preload(void)
{
    const char *pre = getenv("LD_PRELOAD");
    char entry[PATH_MAX], abs[PATH_MAX];

    for (const char *p = pre; p && *p; p += strspn(p, ": ")) {
        size_t n = strcspn(p, ": ");
        snprintf(entry, sizeof(entry), "%.*s", (int)n, p);
        p += n;
        const char *base = strrchr(entry, '/');
        if (strncmp(base ? base + 1 : entry, "libelixir", 9) != 0)
            continue;
        if (entry[0] != '/') {
            int found = realpath(entry, abs) != NULL;
            refuse("LD_PRELOAD=%s is a relative path: the dynamic loader looks for it from the "
                   "directory the command runs in (or in the library path) and, not finding "
                   "it, runs the command without Elixir; use an absolute path%s%s", entry,
                   found ? ", here LD_PRELOAD=" : "", found ? abs : "");
        }
        if (access(entry, R_OK) != 0)
            refuse("LD_PRELOAD=%s cannot be read (%s): the command would run without Elixir; "
                   "give the absolute path of the built libelixir.so", entry, strerror(errno));
    }
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

/* The command-line options and the simulator options they set. */
static const struct {
    const char *name, *option;
} options[] = {
    { "--memory", "MEMORY" },
    { "--devices", "DEVICES" },
    { "--machine", "MACHINE" },
};

/* The simulator option behind command-line option `name`, or NULL. */
static const char *find_option(const char *name)
{
    for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
        if (strcmp(options[i].name, name) == 0)
            return options[i].option;
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
        if (strcmp(arg, "--version") == 0) {
            printf("elixir-sim %s\n", ELIXIR_VERSION);
            exit(0);
        }
        if (arg[0] != '-')
            return i; /* CMD without "--" */
        const char *opt = find_option(arg);
        if (!opt)
            usage_error("unknown option '%s'", arg);
        if (i + 1 >= argc)
            usage_error("option '%s' needs a value", arg);
        const char *val = argv[++i];
        char given[64], var[64];
        snprintf(given, sizeof(given), "%s ", arg);
        check_value(sim_option_find(opt), given, val);
        snprintf(var, sizeof(var), "ELIXIR_SIM_%s", opt);
        if (setenv(var, val, 1) != 0)
            usage_error("cannot set %s", var);
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
    check_sim_environment();
    check_preload();
    execvp(argv[cmd], argv + cmd);
    fprintf(stderr, "elixir-sim: cannot run '%s': %s\n", argv[cmd], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
