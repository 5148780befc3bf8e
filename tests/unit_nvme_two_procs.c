/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_two_procs.c - processes of one job sharing a directory never collide: four
 * processes open areas in the same directory at the same moment (with O_TMPFILE, and with
 * created-and-unlinked files), each fills every slot of its own with its own pattern, reads
 * them all back intact, and the directory is empty once they are gone (the last to close
 * removes the directory's ledger).
 */
#include "nvme_test.h"

#define PROCS 4
#define SLOTS 8

/* The child: every slot gets seed id * 100 + slot; 0 when all read back. */
static int child(const char *dir, unsigned flags, int id, int go_fd)
{
    char c;
    if (read(go_fd, &c, 1) != 1)
        return 20;
    nvme_options_t o = nt_options(dir, SLOTS * 2ull * NT_MIB, NVME_ENGINE_AUTO);
    o.test_flags = flags;
    nvme_area_t *a = NULL;
    if (nvme_open(&o, &a))
        return 21;
    uint8_t *buf = nvme_staging(a, NULL);
    for (uint32_t s = 0; s < SLOTS; s++) {
        nt_fill(buf, 2 * NT_MIB, id * 100 + s);
        if (nvme_write_sync(a, s, buf, 2 * NT_MIB))
            return 22;
    }
    for (uint32_t s = 0; s < SLOTS; s++)
        if (nvme_read_sync(a, s, buf, 2 * NT_MIB) || nt_differs(buf, 2 * NT_MIB, id * 100 + s) >= 0)
            return 23;
    nvme_close(a);
    return 0;
}

static void run(const char *dir, unsigned flags)
{
    int go[2];
    pid_t pid[PROCS];
    NT_CHECK(pipe(go) == 0, "pipe");
    fflush(NULL);
    for (int i = 0; i < PROCS; i++) {
        pid[i] = fork();
        NT_CHECK(pid[i] >= 0, "fork");
        if (pid[i] == 0) {
            close(go[1]);
            _exit(child(dir, flags, i + 1, go[0]));
        }
    }
    close(go[0]);
    NT_CHECK(write(go[1], "gggg", PROCS) == PROCS, "start the children");
    close(go[1]);
    for (int i = 0; i < PROCS; i++) {
        int st = nt_wait(pid[i]);
        NT_CHECK(st == 0, "process %d%s: expected 0, got %d (21 open, 22 write, 23 read back)",
                 i + 1, flags ? " (no O_TMPFILE)" : "", st);
    }
    NT_EQ(nt_entries(dir), 0);
    NT_CHECK(!nt_ledger_exists(dir), "the last area to close left the ledger behind");
}

int main(void)
{
    const char *dir = nt_mkdir();
    run(dir, 0);
    run(dir, NVME_TEST_NO_TMPFILE);
    return 0;
}
