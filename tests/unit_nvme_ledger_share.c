/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_ledger_share.c - processes of one job split a directory through its ledger: on
 * a 64 MiB tmpfs, four processes told they are four (share 4) open areas of no size at the
 * same moment and each gets a quarter of what the file system could spare (in whole slots);
 * the ledger (mode 0600, no data) counts the four; an explicit size that does not fit beside
 * them is refused; SIGKILL ends one, and the next opener reclaims its record and gets its
 * space; once all are gone nothing is left, the ledger included.  A ledger of garbage
 * reads as empty.
 */
#include <signal.h>

#include "nvme_test.h"

#define PROCS 4
#define SLOT (2ull * NT_MIB)

/* The child: once the parent says go (a byte on go_fd: one per child), open an area of no
 * size with share PROCS, send its size, wait for the parent to close end_fd (a pipe of its
 * own: a child that read on from go_fd could take another's byte), then close and exit. */
static int child(const char *dir, int go_fd, int end_fd, int size_fd)
{
    char c;
    if (read(go_fd, &c, 1) != 1)
        return 20;
    nvme_options_t o = nt_options(dir, 0, NVME_ENGINE_AUTO);
    o.share = PROCS;
    nvme_area_t *a = NULL;
    uint64_t size = 0;
    int err = nvme_open(&o, &a);
    if (!err)
        size = nvme_size(a);
    if (write(size_fd, &size, sizeof(size)) != sizeof(size))
        return 21;
    if (err)
        return 22;
    while (read(end_fd, &c, 1) > 0)
        ;
    nvme_close(a);
    return 0;
}

static void check_mode(const char *dir)
{
    char p[600];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s", dir, NVME_LEDGER_NAME);
    NT_CHECK(stat(p, &st) == 0, "stat %s: %s", p, strerror(errno));
    NT_EQ(st.st_mode & 0777, 0600);
    NT_CHECK(st.st_size <= 64 * (PROCS + 2), "the ledger holds %lld bytes", (long long)st.st_size);
}

int main(void)
{
    nt_mkdir();
    const char *mnt = nt_mount_tmpfs(64);
    uint64_t spare, size[PROCS], sum = 0;
    NT_EQ(nvme_default_size(mnt, SLOT, &spare), 0);
    int go[2], end[2], sz[2];
    pid_t pid[PROCS];
    NT_CHECK(pipe(go) == 0 && pipe(end) == 0 && pipe(sz) == 0, "pipe");
    fflush(NULL);
    for (int i = 0; i < PROCS; i++) {
        pid[i] = fork();
        NT_CHECK(pid[i] >= 0, "fork");
        if (pid[i] == 0) {
            close(go[1]);
            close(end[1]);
            close(sz[0]);
            _exit(child(mnt, go[0], end[0], sz[1]));
        }
    }
    close(go[0]);
    close(end[0]);
    close(sz[1]);
    NT_CHECK(write(go[1], "gggg", PROCS) == PROCS, "start the children");
    for (int i = 0; i < PROCS; i++) {
        NT_CHECK(read(sz[0], &size[i], sizeof(size[i])) == sizeof(size[i]), "a child's size");
        NT_CHECK(size[i] >= spare / PROCS / SLOT * SLOT && size[i] <= spare / PROCS + SLOT,
                 "area %d: %llu bytes, expected a quarter of %llu in whole slots", i,
                 (unsigned long long)size[i], (unsigned long long)spare);
        sum += size[i];
    }
    NT_CHECK(sum <= spare, "the areas hold %llu bytes, more than the %llu spare",
             (unsigned long long)sum, (unsigned long long)spare);

    nvme_ledger_info_t li;
    NT_EQ(nvme_ledger_read(mnt, &li), 0);
    NT_EQ(li.live, PROCS);
    NT_EQ(li.live_bytes, sum);
    NT_EQ(li.reclaimed, 0);
    check_mode(mnt);

    /* Beside them, what the file system still has plus a slot does not fit. */
    nvme_area_t *a = NULL;
    nvme_options_t o = nt_options(mnt, nt_avail(mnt) / SLOT * SLOT + SLOT, NVME_ENGINE_AUTO);
    NT_EQ(nvme_open(&o, &a), -ENOSPC);

    /* One killed: its record is reclaimed and its space is the next opener's. */
    kill(pid[0], SIGKILL);
    NT_EQ(nt_wait(pid[0]), 128 + SIGKILL);
    for (int i = 0; i < 100 && nt_avail(mnt) < size[0]; i++)
        usleep(100000);                 /* (io_uring gives its files back from a worker) */
    o = nt_options(mnt, size[0], NVME_ENGINE_AUTO);
    a = nt_open_opts(&o);
    nvme_area_ledger(a, &li);
    NT_EQ(li.reclaimed, 1);
    NT_EQ(li.live, PROCS - 1);
    NT_EQ(li.live_bytes, sum - size[0]);
    NT_EQ(nvme_ledger_read(mnt, &li), 0);
    NT_EQ(li.live, PROCS);
    NT_EQ(li.live_bytes, sum);
    nvme_close(a);

    close(go[1]);
    close(end[1]);
    for (int i = 1; i < PROCS; i++)
        NT_EQ(nt_wait(pid[i]), 0);
    NT_EQ(nt_entries(mnt), 0);
    NT_CHECK(!nt_ledger_exists(mnt), "the last area to close left the ledger behind");

    /* A ledger of garbage reads as empty: an area opens beside it and removes it. */
    FILE *junk = fopen(nt_path("mnt/" NVME_LEDGER_NAME), "w");
    NT_CHECK(junk && fprintf(junk, "%0300d\n", 7) > 0 && fclose(junk) == 0, "junk ledger");
    nvme_close(nt_open(mnt, 4 * NT_MIB, NVME_ENGINE_AUTO));
    NT_EQ(nt_entries(mnt), 0);
    NT_CHECK(!nt_ledger_exists(mnt), "the ledger of garbage is still there");
    printf("4 areas of %llu, %llu, %llu, %llu bytes of %llu spare\n",
           (unsigned long long)size[0], (unsigned long long)size[1],
           (unsigned long long)size[2], (unsigned long long)size[3],
           (unsigned long long)spare);
    return 0;
}
