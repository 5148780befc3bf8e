/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_engine_fallback.c - where io_uring cannot run, the pread/pwrite threads take
 * over: in a child whose seccomp filter makes io_uring_setup fail (EPERM, as
 * kernel.io_uring_disabled does; then ENOSYS, as a container's filter or an old kernel
 * does), the default engine is "psync", nvme_engine() says why io_uring is not running, data
 * round-trips, and asking for io_uring alone fails with that error.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "nvme_test.h"

/* Make io_uring_setup return -err from now on in this process. */
static int block_io_uring(int err)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        return -errno;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -errno : 0;
}

static int child(const char *dir, int err)
{
    if (block_io_uring(err))
        return 30;
    nvme_area_t *a = NULL;
    nvme_options_t o = nt_options(dir, 8 * NT_MIB, NVME_ENGINE_URING);
    int r = nvme_open(&o, &a);
    if (r != -err) {
        fprintf(stderr, "io_uring alone: expected %d, got %d\n", -err, r);
        return 31;
    }
    o.engine = NVME_ENGINE_AUTO;
    if (nvme_open(&o, &a))
        return 32;
    char why[160];
    const char *name = nvme_engine(a, why, sizeof(why));
    printf("engine %s: %s\n", name, why);
    if (strcmp(name, "psync") || !strstr(why, strerror(err)))
        return 33;
    uint8_t *buf = nvme_staging(a, NULL);
    nt_fill(buf, 2 * NT_MIB, 2);
    if (nvme_write_sync(a, 3, buf, 2 * NT_MIB))
        return 34;
    memset(buf, 0, 2 * NT_MIB);
    if (nvme_read_sync(a, 3, buf, 2 * NT_MIB) || nt_differs(buf, 2 * NT_MIB, 2) >= 0)
        return 35;
    nvme_close(a);
    return 0;
}

int main(void)
{
    const char *dir = nt_mkdir();
    static const int errs[] = { EPERM, ENOSYS };
    for (int i = 0; i < 2; i++) {
        fflush(NULL);
        pid_t pid = fork();
        NT_CHECK(pid >= 0, "fork");
        if (pid == 0) {
            int r = child(dir, errs[i]);
            fflush(NULL);
            _exit(r);
        }
        int st = nt_wait(pid);
        NT_CHECK(st == 0, "io_uring_setup failing with %s: expected 0, got %d (30 seccomp, 31 "
                 "io_uring alone, 32 open, 33 engine, 34 write, 35 read back)", strerror(errs[i]),
                 st);
    }
    nvme_area_t *a = nt_open(dir, 8 * NT_MIB, NVME_ENGINE_AUTO);
    char why[160];
    NT_CHECK(!strcmp(nvme_engine(a, why, sizeof(why)), "io_uring") && !why[0],
             "without a filter: expected io_uring, got %s (%s)", nvme_engine(a, NULL, 0), why);
    nvme_close(a);
    return 0;
}
