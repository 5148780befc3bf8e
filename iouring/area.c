/* SPDX-License-Identifier: MIT */
/*
 * area.c - the swap area: opening the file or device behind nvme_options_t.path, sizing and
 * preallocating it, and the life cycle of an nvme_area_t (open, close, queries).
 *
 * A directory gets an unnamed file (O_TMPFILE): it has no name from the start, so no exit
 * path (exit(), a fatal signal, SIGKILL, a power cut) can leave it behind, and any number of
 * processes share the directory without colliding.  Where the file system has no O_TMPFILE
 * the file is created under a unique name with O_EXCL and unlinked at once.  A regular file
 * is used as it is and kept, locked (flock) so that a second process cannot use it too; a
 * block device is opened with O_EXCL, which the kernel refuses while it is mounted or
 * opened so by another.  Everything is opened O_DIRECT (the page cache would double the host
 * memory the tier exists to save), mode 0600, close-on-exec, and a file is preallocated
 * with fallocate so that running out of space is an error at open, not during a write.
 * A directory's areas split its space through the directory's ledger (ledger.c), which also
 * sizes an area given none.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nvme_int.h"

#define OPEN_FLAGS (O_RDWR | O_DIRECT | O_CLOEXEC)

/* Whether an O_TMPFILE failure means "this file system has none" (not a real error). */
static int tmpfile_unsupported(int err)
{
    return err == EOPNOTSUPP || err == EISDIR || err == EINVAL;
}

