/* SPDX-License-Identifier: MIT */
/*
 * symbols.c - function names for (module, offset) frames, from the modules' ELF files, and
 * their source lines, from the files' DWARF line tables (dwarf_line.c).
 *
 * A module is read once: its ELF header, program headers (the PT_LOAD segments give the load
 * base and the address ranges) and section headers, then its function symbols from .symtab,
 * or from .dynsym when the file is stripped, sorted by address.  The file is not trusted:
 * every offset, size, count and index is checked against the file's size and the format
 * before anything is read or allocated, names are bounded by their string table, and any
 * failure leaves the module unresolvable (cached as such) instead of crashing.  The line
 * table is read separately, at the first question about a line: a module without one (or
 * whose debug sections are compressed) has no lines, and its names still resolve.  At most
 * CACHE_MAX modules and CACHE_BYTES of their tables are kept, the least recently used going
 * first.
 */
#include "symbols.h"

#include "dwarf_line.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_MAX   64
#define CACHE_BYTES (1ull << 30)       /* symbol and string tables kept, all modules */
#define MAX_SEGS    64                 /* PT_LOAD segments kept */
#define MAX_TABLE   (512ull << 20)     /* largest symbol or string table read, bytes */
#define PAGE        4096u

typedef struct sym {
    uint64_t value, size;
    uint32_t name;                     /* offset in the module's string table */
} sym_t;

typedef struct seg {
    uint64_t start, end;               /* an executable PT_LOAD segment's addresses */
} seg_t;

typedef struct module {
    char *path;
    int err;                           /* 0, or why it cannot be used */
    uint64_t base;                     /* lowest PT_LOAD address, rounded down to the page */
    seg_t segs[MAX_SEGS];
    size_t nsegs;
    sym_t *syms;
    size_t nsyms;
    char *strtab;                      /* NUL-terminated at its end, whatever the file says */
    uint64_t bytes;                    /* of syms, strtab and lines */
    uint64_t used;                     /* tick of the last use */
    int lines_read;                    /* lines holds the DWARF line table, or none exists */
    dl_table_t lines;
} module_t;

static module_t *cache[CACHE_MAX];
static uint64_t ticks, cached_bytes;

/* ------------------------------------------------------------------ reading the file */

typedef struct elf_file {
    int fd;
    uint64_t size;
} elf_file_t;

/* The len bytes at off, malloc'd (NULL when they are not all inside the file). */
static void *read_at(const elf_file_t *f, uint64_t off, uint64_t len)
{
    if (off > f->size || len > f->size - off || len > MAX_TABLE)
        return NULL;
    char *buf = malloc(len ? len : 1);
    for (uint64_t got = 0; buf && got < len;) {
        ssize_t k = pread(f->fd, buf + got, len - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            free(buf);
            return NULL;
        }
        got += (uint64_t)k;
    }
    return buf;
}

