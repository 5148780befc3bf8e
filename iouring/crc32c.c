/* SPDX-License-Identifier: MIT */
/*
 * crc32c.c - CRC32C (Castagnoli, the iSCSI and ext4 checksum) of slot contents, for
 * ELIXIR_NVME_VERIFY.
 *
 * On x86-64 with SSE4.2 the crc32 instruction does 8 bytes a cycle or so (a 2 MiB slot in
 * well under a millisecond, small beside its I/O); elsewhere a byte-wise table computed once
 * gives the same values, slower.  Both are the reflected polynomial 0x82F63B78 with the
 * usual pre- and post-inversion: nvme_crc32c(0, "123456789", 9) == 0xE3069283.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "nvme.h"

#define POLY 0x82F63B78u

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[i] = c;
    }
}

static uint32_t crc_table(uint32_t crc, const uint8_t *p, size_t len)
{
    pthread_once(&table_once, table_init);
    while (len--)
        crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p,
                                                             size_t len)
{
    uint64_t c = crc;
    for (; len && ((uintptr_t)p & 7); len--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    for (; len >= 8; len -= 8, p += 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = _mm_crc32_u64(c, v);
    }
    for (; len; len--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return (uint32_t)c;
}

static int have_sse42(void)
{
    return __builtin_cpu_supports("sse4.2");
}
#else
static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
    return crc_table(crc, p, len);
}

static int have_sse42(void)
{
    return 0;
}
#endif

uint32_t nvme_crc32c(uint32_t crc, const void *buf, size_t len)
{
    crc = ~crc;
    crc = have_sse42() ? crc_sse42(crc, buf, len) : crc_table(crc, buf, len);
    return ~crc;
}

const char *nvme_crc32c_impl(void)
{
    return have_sse42() ? "sse4.2" : "table";
}

uint32_t nvme_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
    return ~crc_table(~crc, buf, len);
}
