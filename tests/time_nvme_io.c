/* SPDX-License-Identifier: MIT */
/*
 * time_nvme_io.c - I/O charged on the simulated NVMe drive (elixirSimIoSubmit / Wait, found
 * with dlsym as a library of ours finds them): a 64 MiB read takes 64 MiB / 7 GB/s plus the
 * drive's 80 us latency of host time once waited for; two reads submitted together share the
 * read bandwidth; a write and a read submitted together share the drive's duplex limit (the
 * read takes what the write leaves); a ticket waited for twice, or an older one, moves the
 * clock no further; a bad direction, or a call before cuInit, gets ticket 0.  A second child
 * checks that the drive's figures follow their options.
 */
#include <stdint.h>
#include <sys/wait.h>

#include "simtest.h"

#define MIB (1ull << 20)
#define BYTES (64 * MIB)

typedef uint64_t (*io_submit_fn)(int dir, const void *buf, uint64_t bytes);
typedef void (*io_wait_fn)(uint64_t ticket);

static io_submit_fn io_submit;
static io_wait_fn io_wait;
static const char *name;

/* Host clock in ms. */
static double now_ms(void)
{
    return (double)sim_activity_clock() / 1e6;
}

static void near(double got, double want, const char *what)
{
    EXPECT(got >= want - 1e-4 && got <= want + 1e-4, "%s (%s): expected %.4f ms, got %.4f ms",
           what, name, want, got);
}

/* The default drive: 7 GB/s read, 5 GB/s write, 7 GB/s both together, 80 us latency. */
static void default_drive(void)
{
    const double read_ms = BYTES / 7e6, write_ms = BYTES / 5e6, lat = 0.080;

    double t0 = now_ms();
    uint64_t a = io_submit(ELIXIR_SIM_IO_READ, NULL, BYTES);
    EXPECT(a != 0, "a ticket for a 64 MiB read, got 0");
    near(now_ms() - t0, 0, "submitting takes no host time");
    io_wait(a);
    near(now_ms() - t0, read_ms + lat, "a 64 MiB read, waited for");
    io_wait(a);
    near(now_ms() - t0, read_ms + lat, "the same ticket waited for again");

    t0 = now_ms();
    a = io_submit(ELIXIR_SIM_IO_READ, NULL, BYTES);
    uint64_t b = io_submit(ELIXIR_SIM_IO_READ, NULL, BYTES);
    io_wait(b);
    near(now_ms() - t0, 2 * read_ms + lat, "two reads together: the second");
    io_wait(a);
    near(now_ms() - t0, 2 * read_ms + lat, "then the first, already complete");

    t0 = now_ms();
    a = io_submit(ELIXIR_SIM_IO_WRITE, NULL, BYTES);
    b = io_submit(ELIXIR_SIM_IO_READ, NULL, BYTES);
    io_wait(a);
    near(now_ms() - t0, write_ms + lat, "a write beside a read, submitted first");
    /* The read gets 7 - 5 = 2 GB/s while the write runs, then 7. */
    double beside = 2e6 * write_ms;
    io_wait(b);
    near(now_ms() - t0, write_ms + (BYTES - beside) / 7e6 + lat,
         "a read beside a write: what the duplex limit leaves");

    EXPECT(io_submit(2, NULL, MIB) == 0, "ticket 0 for direction 2");
    t0 = now_ms();
    io_wait(0);
    near(now_ms() - t0, 0, "waiting for ticket 0");
}

/* ELIXIR_SIM_NVME_*: 3.5 GB/s read, no duplex limit, no latency. */
static void configured_drive(void)
{
    double t0 = now_ms();
    uint64_t w = io_submit(ELIXIR_SIM_IO_WRITE, NULL, BYTES);
    uint64_t r = io_submit(ELIXIR_SIM_IO_READ, NULL, BYTES);
    io_wait(w);
    near(now_ms() - t0, BYTES / 5e6, "a write at 5 GB/s beside a read, no duplex limit");
    io_wait(r);
    near(now_ms() - t0, BYTES / 3.5e6, "the read at 3.5 GB/s beside it");
}

static int child(int configured)
{
    name = configured ? "configured drive" : "default drive";
    if (configured) {
        setenv("ELIXIR_SIM_NVME_READ_GBPS", "3.5", 1);
        setenv("ELIXIR_SIM_NVME_DUPLEX_GBPS", "0", 1);
        setenv("ELIXIR_SIM_NVME_LATENCY_US", "0", 1);
    }
    io_submit = (io_submit_fn)dlsym(RTLD_DEFAULT, "elixirSimIoSubmit");
    io_wait = (io_wait_fn)dlsym(RTLD_DEFAULT, "elixirSimIoWait");
    EXPECT(io_submit && io_wait, "the driver to export elixirSimIoSubmit and elixirSimIoWait");
    EXPECT(io_submit(ELIXIR_SIM_IO_READ, NULL, MIB) == 0, "ticket 0 before cuInit");
    st_setup(0);
    if (configured)
        configured_drive();
    else
        default_drive();
    printf("ok: %s\n", name);
    fflush(stdout);
    return 0;
}

int main(void)
{
    int rc = 0;
    if (!st_simulated())
        return TEST_SKIP;
    for (int configured = 0; configured < 2; configured++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            _exit(child(configured));
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
            printf("FAIL: the %s drive (status 0x%x)\n", configured ? "configured" : "default",
                   st);
            rc = 1;
        }
    }
    return rc;
}