static int check_ident(const Elf64_Ehdr *e)
{
    if (memcmp(e->e_ident, ELFMAG, SELFMAG) != 0)
        return -ENOEXEC;
    if (e->e_ident[EI_CLASS] != ELFCLASS64 || e->e_ident[EI_DATA] != ELFDATA2LSB ||
        __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
        return -ENOTSUP;
    if (e->e_type != ET_EXEC && e->e_type != ET_DYN)
        return -ENOEXEC;
    return 0;
}

/* Opens path for reading when it is a regular file (its size in *size): the fd, or -errno
 * (-ENOEXEC: not a regular file).  Module paths come from the trace, so the open must not
 * block or do anything else: a path that is not a regular file is refused before it is opened
 * (opening a device may act: a tape rewinds, a terminal becomes the controlling one), and
 * O_NONBLOCK and O_NOCTTY keep one that became such in between from hanging or taking over. */
static int open_regular(const char *path, uint64_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -errno;
    if (!S_ISREG(st.st_mode))
        return -ENOEXEC;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -ENOEXEC;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

/* Opens the ELF file at path into *f (fd -1 when it cannot be opened; the caller closes it
 * otherwise) and reads its header into *e: 0, or -errno (-ENOEXEC: not a regular file, or
 * not an executable or shared object; -ENOTSUP: not 64-bit little-endian). */
static int elf_open(elf_file_t *f, Elf64_Ehdr *e, const char *path)
{
    *f = (elf_file_t){ -1, 0 };
    int fd = open_regular(path, &f->size);
    if (fd < 0)
        return fd;
    f->fd = fd;
    void *hdr = read_at(f, 0, sizeof(*e));
    if (!hdr)
        return -ENOEXEC;
    memcpy(e, hdr, sizeof(*e));
    free(hdr);
    return check_ident(e);
}

/* The PT_LOAD segments and the load base. */
static int read_segments(module_t *m, const elf_file_t *f, const Elf64_Ehdr *e)
{
    if (e->e_phentsize != sizeof(Elf64_Phdr) || e->e_phnum == 0 || e->e_phnum == PN_XNUM)
        return -ENOEXEC;
    Elf64_Phdr *ph = read_at(f, e->e_phoff, (uint64_t)e->e_phnum * sizeof(Elf64_Phdr));
    if (!ph)
        return -ENOEXEC;
    uint64_t low = UINT64_MAX;
    for (unsigned i = 0; i < e->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD || ph[i].p_memsz > UINT64_MAX - ph[i].p_vaddr)
            continue;
        if (ph[i].p_vaddr < low)
            low = ph[i].p_vaddr;
        if ((ph[i].p_flags & PF_X) && m->nsegs < MAX_SEGS)
            m->segs[m->nsegs++] = (seg_t){ ph[i].p_vaddr, ph[i].p_vaddr + ph[i].p_memsz };
    }
    free(ph);
    if (low == UINT64_MAX)
        return -ENOEXEC;
    m->base = low & ~(uint64_t)(PAGE - 1);
    return 0;
}

/* The section headers, checked: *n of them. */
static Elf64_Shdr *read_sections(const elf_file_t *f, const Elf64_Ehdr *e, unsigned *n)
{
    if (e->e_shentsize != sizeof(Elf64_Shdr) || e->e_shnum == 0)
        return NULL;
    *n = e->e_shnum;
    return read_at(f, e->e_shoff, (uint64_t)e->e_shnum * sizeof(Elf64_Shdr));
}

/* The index of the symbol table to use (.symtab, else .dynsym), or -1. */
static int pick_symtab(const Elf64_Shdr *sh, unsigned n)
{
    int dyn = -1;
    for (unsigned i = 0; i < n; i++) {
        if (sh[i].sh_entsize != sizeof(Elf64_Sym) || sh[i].sh_size < sizeof(Elf64_Sym) ||
            sh[i].sh_link >= n || sh[sh[i].sh_link].sh_type != SHT_STRTAB)
            continue;
        if (sh[i].sh_type == SHT_SYMTAB)
            return (int)i;
        if (sh[i].sh_type == SHT_DYNSYM && dyn < 0)
            dyn = (int)i;
    }
    return dyn;
}

static int by_address(const void *a, const void *b)
{
    const sym_t *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return x->size > y->size ? -1 : x->size < y->size;
}

/* Keeps the defined functions of syms (count entries) whose names lie in the table. */
static int keep_functions(module_t *m, const Elf64_Sym *syms, size_t count, uint64_t strsz)
{
    m->syms = malloc((count ? count : 1) * sizeof(sym_t));
    if (!m->syms)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        unsigned type = ELF64_ST_TYPE(syms[i].st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || syms[i].st_shndx == SHN_UNDEF ||
            syms[i].st_value == 0 || syms[i].st_name == 0 || syms[i].st_name >= strsz)
            continue;
        m->syms[m->nsyms++] = (sym_t){ syms[i].st_value, syms[i].st_size, syms[i].st_name };
    }
    qsort(m->syms, m->nsyms, sizeof(sym_t), by_address);
    return 0;
}

/* The function symbols of the file into m; *kind is the table's type (SHT_SYMTAB, or
 * SHT_DYNSYM for a stripped file; 0: none). */
