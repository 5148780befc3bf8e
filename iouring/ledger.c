/* SPDX-License-Identifier: MIT */
/*
 * ledger.c - the directory's ledger: how the areas that processes open in one directory split
 * its file system's space.
 *
 * A directory area has no name (area.c), so nothing in the directory says who holds what.
 * The ledger is a small file in it, NVME_LEDGER_NAME, mode 0600, that never holds data: a
 * header line, then one fixed-size text record per area ("pid reserved allocated", bytes),
 * each with a liveness lock.  Locks are open file description locks (fcntl F_OFD_*), which
 * the kernel drops when the last descriptor of the open goes, whatever ends the process
 * (SIGKILL included): the same moment the area's unnamed file gives its space back, since
 * both descriptors are opened together and inherited together.
 *   - byte 0 of the file is the ledger's mutex (a write lock, waited for);
 *   - byte LIVE_BASE + i is record i's liveness lock, held by its area while it is open.
 * A record whose liveness lock nobody holds belongs to an area that is gone: the next opener
 * clears it (reclaims it).  The pid is recorded for the log only.
 *
 * Opening a directory area: lock the mutex, reclaim, size the area (the rule below), have
 * area.c preallocate it, then claim a free record (its liveness lock taken), write it and
 * unlock.  Preallocating under the mutex means a record's space is taken from the file system
 * by the time others read it; "allocated" (the file's blocks) says how much really was, for a
 * file system that cannot preallocate.
 *
 * The size of an area (nvme_ledger_size).  Free: what statvfs says is available, less what
 * live records reserved but did not allocate.  An explicit size must fit in that, else
 * -ENOSPC.  With no size (auto), the area takes what the file system can spare of it (free
 * less the margin of nvme_default_size) divided by the processes of the job still to come:
 * share - live others, this one included, at least 1 (share: how many processes are expected
 * to share the directory; 0 or 1: this one alone).  When all of a job's share open at once
 * with auto, each gets an equal part; those that come after them, or when others hold
 * explicit sizes, split what is left.
 *
 * A file system that keeps no OFD locks (fcntl refuses them: some network and FUSE ones)
 * has no ledger, nor has a process that may not open the one there (another user's, mode
 * 0600, in a directory users share): the area is sized as if alone, and
 * nvme_ledger_info_t.none says why.
 *
 * Closing (or nvme_ledger_leave, for a process that exits without closing): the record is
 * cleared and its lock dropped; the last live area unlinks the ledger
 * (under the mutex; an opener that locked a file meanwhile unlinked sees its link count at 0
 * and opens again).  After a crash the file stays, holding only dead records, until the next
 * area in the directory opens and closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "nvme_int.h"

#define REC 64                              /* bytes per record (and the header) */
#define MAX_RECS 4096                       /* records a ledger may hold */
#define LIVE_BASE (1ll << 30)               /* liveness lock of record i: byte LIVE_BASE + i */
#define HEADER "elixir-nvme-ledger 1: pid reserved-bytes allocated-bytes"

typedef struct rec {
    long pid;
    unsigned long long reserved, allocated;
} rec_t;

/* An OFD lock operation on one byte: cmd F_OFD_SETLK(W) or F_OFD_GETLK. */
static int lock_byte(int fd, int cmd, short type, off_t at, short *held)
{
    struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = at, .l_len = 1 };
    if (fcntl(fd, cmd, &fl) < 0)
        return -errno;
    if (held)
        *held = fl.l_type;
    return 0;
}

/* Open the ledger of dir (created if absent when create) with its mutex locked; the fd or
 * -errno.  A file unlinked between the open and the lock is left for a new one. */
static int open_locked(const char *dir, int create)
{
    char path[4200];
    struct stat fs, ps;
    snprintf(path, sizeof(path), "%s/%s", dir, NVME_LEDGER_NAME);
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
        if (fd < 0)
            return -errno;
        int err;
        while ((err = lock_byte(fd, F_OFD_SETLKW, F_WRLCK, 0, NULL)) == -EINTR)
            ;                           /* (a signal: wait again) */
        if (!err && fstat(fd, &fs) < 0)
            err = -errno;
        if (!err && fs.st_nlink > 0 && stat(path, &ps) == 0 && ps.st_ino == fs.st_ino &&
            ps.st_dev == fs.st_dev)
            return fd;
        close(fd);
        if (err)
            return err;
    }
    return -EAGAIN;
}

static int unlock_mutex(int fd)
{
    return lock_byte(fd, F_OFD_SETLK, F_UNLCK, 0, NULL);
}

