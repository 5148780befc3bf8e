/* SPDX-License-Identifier: MIT */
/*
 * unit_nvme_crc32c.c - CRC32C: the check value of "123456789" (0xE3069283), the crc32
 * instruction and the table agree on every length and alignment, and computing in pieces
 * gives the value of the whole.
 */
#include "nvme_test.h"
#include "nvme_int.h"

int main(void)
{
    NT_EQ(nvme_crc32c(0, "123456789", 9), 0xE3069283u);
    NT_EQ(nvme_crc32c_portable(0, "123456789", 9), 0xE3069283u);
    uint8_t *buf = nt_alloc(8192);
    nt_fill(buf, 8192, 7);
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len < 300; len += 7)
            NT_CHECK(nvme_crc32c(0, buf + off, len) == nvme_crc32c_portable(0, buf + off, len),
                     "offset %zu length %zu: %s and table differ", off, len, nvme_crc32c_impl());
    uint32_t whole = nvme_crc32c(0, buf, 8192);
    NT_EQ(nvme_crc32c(nvme_crc32c(0, buf, 1000), buf + 1000, 7192), whole);
    buf[4000] ^= 1;
    NT_CHECK(nvme_crc32c(0, buf, 8192) != whole, "a flipped bit left the CRC unchanged");
    printf("crc32c: %s\n", nvme_crc32c_impl());
    free(buf);
    return 0;
}
