/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_symbols.c - call sites are symbolised from the modules' ELF files.
 *
 * Frames of this very executable, computed the way a recorder does (dladdr: the module and
 * the offset from its load base): a return address inside trace_tool_caller() and the
 * first byte of trace_tool_other() must come out as those names with the right offsets,
 * in the table and in the JSON; a function of the C library (a shared object, stripped of
 * .symtab: .dynsym) is named too, and so is a function of a fixed-address executable built
 * here (cc -no-pie) from either kind of offset (virtual address, or from dladdr's base).
 * Source lines come from the DWARF line tables: the call in trace_tool_caller() must come
 * out as its line of this file (the build's default DWARF version, 5 with gcc 12), the
 * first byte of trace_tool_other() as a line of that function, and the fixed-address
 * program, built with -gdwarf-4, as its function's line.  A function named in C++'s
 * mangling (elixir::demo::probe(int)) is printed demangled where libstdc++ can be opened.
 * Names and lines are also found in a separate debug file, next to the program
 * (.gnu_debuglink, its CRC checked) and by build id under ELIXIR_DEBUG_DIRS.
 * Frames of a missing module, of a garbage file, of a FIFO and of /dev/zero (not regular
 * files: neither may be opened in a way that blocks or read without end), of this
 * executable cut short and of 50 copies of it with random bytes in the ELF header, the
 * program and section headers, the symbol table and the line table fall back to
 * module+0xoffset (or to some symbol or line) without crashing (the sanitizer build checks
 * the reads).
 */
#include "unit_trace_tool.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>

#define NBAD 6               /* modules that cannot be read as ELF files (make_trace) */

static char self[PATH_MAX];
static const char *trace;

/* ------------------------------------------------------------------ frames of this program */

__attribute__((noinline)) static void *return_address(void)
{
    void *ra = __builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return ra;
}

/* Non-static, never inlined: the names the tool must find. */
__attribute__((noinline)) void *trace_tool_caller(void);
__attribute__((noinline)) int trace_tool_other(int x);

/* The lines the tool must find: the call below, and trace_tool_other's first and last. */
enum { CALL_LINE = __LINE__ + 4, OTHER_FIRST = __LINE__ + 9, OTHER_LAST = __LINE__ + 12 };

void *trace_tool_caller(void)
{
    void *ra = return_address();
    __asm__ volatile("" ::: "memory");
    return ra;
}

int trace_tool_other(int x)
{
    return x * 3 + 1;
}

/* A function under a C++ name (elixir::demo::probe(int)), which the tool demangles. */
__attribute__((noinline)) int cxx_probe(int x) __asm__("_ZN6elixir4demo5probeEi");
int cxx_probe(int x)
{
    return x * 5 + 2;
}

/* The module path and offset of addr, as a recorder computes them. */
static uint64_t offset_of(const void *addr, char *module, size_t len)
{
    Dl_info info;
    if (!dladdr(addr, &info) || !info.dli_fbase) {
        printf("FAIL: dladdr(%p) found nothing\n", addr);
        exit(1);
    }
    /* The main program may be reported by the name it was started with. */
    if (info.dli_fname && info.dli_fname[0] == '/' && strcmp(info.dli_fname, self) != 0 &&
        access(info.dli_fname, R_OK) == 0)
        snprintf(module, len, "%s", info.dli_fname);
    else
        snprintf(module, len, "%s", self);
    return (uint64_t)((uintptr_t)addr - (uintptr_t)info.dli_fbase);
}

/* ------------------------------------------------------------------ damaged copies */

static unsigned char *self_bytes;
static size_t self_len;

static void read_self(void)
{
    self_bytes = (unsigned char *)tt_slurp_len(self, &self_len);
    if (!self_len) {
        printf("FAIL: cannot read %s\n", self);
        exit(1);
    }
}

/* Flips `count` random bytes in [lo, hi) of buf (clamped to n). */
static void scramble(unsigned char *buf, size_t n, size_t lo, size_t hi, int count)
{
    if (hi > n)
        hi = n;
    for (int i = 0; i < count && lo < hi; i++)
        buf[lo + (size_t)rand() % (hi - lo)] = (unsigned char)rand();
}

/* This program's section named `name`, or NULL. */
static const Elf64_Shdr *section(const char *name)
{
    const Elf64_Ehdr *e = (const Elf64_Ehdr *)self_bytes;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(self_bytes + e->e_shoff);
    const char *names = (const char *)self_bytes + sh[e->e_shstrndx].sh_offset;
    for (unsigned i = 0; i < e->e_shnum; i++)
        if (strcmp(names + sh[i].sh_name, name) == 0)
            return &sh[i];
    return NULL;
}

/* The line table, which the checks need. */
static const Elf64_Shdr *debug_line(void)
{
    const Elf64_Shdr *s = section(".debug_line");
    if (!s) {
        printf("FAIL: this program has no .debug_line (built without -g?)\n");
        exit(1);
    }
    return s;
}

/* A copy of this program with random bytes in one of its ELF structures. */
static const char *damaged_copy(int k)
{
    const Elf64_Ehdr *e = (const Elf64_Ehdr *)self_bytes;
    unsigned char *buf = malloc(self_len);
    char name[32];
    memcpy(buf, self_bytes, self_len);
    size_t sh = (size_t)e->e_shoff, shlen = (size_t)e->e_shnum * sizeof(Elf64_Shdr);
    size_t ph = (size_t)e->e_phoff, phlen = (size_t)e->e_phnum * sizeof(Elf64_Phdr);
    switch (k % 5) {
    case 0: scramble(buf, self_len, 0, sizeof(*e), 4); break;
    case 1: scramble(buf, self_len, ph, ph + phlen, 8); break;
    case 2: scramble(buf, self_len, sh, sh + shlen, 24); break;
    case 3:
        for (size_t i = 0; sh + shlen <= self_len && i < e->e_shnum; i++) {
            const Elf64_Shdr *s = (const Elf64_Shdr *)(self_bytes + sh) + i;
            if (s->sh_type == SHT_SYMTAB)
                scramble(buf, self_len, s->sh_offset, s->sh_offset + s->sh_size, 200);
        }
        break;
    default: {
        const Elf64_Shdr *s = debug_line(), *ls = section(".debug_line_str");
        if (s)
            scramble(buf, self_len, s->sh_offset, s->sh_offset + s->sh_size, 20 + 20 * (k % 3));
        if (ls && k % 2)
            scramble(buf, self_len, ls->sh_offset, ls->sh_offset + ls->sh_size, 20);
    }
    }
    snprintf(name, sizeof(name), "damaged%d", k);
    const char *p = tt_write_file(name, buf, self_len);
    free(buf);
    return p;
}

/* ------------------------------------------------------------------ the trace */

typedef struct expect {
    char module[PATH_MAX];
    uint64_t caller_off, caller_sym_off, other_off, libc_off, cxx_off;
    char libc[PATH_MAX];
} expect_t;

static void make_trace(expect_t *x)
{
    void *ra = trace_tool_caller();
    x->caller_off = offset_of(ra, x->module, sizeof(x->module));
    x->caller_sym_off = (uint64_t)((uintptr_t)ra - (uintptr_t)trace_tool_caller);
    x->other_off = offset_of((void *)trace_tool_other, x->module, sizeof(x->module));
    x->libc_off = offset_of((void *)fopen, x->libc, sizeof(x->libc));
    x->cxx_off = offset_of((void *)cxx_probe, x->module, sizeof(x->module));
    trace = tt_path("symbols.trace");
    trc_writer_t *w = tt_writer(trace, 0);
    uint32_t me = tt_str(w, x->module), libc = tt_str(w, x->libc);
    trc_frame_t f[4] = { { me, x->caller_off, NULL }, { me, x->other_off, NULL },
                         { libc, x->libc_off, NULL }, { me, x->cxx_off, NULL } };
    static const char junk[72] = "\x7f" "ELF\2\1\1 garbage: an ELF ident, then nothing";
    const char *fifo = tt_path("fifo.so");
    if (mkfifo(fifo, 0600) != 0)
        TT_FAIL("mkfifo %s: %s", fifo, strerror(errno));
    const char *bad[NBAD] = { "/nonexistent/libgone.so",
                              tt_write_file("garbage.so", (const unsigned char *)junk,
                                            sizeof(junk)),
                              tt_write_file("head.so", self_bytes, 200),
                              tt_write_file("half.so", self_bytes, self_len / 2), fifo,
                              "/dev/zero" };
    uint64_t id = 1;
    TT_EMIT(trc_emit_alloc(w, 10, &(trc_alloc_t){ id++, 0, 0x1000, 1 << 20,
                                                  (uint32_t)trc_writer_stack(w, f, 4), NULL }));
    for (int i = 0; i < NBAD + 50; i++) {
        const char *m = i < NBAD ? bad[i] : damaged_copy(i - NBAD);
        trc_frame_t g = { tt_str(w, m), x->caller_off, NULL };
        TT_EMIT(trc_emit_alloc(w, 20 + (uint64_t)i, &(trc_alloc_t){
            id++, 0, 0x100000 * id, 4096, (uint32_t)trc_writer_stack(w, &g, 1), NULL }));
    }
    tt_close(w);
}

/* ------------------------------------------------------------------ checks */

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* How the C++ function's frame must read: demangled where the C++ runtime can be opened. */
static const char *cxx_name(void)
{
    return tt_cxx_runtime() ? " < elixir::demo::probe(int)+0x0 ("
                         : " < _ZN6elixir4demo5probeEi+0x0 (";
}

static void check_table(const expect_t *x)
{
    char caller[PATH_MAX + 64], other[PATH_MAX + 64], fallback[128];
    snprintf(caller, sizeof(caller), "trace_tool_caller+0x%" PRIx64 " (%s) at %s:%d < ",
             x->caller_sym_off, base(x->module), base(__FILE__), CALL_LINE);
    snprintf(other, sizeof(other), " < trace_tool_other+0x0 (%s) at %s:", base(x->module),
             base(__FILE__));
    tt_result_t r = tt_run("allocs", trace, "--top", "0", "--stack-depth", "0", NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_LINE(r.out, "1.00 MiB", caller, other, "fopen", cxx_name());
    const char *at = strstr(r.out, other);
    int line = at ? atoi(at + strlen(other)) : 0;
    if (line < OTHER_FIRST || line > OTHER_LAST)
        TT_CHECK("trace_tool_other's first byte is a line of it", OTHER_FIRST, line);
    for (int i = 0; i < NBAD; i++) {
        const char *names[NBAD] = { "libgone.so", "garbage.so", "head.so", "half.so", "fifo.so",
                                    "zero" };
        snprintf(fallback, sizeof(fallback), "  %s+0x%" PRIx64, names[i], x->caller_off);
        TT_LINE(r.out, "4.00 KiB", fallback);
    }
    TT_CHECK("stderr bytes", 0, strlen(r.err));
    tt_free(&r);
}

static void check_json(const expect_t *x)
{
    char want[256];
    tt_result_t r = tt_run("allocs", trace, "--json", "--top", "1", "--stack-depth", "0", NULL);
    snprintf(want, sizeof(want), "('trace_tool_caller', %" PRIu64 ", %" PRIu64 ")",
             x->caller_sym_off, x->caller_off);
    TT_JSON(r.out, "(lambda f: (f['symbol'], f['symbol_offset'], f['offset']))"
                   "(d['allocations'][0]['stack'][0])", want);
    TT_JSON(r.out, "(lambda f: (f['symbol'], f['symbol_offset']))"
                   "(d['allocations'][0]['stack'][1])", "('trace_tool_other', 0)");
    TT_JSON(r.out, "(lambda f: (f['symbol'], f.get('demangled')))"
                   "(d['allocations'][0]['stack'][3])",
            tt_cxx_runtime() ? "('_ZN6elixir4demo5probeEi', 'elixir::demo::probe(int)')"
                          : "('_ZN6elixir4demo5probeEi', None)");
    snprintf(want, sizeof(want), "(True, %d)", CALL_LINE);
    TT_JSON(r.out, "(lambda f: (f['file'].endswith('/" __FILE__ "'), f['line']))"
                   "(d['allocations'][0]['stack'][0])", want);
    TT_JSON(r.out, "(lambda f: ('fopen' in f['symbol'], f['symbol_offset']))"
                   "(d['allocations'][0]['stack'][2])", "(True, 0)");
    tt_free(&r);
}

/* The program built by fixed_address and split_debug, written as `name`: it prints the
 * offset of its function probe_function (line 3) from dladdr's base, and its address. */
static const char *probe_source(const char *name)
{
    static const char src[] =
        "#include <dlfcn.h>\n#include <stdio.h>\n"
        "__attribute__((noinline)) void probe_function(void) { __asm__ volatile(\"\"); }\n"
        "int main(void) { Dl_info i; void *p = (void *)probe_function;\n"
        "  if (!dladdr(p, &i)) return 1; probe_function();\n"
        "  printf(\"%lx %lx\\n\", (unsigned long)((char *)p - (char *)i.dli_fbase),\n"
        "         (unsigned long)p); return 0; }\n";
    return tt_write_file(name, (const unsigned char *)src, sizeof(src) - 1);
}

/* A fixed-address executable (cc -no-pie), built here when a compiler is at hand: its
 * function is found both from the recorder's offset (the virtual address: load bias 0) and
 * from dladdr's (from the start of the lowest segment, 0x400000 typically). */
static void fixed_address(void)
{
    const char *c = probe_source("fixed.c");
    const char *exe = tt_path("fixed"), *tr = tt_path("fixed.trace");
    char *cc[] = { "cc", "-D_GNU_SOURCE", "-O1", "-gdwarf-4", "-no-pie", "-fno-pie", "-o",
                   (char *)exe, (char *)c, "-ldl", NULL };
    tt_result_t r = tt_exec(cc);
    if (r.status != 0) {
        printf("note: no C compiler for a fixed-address executable (%s); part skipped\n",
               r.err);
        tt_free(&r);
        return;
    }
    tt_free(&r);
    char *run[] = { (char *)exe, NULL };
    r = tt_exec(run);
    unsigned long rel = 0, abs = 0;
    TT_CHECK("the fixed-address program prints its offsets", 2,
             sscanf(r.out, "%lx %lx", &rel, &abs));
    TT_CHECK("it is loaded at a fixed address", 1, abs > rel);
    tt_free(&r);
    trc_writer_t *w = tt_writer(tr, 0);
    uint32_t m = tt_str(w, exe);
    trc_frame_t f[2] = { { m, abs, NULL }, { m, rel, NULL } };
    TT_EMIT(trc_emit_alloc(w, 1, &(trc_alloc_t){ 1, 0, 0x1000, 4096,
                                                 (uint32_t)trc_writer_stack(w, f, 2), NULL }));
    tt_close(w);
    r = tt_run("allocs", tr, "--stack-depth", "0", NULL);
    TT_LINE(r.out, "probe_function+0x0 (fixed) at fixed.c:3 < "
                   "probe_function+0x0 (fixed) at fixed.c:3");
    tt_free(&r);
}

/* The GNU build id of the ELF file at path, in hex, or "" (read with this test's section
 * look-up over the file's bytes). */
static void build_id_hex(const char *path, char *hex, size_t len)
{
    size_t n = 0;
    unsigned char *b = (unsigned char *)tt_slurp_len(path, &n);
    const Elf64_Ehdr *e = (const Elf64_Ehdr *)b;
    hex[0] = 0;
    for (unsigned i = 0; b && n >= sizeof(*e) && i < e->e_shnum; i++) {
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + e->e_shoff) + i;
        if (sh->sh_type != SHT_NOTE || sh->sh_size < 16)
            continue;
        const uint32_t *note = (const uint32_t *)(b + sh->sh_offset);
        if (note[2] != NT_GNU_BUILD_ID || note[0] != 4 || 2 * note[1] + 1 > len)
            continue;
        for (uint32_t k = 0; k < note[1]; k++)
            snprintf(hex + 2 * k, 3, "%02x", b[sh->sh_offset + 16 + k]);
    }
    free(b);
}

/* Runs argv; 0, or prints a note that the part is skipped. */
static int tool(char *const argv[])
{
    tt_result_t r = tt_exec(argv);
    int rc = r.status;
    if (rc)
        printf("note: %s failed (%s); separate debug files not checked\n", argv[0], r.err);
    tt_free(&r);
    return rc;
}

/* A program whose symbols and debug information are split off into a separate file (objcopy
 * --only-keep-debug, --strip-all, --add-gnu-debuglink), built here when the tools are at
 * hand: its function's name and line come from the debug file next to it (its CRC checked: a
 * damaged copy gives neither), and from ELIXIR_DEBUG_DIRS/.build-id/xx/rest.debug (its build
 * id matched). */
static void split_debug(void)
{
    const char *c = probe_source("split.c");
    const char *exe = tt_path("split"), *dbg = tt_path("split.debug");
    const char *tr = tt_path("split.trace"), *dirs = tt_path("debug-dirs");
    char link[PATH_MAX + 32], hex[160], dir[PATH_MAX], file[2 * PATH_MAX];
    snprintf(link, sizeof(link), "--add-gnu-debuglink=%s", dbg);
    char *cc[] = { "cc", "-D_GNU_SOURCE", "-g", "-O1", "-Wl,--build-id", "-o", (char *)exe,
                   (char *)c, "-ldl", NULL };
    char *keep[] = { "objcopy", "--only-keep-debug", (char *)exe, (char *)dbg, NULL };
    char *strip[] = { "objcopy", "--strip-all", (char *)exe, NULL };
    char *add[] = { "objcopy", link, (char *)exe, NULL };
    if (tool(cc) || tool(keep) || tool(strip) || tool(add))
        return;
    char *run[] = { (char *)exe, NULL };
    tt_result_t r = tt_exec(run);
    unsigned long off = strtoul(r.out, NULL, 16);
    tt_free(&r);
    trc_writer_t *w = tt_writer(tr, 0);
    trc_frame_t f = { tt_str(w, exe), off, NULL };
    TT_EMIT(trc_emit_alloc(w, 1, &(trc_alloc_t){ 1, 0, 0x1000, 4096,
                                                 (uint32_t)trc_writer_stack(w, &f, 1), NULL }));
    tt_close(w);
    setenv("ELIXIR_DEBUG_DIRS", dirs, 1);
    r = tt_run("allocs", tr, NULL);
    TT_LINE(r.out, "probe_function+0x0 (split) at split.c:3");
    tt_free(&r);

    size_t n = 0;
    unsigned char *bytes = (unsigned char *)tt_slurp_len(dbg, &n);
    bytes[n / 2] ^= 0x5a;               /* the debuglink's CRC no longer matches */
    tt_write_file("split.debug", bytes, n);
    r = tt_run("allocs", tr, NULL);
    TT_LINE(r.out, "  split+0x");
    TT_HASNT(r.out, "probe_function");
    TT_HASNT(r.out, " at split.c");
    tt_free(&r);

    bytes[n / 2] ^= 0x5a;               /* the good one, found by build id only */
    unlink(dbg);
    build_id_hex(exe, hex, sizeof(hex));
    TT_CHECK("the program has a build id", 1, strlen(hex) > 2);
    snprintf(dir, sizeof(dir), "%s/.build-id/%.2s", dirs, hex);
    snprintf(file, sizeof(file), "%s/%s.debug", dir, hex + 2);
    char *mk[] = { "mkdir", "-p", dir, NULL };
    tool(mk);
    FILE *out = fopen(file, "wb");
    TT_CHECK("debug file written", 1, out && fwrite(bytes, 1, n, out) == n);
    if (out)
        fclose(out);
    free(bytes);
    r = tt_run("allocs", tr, NULL);
    TT_LINE(r.out, "probe_function+0x0 (split) at split.c:3");
    tt_free(&r);
    unsetenv("ELIXIR_DEBUG_DIRS");
}

int main(void)
{
    expect_t x;
    tt_init();
    if (!realpath("/proc/self/exe", self)) {
        printf("FAIL: realpath(/proc/self/exe)\n");
        return 1;
    }
    srand(12345);
    read_self();
    make_trace(&x);
    TT_CHECK("trace_tool_other works", 7, trace_tool_other(2));
    TT_CHECK("cxx_probe works", 12, cxx_probe(2));
    check_table(&x);
    check_json(&x);
    fixed_address();
    split_debug();
    free(self_bytes);
    return tt_done();
}