/* Record i as written in the file (an absent or unreadable one reads as empty). */
static rec_t read_rec(int fd, unsigned i)
{
    char buf[REC + 1];
    rec_t r = { 0, 0, 0 };
    ssize_t n = pread(fd, buf, REC, (off_t)REC * (i + 1));
    if (n == REC) {
        buf[REC] = 0;
        if (sscanf(buf, "%ld %llu %llu", &r.pid, &r.reserved, &r.allocated) != 3)
            r = (rec_t){ 0, 0, 0 };
    }
    return r;
}

static int write_line(int fd, off_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int write_line(int fd, off_t at, const char *fmt, ...)
{
    char buf[REC + 1];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0 || n >= REC)
        return -EINVAL;
    memset(buf + n, ' ', REC - 1 - n);
    buf[REC - 1] = '\n';
    ssize_t w = pwrite(fd, buf, REC, at);
    return w == REC ? 0 : w < 0 ? -errno : -EIO;
}

static int write_rec(int fd, unsigned i, rec_t r)
{
    return write_line(fd, (off_t)REC * (i + 1), "%ld %llu %llu", r.pid, r.reserved,
                      r.allocated);
}

/* Records in the file. */
static unsigned nrecs(int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size < 2 * REC)
        return 0;
    unsigned n = (unsigned)(st.st_size / REC - 1);
    return n < MAX_RECS ? n : MAX_RECS;
}

/* Whether another open of the ledger holds record i's liveness lock; where the query fails
 * (ENOLCK on a network file system), taken as live: a record wrongly kept costs space, one
 * wrongly cleared hands out space an area holds. */
static int rec_live(int fd, unsigned i)
{
    short held = F_UNLCK;
    return lock_byte(fd, F_OFD_GETLK, F_WRLCK, LIVE_BASE + i, &held) != 0 || held != F_UNLCK;
}

/* Clear the records of areas that are gone; sum up the live ones (but record `self`) in *info.
 * The mutex is held. */
static void scan(int fd, long self, nvme_ledger_info_t *info)
{
    unsigned n = nrecs(fd);
    for (unsigned i = 0; i < n; i++) {
        rec_t r = read_rec(fd, i);
        if (!r.pid || (long)i == self)
            continue;
        if (!rec_live(fd, i)) {
            if (write_rec(fd, i, (rec_t){ 0, 0, 0 }) == 0)
                info->reclaimed++;
            continue;
        }
        info->live++;
        info->live_bytes += r.reserved;
        if (r.allocated < r.reserved)
            info->pending_bytes += r.reserved - r.allocated;
    }
}

/* Whether err says the file system keeps no such locks (some network and FUSE ones). */
static int no_locks(int err)
{
    return err == -EINVAL || err == -ENOLCK || err == -EOPNOTSUPP || err == -ENOSYS;
}

/* Whether an area may go on without the ledger for err: no locks, or a ledger this process
 * may not open (another user's, in a directory users share). */
static int no_ledger(int err)
{
    return no_locks(err) || err == -EACCES || err == -EPERM;
}

int nvme_ledger_begin(nvme_area_t *a, const char *dir, unsigned test_flags)
{
    int fd = test_flags & NVME_TEST_NO_LOCKS ? -ENOLCK : open_locked(dir, 1);
    memset(&a->ledger, 0, sizeof(a->ledger));
    if (no_ledger(fd)) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", dir, NVME_LEDGER_NAME);
        if (no_locks(fd))
            unlink(path);               /* (of no use to anyone on this file system) */
        a->ledger.none = -fd;           /* the area goes on alone */
        return 0;
    }
    if (fd < 0)
        return fd;
    a->ledger_fd = fd;
    a->ledger_locked = 1;
    if (nrecs(fd) == 0) {
        int err = write_line(fd, 0, "%s", HEADER);
        if (err)
            return err;
    }
    scan(fd, -1, &a->ledger);
    return 0;
}

/* What statvfs says the file system at dir has available, and the default's margin. */
static int fs_space(const char *dir, uint64_t *avail, uint64_t *margin)
{
    struct statvfs sv;
    if (statvfs(dir, &sv) < 0)
        return -errno;
    uint64_t total = (uint64_t)sv.f_blocks * sv.f_frsize;
    uint64_t floor = total / 10 < (1ull << 30) ? total / 10 : 1ull << 30;
    *avail = (uint64_t)sv.f_bavail * sv.f_frsize;
    *margin = total / 20 > floor ? total / 20 : floor;
    return 0;
}