/* Create a uniquely named file in dir and unlink it at once; the fd or -errno. */
static int open_unlinked(const char *dir)
{
    static unsigned counter;
    struct timespec ts;
    char name[4200];
    clock_gettime(CLOCK_MONOTONIC, &ts);
    for (int tries = 0; tries < 100; tries++) {
        unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
        snprintf(name, sizeof(name), "%s/.elixir-nvme-%ld-%u-%lx", dir, (long)getpid(), n,
                 (unsigned long)(ts.tv_nsec ^ ((unsigned long)tries << 20)));
        int fd = open(name, OPEN_FLAGS | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            unlink(name);
            return fd;
        }
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

/* An unnamed file in directory dir; sets a->kind. */
static int open_in_dir(nvme_area_t *a, const char *dir, unsigned test_flags)
{
    if (!(test_flags & NVME_TEST_NO_TMPFILE)) {
        int fd = open(dir, OPEN_FLAGS | O_TMPFILE, 0600);
        if (fd >= 0) {
            a->kind = NVME_AREA_TMPFILE;
            return fd;
        }
        if (!tmpfile_unsupported(errno))
            return -errno;
    }
    a->kind = NVME_AREA_UNLINKED;
    return open_unlinked(dir);
}

/* The size of a block device or regular file already open as fd. */
static int current_size(int fd, const struct stat *st, uint64_t *out)
{
    if (S_ISBLK(st->st_mode))
        return ioctl(fd, BLKGETSIZE64, out) < 0 ? -errno : 0;
    *out = (uint64_t)st->st_size;
    return 0;
}

/* Choose the size: given (checked against a device), or the default of the kind. */
static int choose_size(nvme_area_t *a, const nvme_options_t *o, const struct stat *st)
{
    uint64_t have = 0;
    int err = 0;
    if (a->kind == NVME_AREA_FILE || a->kind == NVME_AREA_BLOCKDEV)
        err = current_size(a->fd, st, &have);
    if (err)
        return err;
    uint64_t size = o->size;
    if (a->kind == NVME_AREA_TMPFILE || a->kind == NVME_AREA_UNLINKED)
        err = nvme_ledger_size(a, o->path, size, o->share, &size);
    else if (!size)
        size = have;
    if (err)
        return err;
    if (a->kind == NVME_AREA_BLOCKDEV && size > have)
        return -ENOSPC;
    a->size = size / a->slot_size * a->slot_size;
    return a->size ? 0 : -ENOSPC;
}

/* Reserve the blocks of a file, so that writes never meet ENOSPC.  A file system without
 * fallocate (EOPNOTSUPP) gets a plain size instead. */
static int preallocate(nvme_area_t *a)
{
    if (a->kind == NVME_AREA_BLOCKDEV)
        return 0;
    int r = fallocate(a->fd, 0, 0, (off_t)a->size);
    if (r == 0)
        return 0;
    if (errno != EOPNOTSUPP)
        return -errno;
    return ftruncate(a->fd, (off_t)a->size) < 0 ? -errno : 0;
}

/* Open o->path as the area's file (a->fd, kind, size), preallocated. */
int nvme_area_open_file(nvme_area_t *a, const nvme_options_t *o)
{
    struct stat st;
    if (stat(o->path, &st) < 0)
        return -errno;
    int fd;
    if (S_ISDIR(st.st_mode)) {
        fd = open_in_dir(a, o->path, o->test_flags);
    } else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
        a->kind = S_ISBLK(st.st_mode) ? NVME_AREA_BLOCKDEV : NVME_AREA_FILE;
        fd = open(o->path, OPEN_FLAGS | (S_ISBLK(st.st_mode) ? O_EXCL : 0));
        fd = fd < 0 ? -errno : fd;
    } else {
        return -EINVAL;
    }
    if (fd < 0)
        return fd;
    a->fd = fd;
    if (a->kind == NVME_AREA_FILE && flock(fd, LOCK_EX | LOCK_NB) < 0)
        return errno == EWOULDBLOCK ? -EBUSY : -errno;
    snprintf(a->path, sizeof(a->path), "%s", o->path);
    int dir = S_ISDIR(st.st_mode), err = 0;
    if (dir)
        err = nvme_ledger_begin(a, o->path, o->test_flags);
    if (!err)
        err = choose_size(a, o, &st);
    if (!err)
        err = preallocate(a);
    return err || !dir ? err : nvme_ledger_commit(a);
}

/* Fill in and check the numbers of o, defaults applied. */
static int check_options(nvme_area_t *a, const nvme_options_t *o)
{
    a->slot_size = o->slot_size ? o->slot_size : NVME_DEFAULT_SLOT;
    a->queue_depth = o->queue_depth ? o->queue_depth : NVME_DEFAULT_QUEUE_DEPTH;
    a->block_size = o->block_size ? o->block_size : NVME_DEFAULT_BLOCK;
    if (!o->block_size && a->block_size > a->slot_size)
        a->block_size = a->slot_size;
    a->max_ops = o->max_ops ? o->max_ops : 256;
    a->verify = o->verify != 0;
    if (!o->path || !o->path[0] || a->slot_size % NVME_ALIGN || a->block_size % NVME_ALIGN ||
        a->slot_size > NVME_MAX_SLOT || a->slot_size % a->block_size || a->queue_depth > 4096 || a->max_ops > (1u << 20))
        return -EINVAL;
    if ((o->staging && ((uintptr_t)o->staging % NVME_ALIGN || o->staging_bytes % NVME_ALIGN ||
                        !o->staging_bytes)) || o->engine > NVME_ENGINE_PSYNC)
        return -EINVAL;
    return 0;
}

/* The staging pool: the caller's, or page-aligned memory of the module's own. */
static int staging_init(nvme_area_t *a, const nvme_options_t *o)
{
    if (o->staging) {
        a->staging = o->staging;
        a->staging_bytes = o->staging_bytes;
        return 0;
    }
    size_t bytes = o->staging_bytes ? o->staging_bytes : NVME_DEFAULT_STAGING;
    bytes = (bytes + NVME_ALIGN - 1) / NVME_ALIGN * NVME_ALIGN;
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -errno;
    a->staging = p;
    a->staging_bytes = bytes;
    a->staging_owned = 1;
    return 0;
}

/* Start the engine o asks for: io_uring first under AUTO. */
static int engine_init(nvme_area_t *a, const nvme_options_t *o)
{
    int err = -ENOSYS;
    if (o->engine != NVME_ENGINE_PSYNC)
        err = nvme_uring_init(a);
    if (err == 0 || o->engine == NVME_ENGINE_URING)
        return err;
    return nvme_psync_init(a);
}

int nvme_open(const nvme_options_t *o, nvme_area_t **out)
{
    nvme_area_t *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->fd = -1;
    a->ledger_fd = -1;
    a->ledger_rec = -1;
    int err = check_options(a, o);
    if (!err)
        err = nvme_area_open_file(a, o);
    if (!err)
        err = nvme_slots_init(a);
    if (!err)
        err = nvme_io_init(a);
    if (!err)
        err = staging_init(a, o);
    if (!err)
        err = engine_init(a, o);
    if (err) {
        nvme_close(a);
        return err;
    }
    *out = a;
    return 0;
}

void nvme_close(nvme_area_t *a)
{
    if (!a)
        return;
    if (a->eng) {
        nvme_done_t d[16];
        while (nvme_pending(a) && nvme_complete(a, d, 16, 1) > 0)
            ;
        a->eng->fini(a);
    }
    if (a->staging_owned)
        munmap(a->staging, a->staging_bytes);
    nvme_io_fini(a);
    nvme_slots_fini(a);
    if (a->fd >= 0)
        close(a->fd);
    nvme_ledger_end(a);
    free(a);
}

uint64_t nvme_size(const nvme_area_t *a) { return a->size; }
uint32_t nvme_slot_size(const nvme_area_t *a) { return a->slot_size; }
uint32_t nvme_block_size(const nvme_area_t *a) { return a->block_size; }
nvme_area_kind_t nvme_area_kind(const nvme_area_t *a) { return a->kind; }

void *nvme_staging(nvme_area_t *a, size_t *bytes)
{
    if (bytes)
        *bytes = a->staging_bytes;
    return a->staging;
}

const char *nvme_engine(const nvme_area_t *a, char *why, size_t n)
{
    if (why && n)
        snprintf(why, n, "%s", a->eng_why);
    return a->eng ? a->eng->name : "none";
}

int nvme_registered(const nvme_area_t *a) { return a->registered; }
