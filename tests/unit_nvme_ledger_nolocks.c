/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_ledger_nolocks.c - an area goes on without the directory's ledger where it cannot
 * use one, sized as if alone:
 *   - a file system that refuses the ledger's locks (NVME_TEST_NO_LOCKS acts so): the area
 *     opens, says why (ENOLCK), works, and leaves no ledger file in the directory;
 *   - another user's ledger (mode 0600) in a directory users share (run as root: a child
 *     that became nobody opens an area beside root's): the area opens and says EACCES, and
 *     root's ledger is untouched.
 */
#include <sys/stat.h>

#include "nvme_test.h"

/* The second case; skipped (nothing checked) unless run as root. */
static void other_user(const char *dir)
{
    if (geteuid() != 0)
        return;
    char shared[320];
    snprintf(shared, sizeof(shared), "%s/shared", dir);
    NT_CHECK(mkdir(shared, 0700) == 0 && chmod(shared, 01777) == 0 && chmod(dir, 0755) == 0,
             "a shared directory");
    nvme_area_t *mine = nt_open(shared, 4 * NT_MIB, NVME_ENGINE_AUTO);
    NT_CHECK(nt_ledger_exists(shared), "root's ledger");
    fflush(NULL);
    pid_t pid = fork();
    NT_CHECK(pid >= 0, "fork");
    if (pid == 0) {
        nvme_options_t o = nt_options(shared, 4 * NT_MIB, NVME_ENGINE_AUTO);
        nvme_area_t *a = NULL;
        nvme_ledger_info_t li;
        if (setgid(65534) || setuid(65534))
            _exit(30);
        if (nvme_open(&o, &a))
            _exit(31);
        nvme_area_ledger(a, &li);
        nvme_close(a);
        _exit(li.none == EACCES ? 0 : 32);
    }
    int st = nt_wait(pid);
    NT_CHECK(st == 0, "nobody's area: expected 0, got %d (30 setuid, 31 open, 32 not EACCES)", st);
    nvme_ledger_info_t li;
    NT_EQ(nvme_ledger_read(shared, &li), 0);
    NT_EQ(li.live, 1);
    NT_EQ(li.reclaimed, 0);
    nvme_close(mine);
    NT_EQ(nt_entries(shared), 0);
    NT_CHECK(!nt_ledger_exists(shared), "root's ledger left in %s", shared);
    printf("another user's ledger: the area went on alone\n");
}

int main(void)
{
    const char *dir = nt_mkdir();
    nvme_options_t o = nt_options(dir, 4 * NT_MIB, NVME_ENGINE_AUTO);
    o.test_flags = NVME_TEST_NO_LOCKS;
    nvme_area_t *a = nt_open_opts(&o);
    nvme_ledger_info_t li;
    nvme_area_ledger(a, &li);
    NT_EQ(li.none, ENOLCK);
    NT_EQ(nvme_size(a), 4 * NT_MIB);
    NT_CHECK(!nt_ledger_exists(dir), "a ledger without locks was left in %s", dir);
    uint8_t *buf = nvme_staging(a, NULL);
    nt_fill(buf, 2 * NT_MIB, 5);
    NT_EQ(nvme_write_sync(a, 1, buf, 2 * NT_MIB), 0);
    memset(buf, 0, 2 * NT_MIB);
    NT_EQ(nvme_read_sync(a, 1, buf, 2 * NT_MIB), 0);
    NT_EQ(nt_differs(buf, 2 * NT_MIB, 5), -1);
    nvme_close(a);
    NT_EQ(nt_entries(dir), 0);
    NT_CHECK(!nt_ledger_exists(dir), "a ledger left in %s", dir);
    other_user(dir);
    return 0;
}