int nvme_default_size(const char *dir, uint32_t slot_size, uint64_t *out)
{
    uint64_t avail, margin;
    if (!slot_size)
        return -EINVAL;
    int err = fs_space(dir, &avail, &margin);
    if (err)
        return err;
    *out = (avail > margin ? avail - margin : 0) / slot_size * slot_size;
    return *out ? 0 : -ENOSPC;
}

int nvme_ledger_size(nvme_area_t *a, const char *dir, uint64_t want, unsigned share,
                     uint64_t *out)
{
    uint64_t avail, margin;
    int err = fs_space(dir, &avail, &margin);
    if (err)
        return err;
    nvme_ledger_info_t *l = &a->ledger;
    uint64_t free_ = avail > l->pending_bytes ? avail - l->pending_bytes : 0;
    l->spare = free_ > margin ? free_ - margin : 0;
    l->share = share > l->live ? share - l->live : 1;
    if (want) {
        *out = want;
        return want <= free_ ? 0 : -ENOSPC;
    }
    *out = l->spare / l->share / a->slot_size * a->slot_size;
    return *out ? 0 : -ENOSPC;
}

int nvme_ledger_commit(nvme_area_t *a)
{
    if (a->ledger_fd < 0)
        return 0;
    struct stat st;
    uint64_t allocated = fstat(a->fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
    rec_t r = { (long)getpid(), a->size, allocated < a->size ? allocated : a->size };
    unsigned n = nrecs(a->ledger_fd), i;
    for (i = 0; i <= n && i < MAX_RECS; i++) {
        if (i < n && read_rec(a->ledger_fd, i).pid)
            continue;
        if (lock_byte(a->ledger_fd, F_OFD_SETLK, F_WRLCK, LIVE_BASE + i, NULL) == 0)
            break;
    }
    if (i > n || i >= MAX_RECS)
        return -EUSERS;
    a->ledger_rec = (long)i;
    a->ledger_pid = (long)getpid();
    int err = write_rec(a->ledger_fd, i, r);
    if (err)
        return err;
    a->ledger_locked = 0;
    return unlock_mutex(a->ledger_fd);
}

/* Remove the ledger of dir when no live record is left (the mutex held). */
static void unlink_unused(const char *dir, const nvme_ledger_info_t *left)
{
    char path[4200];
    if (left->live)
        return;
    snprintf(path, sizeof(path), "%s/%s", dir, NVME_LEDGER_NAME);
    unlink(path);
}

void nvme_ledger_end(nvme_area_t *a)
{
    if (a->ledger_fd < 0)
        return;
    if (a->ledger_rec >= 0 && a->ledger_pid != (long)getpid()) {
        close(a->ledger_fd);            /* a forked child's: the parent's open keeps its locks */
        a->ledger_fd = -1;
        return;
    }
    if (a->ledger_locked || lock_byte(a->ledger_fd, F_OFD_SETLKW, F_WRLCK, 0, NULL) == 0) {
        nvme_ledger_info_t left = { 0 };
        if (a->ledger_rec >= 0) {
            write_rec(a->ledger_fd, (unsigned)a->ledger_rec, (rec_t){ 0, 0, 0 });
            lock_byte(a->ledger_fd, F_OFD_SETLK, F_UNLCK, LIVE_BASE + a->ledger_rec, NULL);
        }
        scan(a->ledger_fd, -1, &left);
        unlink_unused(a->path, &left);
    }
    close(a->ledger_fd);            /* drops every lock of this open */
    a->ledger_fd = -1;
}

void nvme_ledger_leave(nvme_area_t *a)
{
    nvme_ledger_end(a);
}

void nvme_area_ledger(const nvme_area_t *a, nvme_ledger_info_t *out)
{
    *out = a->ledger;
}

int nvme_ledger_read(const char *dir, nvme_ledger_info_t *out)
{
    uint64_t avail, margin;
    memset(out, 0, sizeof(*out));
    int err = fs_space(dir, &avail, &margin);
    if (err)
        return err;
    int fd = open_locked(dir, 0);
    if (no_ledger(fd))
        out->none = -fd;
    if (fd >= 0) {
        scan(fd, -1, out);
        unlink_unused(dir, out);
        close(fd);
    } else if (fd != -ENOENT && !out->none) {
        return fd;
    }
    uint64_t free_ = avail > out->pending_bytes ? avail - out->pending_bytes : 0;
    out->spare = free_ > margin ? free_ - margin : 0;
    return 0;
}
