/* SPDX-License-Identifier: MIT */
/*
 * image.c - sim_image_ptx finds the PTX text in an image handed to cuModuleLoadData: plain
 * text, a fatbin container (magic 0xBA55ED50) or the registration wrapper that points to one
 * (0x466243B1).
 */
#include "ptx.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/*
 * Fatbin layout (little-endian), as nvcc 13 writes it:
 *   container header, 16 bytes: u32 magic 0xBA55ED50, u16 version 1, u16 header size (16),
 *     u64 size of everything after the header;
 *   entries back to back, each a header then its payload:
 *     +0 u16 kind (1 PTX, 2 ELF), +4 u32 header size (64 or 80), +8 u64 payload size (padded
 *     to 8), +16 u32 compressed size, +24 u16 minor, +26 u16 major, +28 u32 arch (90 = sm_90),
 *     +40 u64 flags (0x1 64-bit, 0x10 Linux, 0x2000 LZ4-compressed, 0x8000 zstd-compressed),
 *     +56 u64 uncompressed size (when compressed).
 * An uncompressed PTX payload is text padded with NULs.
 */
#define FATBIN_MAGIC        0xBA55ED50u
#define FATBIN_WRAPPER      0x466243B1u     /* __fatBinC_Wrapper_t, fatbinary_section.h */
#define ELF_MAGIC           0x464C457Fu     /* "\177ELF" */
#define FATBIN_ENTRY_MIN    64u
#define FATBIN_KIND_PTX     1u
#define FATBIN_COMPRESSED   (0x2000u | 0x8000u)

static uint64_t le(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;

    for (unsigned k = n; k > 0; k--)
        v = v << 8 | p[k - 1];
    return v;
}

/* Compare byte by byte so that a short NUL-terminated text is never read past its end. */
static bool has_magic(const unsigned char *p, uint32_t magic)
{
    for (unsigned i = 0; i < 4; i++)
        if (p[i] != (unsigned char)(magic >> (8 * i)))
            return false;
    return true;
}

/* The wrapper {int magic; int version; const unsigned long long *data; void *...}. */
static const unsigned char *unwrap(const unsigned char *w)
{
    const unsigned char *data;
    uint64_t version = le(w + 4, 4);

    if (version != 1 && version != 2)
        return NULL;
    memcpy(&data, w + 8, sizeof data);
    return data && has_magic(data, FATBIN_MAGIC) ? data : NULL;
}

typedef struct fat_pick {
    const unsigned char *text;
    uint64_t size;
    uint64_t rank;          /* arch, then PTX version: the highest wins */
    bool compressed;        /* a PTX entry was skipped for being compressed */
} fat_pick_t;

static void consider_ptx(fat_pick_t *pick, const unsigned char *e, uint64_t hsize,
                         uint64_t psize)
{
    uint64_t rank = le(e + 28, 4) << 32 | le(e + 26, 2) << 16 | le(e + 24, 2);

    if (le(e + 40, 8) & FATBIN_COMPRESSED) {
        pick->compressed = true;
        return;
    }
    if (!pick->text || rank > pick->rank) {
        pick->text = e + hsize;
        pick->size = psize;
        pick->rank = rank;
    }
}

/* Find the best uncompressed PTX entry of the fatbin at fb. */
static int fatbin_ptx(const unsigned char *fb, const char **ptx, size_t *len)
{
    uint64_t off = le(fb + 6, 2), end = off + le(fb + 8, 8);
    fat_pick_t pick = { NULL, 0, 0, false };

    if (le(fb + 4, 2) != 1 || off < 16 || end < off)
        return -EINVAL;
    while (end - off >= FATBIN_ENTRY_MIN) {
        const unsigned char *e = fb + off;
        uint64_t hsize = le(e + 4, 4), psize = le(e + 8, 8);

        if (hsize < FATBIN_ENTRY_MIN || hsize > end - off || psize > end - off - hsize)
            return -EINVAL;
        if (le(e, 2) == FATBIN_KIND_PTX)
            consider_ptx(&pick, e, hsize, psize);
        off += hsize + psize;
    }
    if (!pick.text)
        return pick.compressed ? -ENOTSUP : -ENOEXEC;
    *ptx = (const char *)pick.text;
    *len = strnlen(*ptx, (size_t)pick.size);
    return 0;
}

/* PTX text starts, after white space and comments, with a directive such as .version. */
static bool looks_like_ptx(const char *s)
{
    for (;;) {
        s += strspn(s, " \t\r\n\f\v");
        if (s[0] == '/' && s[1] == '/') {
            s += strcspn(s, "\n");
        } else if (s[0] == '/' && s[1] == '*') {
            const char *close = strstr(s + 2, "*/");
            if (!close)
                return false;
            s = close + 2;
        } else {
            return s[0] == '.' && ((s[1] >= 'a' && s[1] <= 'z') || (s[1] >= 'A' && s[1] <= 'Z'));
        }
    }
}

int sim_image_ptx(const void *image, const char **ptx, size_t *len, int *kind)
{
    const unsigned char *p = image;
    int k = 0, rc = -EINVAL;

    if (!p || !ptx || !len) {
        /* nothing to look at */
    } else if (has_magic(p, FATBIN_WRAPPER) || has_magic(p, FATBIN_MAGIC)) {
        p = has_magic(p, FATBIN_MAGIC) ? p : unwrap(p);
        k = p ? SIM_IMAGE_FATBIN : 0;
        rc = p ? fatbin_ptx(p, ptx, len) : -EINVAL;
    } else if (has_magic(p, ELF_MAGIC)) {
        k = SIM_IMAGE_ELF;
        rc = -ENOEXEC;
    } else if (looks_like_ptx((const char *)p)) {
        k = SIM_IMAGE_PTX;
        *ptx = (const char *)p;
        *len = strlen(*ptx);
        rc = 0;
    }
    if (kind)
        *kind = k;
    return rc;
}