static int read_symbols(module_t *m, const elf_file_t *f, const Elf64_Ehdr *e, unsigned *kind)
{
    unsigned n = 0;
    Elf64_Shdr *sh = read_sections(f, e, &n);
    int i = sh ? pick_symtab(sh, n) : -1, rc = -ENOENT;
    *kind = i >= 0 ? sh[i].sh_type : 0;
    if (i >= 0) {
        const Elf64_Shdr *st = &sh[i], *ss = &sh[st->sh_link];
        Elf64_Sym *syms = read_at(f, st->sh_offset, st->sh_size);
        char *str = ss->sh_size < MAX_TABLE ? read_at(f, ss->sh_offset, ss->sh_size) : NULL;
        char *owned = str ? realloc(str, ss->sh_size + 1) : NULL;
        if (syms && owned) {
            owned[ss->sh_size] = 0;
            m->strtab = owned;
            rc = keep_functions(m, syms, st->sh_size / sizeof(Elf64_Sym), ss->sh_size);
            m->bytes = ss->sh_size + m->nsyms * sizeof(sym_t);
        } else {
            free(owned ? owned : str);
            rc = -ENOEXEC;
        }
        free(syms);
    }
    free(sh);
    return rc;
}

/* An ELF file opened for its sections: the header, the section headers and their names. */
typedef struct elf_view {
    elf_file_t f;
    Elf64_Ehdr e;
    Elf64_Shdr *sh;
    unsigned n;
    char *names;                       /* section names, NUL-terminated at nlen */
    uint64_t nlen;
} elf_view_t;

static void view_close(elf_view_t *v)
{
    if (v->f.fd >= 0)
        close(v->f.fd);
    free(v->sh);
    free(v->names);
}

/* Opens path as a 64-bit little-endian ELF file with section headers: 0, or -errno.
 * view_close is called either way. */
static int view_open(elf_view_t *v, const char *path)
{
    memset(v, 0, sizeof(*v));
    int rc = elf_open(&v->f, &v->e, path);
    if (rc < 0)
        return rc;
    if (!(v->sh = read_sections(&v->f, &v->e, &v->n)) || v->e.e_shstrndx >= v->n ||
        v->sh[v->e.e_shstrndx].sh_type != SHT_STRTAB)
        return -ENOEXEC;
    const Elf64_Shdr *ns = &v->sh[v->e.e_shstrndx];
    v->names = read_at(&v->f, ns->sh_offset, ns->sh_size);
    v->nlen = v->names ? ns->sh_size : 0;
    if (v->nlen && v->names[v->nlen - 1] != 0)
        v->nlen = 0;                   /* (section names must end inside it) */
    return 0;
}

/* The section named `name`, whole, in *len bytes; NULL when there is none (or it holds no
 * bytes in the file, or is compressed: no decompressor here). */
static uint8_t *read_named(const elf_view_t *v, const char *name, size_t *len)
{
    for (unsigned i = 0; i < v->n; i++) {
        if (v->sh[i].sh_name >= v->nlen || strcmp(v->names + v->sh[i].sh_name, name) != 0)
            continue;
        if (v->sh[i].sh_type == SHT_NOBITS || (v->sh[i].sh_flags & SHF_COMPRESSED))
            return NULL;
        *len = (size_t)v->sh[i].sh_size;
        return read_at(&v->f, v->sh[i].sh_offset, v->sh[i].sh_size);
    }
    return NULL;
}

/* The DWARF line table of v into m->lines: 0, or -ENOENT when v has none. */
static int read_lines(module_t *m, const elf_view_t *v)
{
    dl_sections_t s = { 0 };
    uint8_t *line = read_named(v, ".debug_line", &s.line_len);
    uint8_t *lstr = read_named(v, ".debug_line_str", &s.line_str_len);
    uint8_t *str = read_named(v, ".debug_str", &s.str_len);
    s.line = line, s.line_str = lstr, s.str = str;
    int rc = line ? dl_parse(&m->lines, &s) : -ENOENT;
    free(line);
    free(lstr);
    free(str);
    return rc;
}

/* ------------------------------------------------------------------ separate debug files */

