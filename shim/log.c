/* SPDX-License-Identifier: MIT */
/*
 * log.c - the shim's log: levels crossed with subsystems, one line per message.
 *
 * The macros in shim.h test level and subsystem before anything is formatted, so a disabled
 * line costs two relaxed loads.  A line is formatted on the stack and written with a single
 * write(2), so lines of concurrent threads and processes do not interleave; no stdio, no
 * allocation, no lock.  Format:
 *     elixir host:pid:tid WARN shim/init.c:42 message     (errors and warnings)
 *     elixir host:pid:tid INFO INIT message               (info and trace)
 * ELIXIR_LOG_FILE sends lines to a file instead of stderr; %p in its name becomes the
 * process id and %h the host name, and a forked child reopens it under its own id.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

_Atomic int shim_log_level = SHIM_LOG_WARN;
_Atomic unsigned shim_log_mask = SHIM_SUB_ALL;

const char *const shim_subsys_names[SHIM_NSUBSYS] = {
#define X(name) [SHIM_SUB_BIT_##name] = #name,
    SHIM_SUBSYSTEMS(X)
#undef X
};

static const char *const level_tags[] = { "ERROR", "WARN", "INFO", "TRACE" };

static _Atomic int log_fd = STDERR_FILENO;
static _Atomic int reopen_after_fork;
static char hostname[64] = "?";
static const char *pattern;             /* ELIXIR_LOG_FILE, "" for stderr; set once */

/* Write all of buf, retrying short writes and interruptions. */
static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

int shim_expand_name(const char *pat, char *out, size_t size)
{
    size_t n = 0;

    for (const char *p = pat; *p; p++) {
        char pid[16];
        const char *add = p;
        size_t len = 1;

        if (p[0] == '%' && (p[1] == 'p' || p[1] == 'h' || p[1] == '%')) {
            p++;
            snprintf(pid, sizeof(pid), "%d", (int)getpid());
            add = *p == 'p' ? pid : *p == 'h' ? hostname : "%";
            len = strlen(add);
        }
        if (n + len >= size)
            return -ENAMETOOLONG;
        memcpy(out + n, add, len);
        n += len;
    }
    out[n] = '\0';
    return 0;
}

/* Open the log file named by the pattern; on failure log to stderr (in a forked child, rather
 * than into the parent's file, whose name says another process). */
static void open_log_file(void)
{
    char path[PATH_MAX];
    int fd = -1, old, err = ENAMETOOLONG;

    if (shim_expand_name(pattern, path, sizeof(path)) == 0 &&
        (fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
        err = errno;
    old = atomic_exchange(&log_fd, fd >= 0 ? fd : STDERR_FILENO);
    if (old != STDERR_FILENO)
        close(old);
    if (fd < 0)
        SHIM_WARN(INIT, "cannot open the log file ELIXIR_LOG_FILE=\"%s\": %s; logging to stderr",
                  pattern, strerror(err));
}

void shim_log_configure(void)
{
    if (gethostname(hostname, sizeof(hostname)) < 0)
        snprintf(hostname, sizeof(hostname), "?");
    hostname[sizeof(hostname) - 1] = '\0';
    atomic_store(&shim_log_level, (int)shim_opt_int(SHIM_OPT_LOG));
    atomic_store(&shim_log_mask, (unsigned)shim_opt_int(SHIM_OPT_LOG_SUBSYS));
    pattern = shim_opt_str(SHIM_OPT_LOG_FILE);
    if (pattern[0])
        open_log_file();
}

void shim_log_after_fork(void)
{
    if (pattern && strstr(pattern, "%p"))
        atomic_store(&reopen_after_fork, 1);
}

/* The file descriptor to write to, reopening a per-process file first in a forked child. */
static int current_fd(void)
{
    if (atomic_load_explicit(&reopen_after_fork, memory_order_relaxed) &&
        atomic_exchange(&reopen_after_fork, 0))
        open_log_file();
    return atomic_load_explicit(&log_fd, memory_order_relaxed);
}

/* One log line being built; len < sizeof(buf) always, with room kept for the newline. */
typedef struct line {
    char buf[1024];
    size_t len;
} line_t;

static void line_vadd(line_t *l, const char *fmt, va_list ap)
{
    int m = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);

    if (m > 0)
        l->len = l->len + (size_t)m < sizeof(l->buf) - 1 ? l->len + (size_t)m : sizeof(l->buf) - 1;
}

__attribute__((format(printf, 2, 3))) static void line_add(line_t *l, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    line_vadd(l, fmt, ap);
    va_end(ap);
}

static void line_emit(line_t *l)
{
    l->buf[l->len] = '\n';
    write_all(current_fd(), l->buf, l->len + 1);
}

void shim_log_write(int level, unsigned sub, const char *file, int line_no, const char *fmt, ...)
{
    int bit = __builtin_ctz(sub | (1u << SHIM_NSUBSYS));
    line_t l;
    va_list ap;

    l.len = 0;
    if (level < SHIM_LOG_ERROR || level > SHIM_LOG_TRACE)
        level = SHIM_LOG_ERROR;
    line_add(&l, "elixir %s:%d:%d %s ", hostname, (int)getpid(), (int)gettid(), level_tags[level]);
    if (level <= SHIM_LOG_WARN)
        line_add(&l, "%s:%d ", file, line_no);
    else if (bit < SHIM_NSUBSYS)
        line_add(&l, "%s ", shim_subsys_names[bit]);
    va_start(ap, fmt);
    line_vadd(&l, fmt, ap);
    va_end(ap);
    line_emit(&l);
}

void shim_log_fatal(const char *fmt, ...)
{
    line_t l;
    va_list ap;
    int fd = atomic_load_explicit(&log_fd, memory_order_relaxed);

    l.len = 0;
    line_add(&l, "elixir: error: ");
    va_start(ap, fmt);
    line_vadd(&l, fmt, ap);
    va_end(ap);
    l.buf[l.len] = '\n';
    write_all(STDERR_FILENO, l.buf, l.len + 1);
    if (fd != STDERR_FILENO)
        write_all(fd, l.buf, l.len + 1);
}

void shim_log_plain(const char *fmt, ...)
{
    line_t l;
    va_list ap;

    l.len = 0;
    line_add(&l, "elixir: ");
    va_start(ap, fmt);
    line_vadd(&l, fmt, ap);
    va_end(ap);
    line_emit(&l);
}
