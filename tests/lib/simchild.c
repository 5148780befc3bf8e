/* SPDX-License-Identifier: MIT */
/*
 * simchild.c - re-executing a test under other ELIXIR_SIM_* settings, and running part of a
 * test in a child process whose exit status and stderr are then checked (see simchild.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simchild.h"

/* Set one "NAME=VALUE" entry; returns 1 when it was already set to that value. */
static int put_env(const char *kv, int apply)
{
    char name[128];
    const char *eq = strchr(kv, '=');
    size_t n = eq ? (size_t)(eq - kv) : 0;

    if (!eq || n >= sizeof(name)) {
        fprintf(stderr, "simchild: bad environment entry \"%s\"\n", kv);
        exit(1);
    }
    memcpy(name, kv, n);
    name[n] = 0;
    const char *cur = getenv(name);
    if (cur && strcmp(cur, eq + 1) == 0)
        return 1;
    if (apply)
        setenv(name, eq + 1, 1);
    return 0;
}

void st_reexec(char **argv, const char *const *env)
{
    int all = 1;
    for (size_t i = 0; env[i]; i++)
        all &= put_env(env[i], 0);
    if (all)
        return;
    for (size_t i = 0; env[i]; i++)
        put_env(env[i], 1);
    fflush(NULL);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "simchild: cannot execute %s again: %s\n", argv[0], strerror(errno));
    exit(1);
}

/* Read a whole stream from its start into a NUL-terminated buffer. */
static char *slurp(FILE *f)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    rewind(f);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *nb = realloc(buf, cap * 2);
        if (!nb)
            free(buf);
        buf = nb;
        cap *= 2;
    }
    if (buf)
        buf[n] = 0;
    return buf;
}

int st_run_child(void (*fn)(void *), void *arg, const char *const *env, st_child_t *out)
{
    FILE *log = tmpfile();
    if (!log) {
        fprintf(stderr, "simchild: tmpfile: %s\n", strerror(errno));
        exit(1);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "simchild: fork: %s\n", strerror(errno));
        exit(1);
    }
    if (pid == 0) {
        dup2(fileno(log), 2);
        for (size_t i = 0; env && env[i]; i++)
            put_env(env[i], 1);
        fn(arg);
        exit(0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    out->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    out->err = slurp(log);
    fclose(log);
    if (!out->err) {
        fprintf(stderr, "simchild: out of memory reading the child's stderr\n");
        exit(1);
    }
    return 0;
}

void st_child_free(st_child_t *c)
{
    free(c->err);
    c->err = NULL;
}

void st_child_expect(const st_child_t *c, int status, const char *const *needles)
{
    int ok = c->status == status;
    for (size_t i = 0; ok && needles && needles[i]; i++)
        ok = strstr(c->err, needles[i]) != NULL;
    if (ok)
        return;
    fprintf(stderr, "child: expected exit status %d and stderr containing:", status);
    for (size_t i = 0; needles && needles[i]; i++)
        fprintf(stderr, " \"%s\"", needles[i]);
    fprintf(stderr, "\nchild: got exit status %d and stderr:\n%s\n", c->status, c->err);
    exit(1);
}