/* v's GNU build id (NT_GNU_BUILD_ID note) in id, its length (0: none). */
static size_t build_id(const elf_view_t *v, uint8_t id[64])
{
    size_t len = 0, got = 0;
    uint8_t *note = read_named(v, ".note.gnu.build-id", &len);
    for (size_t at = 0; note && at + 12 <= len && !got;) {
        uint32_t nsz, dsz, type;
        memcpy(&nsz, note + at, 4);
        memcpy(&dsz, note + at + 4, 4);
        memcpy(&type, note + at + 8, 4);
        size_t name = at + 12, desc = name + (((size_t)nsz + 3) & ~(size_t)3);
        if (nsz > len || dsz > len || desc > len || dsz > len - desc)
            break;
        if (type == NT_GNU_BUILD_ID && nsz == 4 && memcmp(note + name, "GNU", 4) == 0 &&
            dsz > 0 && dsz <= 64) {
            memcpy(id, note + desc, dsz);
            got = dsz;
        }
        at = desc + (((size_t)dsz + 3) & ~(size_t)3);
    }
    free(note);
    return got;
}

/* The CRC-32 of the whole file at path (the one .gnu_debuglink records), or -1 when it
 * cannot be read. */
static int64_t file_crc(const char *path)
{
    static uint32_t table[256];
    if (!table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    uint64_t size;
    int fd = open_regular(path, &size);
    if (fd < 0)
        return -1;
    uint8_t buf[65536];
    uint32_t crc = 0xffffffffu;
    ssize_t k;
    while ((k = read(fd, buf, sizeof(buf))) > 0 || (k < 0 && errno == EINTR))
        for (ssize_t i = 0; i < k; i++)
            crc = table[(crc ^ buf[i]) & 0xff] ^ (crc >> 8);
    close(fd);
    return k < 0 ? -1 : (int64_t)(crc ^ 0xffffffffu);
}

/* Opens the candidate debug file at path into d when it belongs to the module: its build id
 * is `id` (when the module has one), and its CRC is `crc` (when one is given, >= 0). */
static int debug_candidate(elf_view_t *d, const char *path, const uint8_t *id, size_t idlen,
                           int64_t crc)
{
    uint8_t did[64];
    if (view_open(d, path) < 0)
        goto no;
    if (idlen && (build_id(d, did) != idlen || memcmp(did, id, idlen) != 0))
        goto no;
    if (crc >= 0 && file_crc(path) != crc)
        goto no;
    return 0;
no:
    view_close(d);
    d->f.fd = -1;
    return -ENOENT;
}

/* The directories searched for separate debug files: ELIXIR_DEBUG_DIRS (colon-separated),
 * else /usr/lib/debug. */
static const char *debug_dirs(void)
{
    const char *e = getenv("ELIXIR_DEBUG_DIRS");
    return e && *e ? e : "/usr/lib/debug";
}

/* The separate debug file of the module at path (opened as v), opened into d, as a debugger
 * finds it: by build id under each debug directory (.build-id/xx/rest.debug), then by the
 * .gnu_debuglink name next to the module, in its .debug/ directory and under each debug
 * directory followed by the module's own.  0, or -ENOENT. */
static int debug_file(elf_view_t *d, const char *path, const elf_view_t *v)
{
    uint8_t id[64];
    char cand[3 * PATH_MAX], hex[129];
    size_t idlen = build_id(v, id);
    for (size_t i = 0; i < idlen; i++)
        snprintf(hex + 2 * i, 3, "%02x", id[i]);
    const char *dirs = debug_dirs();
    for (const char *p = dirs; idlen > 1 && *p;) {
        size_t n = strcspn(p, ":");
        snprintf(cand, sizeof(cand), "%.*s/.build-id/%.2s/%s.debug", (int)n, p, hex, hex + 2);
        if (n && debug_candidate(d, cand, id, idlen, -1) == 0)
            return 0;
        p += n + (p[n] == ':');
    }
    size_t len = 0;
    char *link = (char *)read_named(v, ".gnu_debuglink", &len);
    size_t nl = link ? strnlen(link, len) : 0, at = (nl + 4) & ~(size_t)3;
    int rc = -ENOENT;
    if (link && nl && nl < len && at + 4 <= len && !strchr(link, '/')) {
        uint32_t crc;
        memcpy(&crc, link + at, 4);
        const char *slash = strrchr(path, '/');
        int dl = slash ? (int)(slash - path) : 0;
        snprintf(cand, sizeof(cand), "%.*s/%s", dl, path, link);
        if (strcmp(cand, path) != 0 && debug_candidate(d, cand, id, idlen, crc) == 0)
            rc = 0;
        snprintf(cand, sizeof(cand), "%.*s/.debug/%s", dl, path, link);
        if (rc && debug_candidate(d, cand, id, idlen, crc) == 0)
            rc = 0;
        for (const char *p = dirs; rc && *p;) {
            size_t n = strcspn(p, ":");
            snprintf(cand, sizeof(cand), "%.*s%.*s/%s", (int)n, p, dl, path, link);
            if (n && debug_candidate(d, cand, id, idlen, crc) == 0)
                rc = 0;
            p += n + (p[n] == ':');
        }
    }
    free(link);
    return rc;
}

/* The .symtab of m's separate debug file replaces m's symbols (a stripped module's .dynsym,
 * or none), when there is such a file and table. */
static void debug_symbols(module_t *m)
{
    elf_view_t v, d;
    module_t t = { 0 };
    unsigned kind = 0;
    if (view_open(&v, m->path) == 0 && debug_file(&d, m->path, &v) == 0) {
        if (read_symbols(&t, &d.f, &d.e, &kind) == 0 && kind == SHT_SYMTAB && t.nsyms) {
            free(m->syms);
            free(m->strtab);
            m->syms = t.syms, m->nsyms = t.nsyms, m->strtab = t.strtab, m->bytes = t.bytes;
            m->err = 0;
            t.syms = NULL, t.strtab = NULL;
        }
        free(t.syms);
        free(t.strtab);
        view_close(&d);
    }
    view_close(&v);
}

/* Reads the module's file into m; m->err says why it cannot be used.  A module stripped of
 * its .symtab takes the one of its separate debug file, when there is one. */
static void load(module_t *m)
{
    Elf64_Ehdr e;
    elf_file_t f;
    unsigned kind = 0;
    m->err = elf_open(&f, &e, m->path);
    if (!m->err)
        m->err = read_segments(m, &f, &e);
    if (!m->err)
        m->err = read_symbols(m, &f, &e, &kind);
    if (f.fd >= 0)
        close(f.fd);
    if ((m->err == 0 || m->err == -ENOENT) && kind != SHT_SYMTAB)
        debug_symbols(m);
}

/* Reads m's line table, once (none is remembered too): from the module itself, else from
 * its separate debug file. */
static void load_lines(module_t *m)
{
    elf_view_t v, d;
    m->lines_read = 1;
    if (view_open(&v, m->path) == 0 && read_lines(m, &v) == -ENOENT &&
        debug_file(&d, m->path, &v) == 0) {
        read_lines(m, &d);
        view_close(&d);
    }
    view_close(&v);
}

/* ------------------------------------------------------------------ the cache */

static void drop(module_t *m)
{
    if (!m)
        return;
    cached_bytes -= m->bytes;
    free(m->path);
    free(m->syms);
    free(m->strtab);
    dl_free(&m->lines);
    free(m);
}

void tsym_clear(void)
{
    for (int i = 0; i < CACHE_MAX; i++) {
        drop(cache[i]);
        cache[i] = NULL;
    }
}

/* The slot of the least recently used module other than `keep` (or an empty slot first,
 * when `empty` allows), or -1. */
static int victim(const module_t *keep, int empty)
{
    int v = -1;
    for (int i = 0; i < CACHE_MAX; i++) {
        if (!cache[i] && empty)
            return i;
        if (cache[i] && cache[i] != keep && (v < 0 || cache[i]->used < cache[v]->used))
            v = i;
    }
    return v;
}

/* Older modules than `keep` go while the cache holds more than CACHE_BYTES. */
static void trim(const module_t *keep)
{
    int v;
    while (cached_bytes > CACHE_BYTES && (v = victim(keep, 0)) >= 0) {
        drop(cache[v]);
        cache[v] = NULL;
    }
}

/* The cached module of path, loaded on first use; older modules go when the cache is over
 * its count or its bytes. */
static module_t *module_of(const char *path)
{
    for (int i = 0; i < CACHE_MAX; i++)
        if (cache[i] && strcmp(cache[i]->path, path) == 0) {
            cache[i]->used = ++ticks;
            return cache[i];
        }
    module_t *m = calloc(1, sizeof(*m));
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return NULL;
    }
    load(m);
    m->used = ++ticks;
    cached_bytes += m->bytes;
    int v = victim(m, 1);
    drop(cache[v]);
    cache[v] = m;
    trim(m);
    return m;
}

