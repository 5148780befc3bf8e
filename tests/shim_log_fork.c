/* SPDX-License-Identifier: MIT */
/*
 * shim_log_fork.c - a forked child that cannot open its own log file (ELIXIR_LOG_FILE with
 * %p) logs to stderr, as its warning says, and not into its parent's file.
 *
 * The scenario, under the shim with ELIXIR_LOG_FILE=DIR/log-%p.txt and allocations traced,
 * makes one allocation (the parent's file opens), renames DIR away (the parent keeps writing
 * to its open file), and forks; the child allocates once, which reopens the log under its own
 * process id: DIR is gone, so the child warns and logs to stderr.  The child's warning and its
 * allocation's line must be on stderr, and the parent's file must hold no line of the child.
 */
#include <string.h>

#include "shim_test.h"
#include "simtest.h"

static int in_child;

/* LeakSanitizer's documented hook (its name is the sanitizer's): no leak check when nonzero. */
int __lsan_is_turned_off(void);
__attribute__((visibility("default"), used)) int __lsan_is_turned_off(void)
{
    return in_child;
}

static void scenario(void)
{
    const char *dir = getenv("LOGDIR");
    char moved[256];
    CUdeviceptr d;
    int st;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&d, 4096));
    snprintf(moved, sizeof(moved), "%s.moved", dir);
    EXPECT(rename(dir, moved) == 0, "rename %s: %s", dir, strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        in_child = 1;
        cuMemAlloc(&d, 4096);           /* (CUDA_ERROR_NOT_INITIALIZED: a forked child) */
        printf("child %d\n", (int)getpid());
        fflush(stdout);
        exit(0);
    }
    EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "the child ended with status 0x%x", st);
    printf("parent %d\n", (int)getpid());
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    char dir[] = "/tmp/shim-log-fork-XXXXXX", logdir[64], logfile[96], path[160], tag[64];
    EXPECT(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    snprintf(logdir, sizeof(logdir), "LOGDIR=%s", dir);
    snprintf(logfile, sizeof(logfile), "ELIXIR_LOG_FILE=%s/log-%%p.txt", dir);
    const char *env[] = { logdir, logfile, "ELIXIR_LOG=trace", "ELIXIR_LOG_SUBSYS=ALLOC", NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    const char *c = strstr(r.out, "child "), *p = strstr(r.out, "parent ");
    EXPECT(c && p, "no process ids in:\n%s", r.out);
    int child = atoi(c + 6), parent = atoi(p + 7);

    snprintf(tag, sizeof(tag), ":%d:%d TRACE ALLOC cuMemAlloc_v2", child, child);
    EXPECT(strstr(r.err, "cannot open the log file") && strstr(r.err, tag),
           "the child's warning and allocation are not on stderr:\n%s", r.err);
    snprintf(path, sizeof(path), "%s.moved/log-%d.txt", dir, parent);
    FILE *f = fopen(path, "r");
    EXPECT(f, "no parent log %s: %s", path, strerror(errno));
    char *text = sh_slurp(fileno(f));
    snprintf(tag, sizeof(tag), ":%d:%d ", child, child);
    EXPECT(!strstr(text, tag), "the child logged into its parent's file:\n%s", text);
    EXPECT(strstr(text, "cuMemAlloc_v2"), "the parent's allocation is not in its file:\n%s", text);
    printf("the child (%d) logged to stderr, its parent (%d) to %s\n", child, parent, path);
    fclose(f);
    unlink(path);
    snprintf(path, sizeof(path), "%s.moved", dir);
    rmdir(path);
    free(text);
    sh_run_free(&r);
    return 0;
}
