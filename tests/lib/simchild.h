/* SPDX-License-Identifier: MIT */
/*
 * simchild.h - helpers for tests that need a different simulator environment.
 *
 * The simulator reads its ELIXIR_SIM_* options once, in cuInit, so a test that needs another
 * machine model or execution mode re-executes itself with the variables set (st_reexec), and
 * a test that must show a racy or faulting program being caught runs that part in a child
 * process (st_run_child) and then checks the child's exit status and what it wrote to stderr.
 * Both must be used before the calling process initialises the driver.
 */
#ifndef SIMCHILD_H
#define SIMCHILD_H

typedef struct st_child {
    int status;     /* exit status, or 128 + signal number when killed */
    char *err;      /* everything the child wrote to stderr, NUL-terminated (malloc'd) */
} st_child_t;

/*
 * Unless every "NAME=VALUE" of the NULL-terminated list env is already set, set them all and
 * execute this program again with the same arguments.  Returns only when already set; exits 1
 * when the program cannot be executed again.
 */
void st_reexec(char **argv, const char *const *env);

/*
 * Fork; the child sets env ("NAME=VALUE" list, may be NULL), sends its stderr to a temporary
 * file, runs fn(arg) and exits 0 (the simulator's exit handler may change that status).  The
 * parent waits and fills *out.  Returns 0, or exits 1 when the child cannot be run.
 */
int st_run_child(void (*fn)(void *), void *arg, const char *const *env, st_child_t *out);

void st_child_free(st_child_t *c);

/* Check that the child exited with `status` and that its stderr holds every string of the
 * NULL-terminated list `needles`; on a mismatch print what was expected and got, exit 1. */
void st_child_expect(const st_child_t *c, int status, const char *const *needles);

#endif /* SIMCHILD_H */
