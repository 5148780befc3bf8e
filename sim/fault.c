/* SPDX-License-Identifier: MIT */
/*
 * fault.c - turning memory faults of simulated device work into CUDA errors.
 *
 * Kernels and copies run on the executor thread inside sim_guarded().  An access to an
 * unmapped or inaccessible range raises SIGSEGV (or SIGBUS); the handler, when the faulting
 * thread is inside a guarded region, jumps back out and the operation is reported as
 * CUDA_ERROR_ILLEGAL_ADDRESS.  Faults anywhere else are handed to the previous handler, so
 * the application's own crashes stay crashes.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include "sim.h"

static _Thread_local sigjmp_buf *guard_env;
static _Thread_local volatile uint64_t guard_addr;
static struct sigaction old_segv, old_bus;

static void chain(int sig, siginfo_t *si, void *uc)
{
    struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
    if (old->sa_flags & SA_SIGINFO) {
        old->sa_sigaction(sig, si, uc);
    } else if (old->sa_handler != SIG_IGN && old->sa_handler != SIG_DFL) {
        old->sa_handler(sig);
    } else {
        /* Re-raise with the default action: the fault repeats on return and kills us. */
        signal(sig, SIG_DFL);
    }
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    sigjmp_buf *env = guard_env;
    if (env) {
        guard_env = NULL;
        guard_addr = (uint64_t)(uintptr_t)si->si_addr;
        siglongjmp(*env, 1);
    }
    chain(sig, si, uc);
}

void sim_fault_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
}

int sim_guarded(void (*fn)(void *), void *arg, uint64_t *addr)
{
    sigjmp_buf env;
    /* No mask to save: the handler runs with SA_NODEFER, so SIGSEGV is never left blocked,
     * and saving the mask would cost a system call per operation. */
    if (sigsetjmp(env, 0)) {
        *addr = guard_addr;
        return -EFAULT;
    }
    guard_env = &env;
    fn(arg);
    guard_env = NULL;
    return 0;
}

void sim_fault_raise(uint64_t addr)
{
    sigjmp_buf *env = guard_env;
    if (env) {
        guard_env = NULL;
        guard_addr = addr;
        siglongjmp(*env, 1);
    }
}