/* ------------------------------------------------------------------ look-up */

static int in_segments(const module_t *m, uint64_t addr)
{
    for (size_t i = 0; i < m->nsegs; i++)
        if (addr >= m->segs[i].start && addr < m->segs[i].end)
            return 1;
    return 0;
}

/* Index of the last symbol starting at or before addr, or SIZE_MAX. */
static size_t last_at_or_before(const module_t *m, uint64_t addr)
{
    size_t lo = 0, hi = m->nsyms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->syms[mid].value <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : SIZE_MAX;
}

/* The symbol for the address: one starting exactly there, else one holding addr - 1 (or a
 * sizeless one just before it).  NULL when none. */
static const sym_t *find(const module_t *m, uint64_t addr)
{
    size_t i = last_at_or_before(m, addr);
    if (i == SIZE_MAX || addr == 0)
        return NULL;
    while (i > 0 && m->syms[i - 1].value == m->syms[i].value)
        i--;                           /* the first (largest) of those at the same address */
    if (m->syms[i].value == addr)
        return &m->syms[i];
    i = last_at_or_before(m, addr - 1);
    for (size_t k = 0; i != SIZE_MAX && k < 64 && k <= i; k++) {
        const sym_t *s = &m->syms[i - k];
        if (addr - 1 - s->value < s->size)
            return s;
        if (k == 0 && s->size == 0)
            return s;
    }
    return NULL;
}

/* The address in m of the frame at `offset`, and its function (NULL when none). */
static const sym_t *frame(const module_t *m, uint64_t offset, uint64_t *addr)
{
    *addr = in_segments(m, offset) ? offset : offset + m->base;
    return in_segments(m, *addr) || in_segments(m, *addr - 1) ? find(m, *addr) : NULL;
}

int tsym_lookup(const char *module, uint64_t offset, char *name, size_t len,
                uint64_t *sym_off)
{
    if (!module || !module[0])
        return -ENOENT;
    module_t *m = module_of(module);
    if (!m)
        return -ENOMEM;
    if (m->err)
        return m->err;
    uint64_t addr;
    const sym_t *s = frame(m, offset, &addr);
    if (!s)
        return -ENOENT;
    snprintf(name, len, "%s", m->strtab + s->name);
    *sym_off = addr - s->value;
    return 0;
}

int tsym_line(const char *module, uint64_t offset, char *file, size_t len, uint32_t *line)
{
    if (!module || !module[0])
        return -ENOENT;
    module_t *m = module_of(module);
    if (!m)
        return -ENOMEM;
    if (m->err && m->err != -ENOENT)
        return m->err;
    if (!m->lines_read) {
        load_lines(m);
        m->bytes += dl_bytes(&m->lines);
        cached_bytes += dl_bytes(&m->lines);
        trim(m);
    }
    uint64_t addr;
    const sym_t *s = frame(m, offset, &addr);   /* (no symbols: -ENOENT, none found) */
    /* The call's line, before the return address; a function's first byte is its own. */
    const char *f;
    if (addr == 0 || dl_find(&m->lines, s && s->value == addr ? addr : addr - 1, &f, line))
        return -ENOENT;
    snprintf(file, len, "%s", f);
    return 0;
}

/* ------------------------------------------------------------------ C++ names */

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

const char *tsym_demangle(const char *name, char *buf, size_t len)
{
    static demangle_fn demangle;
    static int tried;
    if (!name || strncmp(name, "_Z", 2) != 0 || !len)
        return name;
    if (!tried) {
        tried = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h)
            *(void **)&demangle = dlsym(h, "__cxa_demangle");
    }
    int status = -1;
    char *d = demangle ? demangle(name, NULL, NULL, &status) : NULL;
    if (!d || status != 0) {
        free(d);
        return name;
    }
    snprintf(buf, len, "%s", d);
    free(d);
    return buf;
}
