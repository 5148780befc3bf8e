/* SPDX-License-Identifier: MIT */
/*
 * unit_ptx.c - sim/ptx.c and sim/image.c: kernel entries, parameter layouts, module variables and images.
 *
 * Checks every parameter form with exact offsets, sizes and total size; real nvcc output
 * (tests/fixtures/vecadd.ptx, with a struct passed by value, and vecadd_debug.ptx with DWARF
 * sections); .global/.const variables with initialisers; every error path (-EINVAL with a
 * "line N:" message); every truncated prefix and many mutations of a real file (run it under
 * SANITIZE=address,undefined); and sim_image_ptx on text, ELF, fatbins and garbage.
 *
 * The fixtures are nvcc 13.0 output for tests/fixtures/vecadd.cu, made in that directory with:
 *   nvcc -ptx -arch=compute_90 vecadd.cu -o vecadd.ptx
 *   nvcc -ptx -G -DVECADD_ONLY -arch=compute_90 vecadd.cu -o vecadd_debug.ptx
 *   nvcc -fatbin -arch=compute_90 -code=compute_90 --no-compress vecadd.cu -o vecadd.fatbin
 *   nvcc -fatbin -arch=compute_90 -code=compute_90 vecadd.cu -o vecadd_compressed.fatbin
 *   nvcc -fatbin -arch=compute_90 -code=sm_90 -Xfatbin -compress-all vecadd.cu \
 *        -o vecadd_elf.fatbin
 *   nvcc -cubin -arch=sm_90 -DVECADD_ONLY vecadd.cu -o vecadd.cubin
 * Run from the repository root.
 */
#include "ptx.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            failures++;                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);    \
            fprintf(stderr, __VA_ARGS__);                                               \
            fputc('\n', stderr);                                                        \
        }                                                                               \
    } while (0)

#define CHECK_EQ(expected, got)                                                         \
    do {                                                                                \
        long long e_ = (long long)(expected), g_ = (long long)(got);                    \
        if (e_ != g_) {                                                                 \
            failures++;                                                                 \
            fprintf(stderr, "%s:%d: %s: expected %lld, got %lld\n", __FILE__, __LINE__,  \
                    #got, e_, g_);                                                      \
        }                                                                               \
    } while (0)

/* ------------------------------------------------------------------ helpers */

/* Read a whole file with a NUL appended; NULL (and a failure) when it cannot be read. */
static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n;

    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
            buf[n] = 0;
            *len = (size_t)n;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    if (f)
        fclose(f);
    CHECK(buf != NULL, "cannot read fixture %s (run from the repository root)", path);
    return buf;
}

static int parse(const char *text, sim_ptx_module_t *m)
{
    char err[256];
    int rc = sim_ptx_parse(text, strlen(text), m, err, sizeof err);

    CHECK(rc == 0, "parse failed: %d %s", rc, err);
    return rc;
}

static const sim_ptx_entry_t *entry(const sim_ptx_module_t *m, const char *name)
{
    for (uint32_t i = 0; i < m->nentries; i++)
        if (strcmp(m->entries[i].name, name) == 0)
            return &m->entries[i];
    CHECK(0, "entry %s not found", name);
    return NULL;
}

static const sim_ptx_global_t *global(const sim_ptx_module_t *m, const char *name)
{
    for (uint32_t i = 0; i < m->nglobals; i++)
        if (strcmp(m->globals[i].name, name) == 0)
            return &m->globals[i];
    CHECK(0, "global %s not found", name);
    return NULL;
}

/* Compare an entry's layout with n expected (offset, size, align) triples and args_size. */
static void check_layout(const sim_ptx_module_t *m, const char *name, uint32_t n,
                         const uint32_t (*want)[3], uint32_t args_size)
{
    const sim_ptx_entry_t *e = entry(m, name);

    if (!e)
        return;
    CHECK_EQ(n, e->nparams);
    CHECK_EQ(args_size, e->args_size);
    for (uint32_t i = 0; i < n && i < e->nparams; i++) {
        CHECK(e->params[i].offset == want[i][0] && e->params[i].size == want[i][1] &&
              e->params[i].align == want[i][2],
              "%s param %u: expected off %u size %u align %u, got %u %u %u", name, i,
              want[i][0], want[i][1], want[i][2], e->params[i].offset, e->params[i].size,
              e->params[i].align);
    }
}

/* Compare a global with its expected size, alignment and initial bytes (NULL: none). */
static void check_global(const sim_ptx_module_t *m, const char *name, uint64_t size,
                         uint32_t align, const void *init)
{
    const sim_ptx_global_t *g = global(m, name);

    if (!g)
        return;
    CHECK(g->size == size && g->align == align, "%s: expected size %llu align %u, got %llu %u",
          name, (unsigned long long)size, align, (unsigned long long)g->size, g->align);
    if (!init)
        CHECK(g->init == NULL, "%s: expected no initialiser", name);
    else
        CHECK(g->init && g->size == size && memcmp(g->init, init, (size_t)size) == 0,
              "%s: initial bytes differ", name);
}

/* ------------------------------------------------------------------ parameters */

static const char forms_ptx[] =
    "//\n// every parameter form\n//\n"
    ".version 9.0\n.target sm_90\n.address_size 64\n\n"
    "/* a comment with } ) { in it */\n"
    ".visible .entry forms(\n"
    "    .param .u8 p0,\n"
    "    .param .u64 p1,\n"
    "    .param .u64 .ptr .global .align 16 p2,   // pointee alignment: not the param's\n"
    "    .param .f16 p3,\n"
    "    .param .align 8 .b8 p4[24],\n"
    "    .param .f32 p5,\n"
    "    .param .s8 p6,\n"
    "    .param .b16 p7[3],\n"
    "    .param .align 16 .b8 p8[32],\n"
    "    .param .f64 p9,\n"
    "    .param .b32 p10\n"
    ")\n"
    ".maxntid 256, 1, 1\n.minnctapersm 2\n"
    "{\n\t.reg .b32 %r<2>;\n\t{ // nested }\n\t}\n\tret;\n}\n"
    ".weak .entry\n  more\n(\n.param\n.s16\nh,.param .u32 .ptr .align 4 q ,  .param .v2 .u32 v,"
    " .param .v4 .f32 w, .param .s64 z, .param .b64 y, .param .u16 u, .param .bf16 bf,"
    " .param .f16x2 hx){}\n"
    ".entry plain\n{\n ret;\n}\n"
    ".entry empty() { }\n"
    ".extern .entry declared(.param .u32 a);\n"
    ".visible .func (.param .b32 r) helper(.param .b32 a) { ret; }\n"
    ".extern .func (.param .b32 r) external\n(\n.param .b64 a\n)\n;\n";

static void test_param_forms(void)
{
    static const uint32_t forms[][3] = {
        { 0, 1, 1 }, { 8, 8, 8 }, { 16, 8, 8 }, { 24, 2, 2 }, { 32, 24, 8 }, { 56, 4, 4 },
        { 60, 1, 1 }, { 62, 6, 2 }, { 80, 32, 16 }, { 112, 8, 8 }, { 120, 4, 4 },
    };
    static const uint32_t more[][3] = {
        { 0, 2, 2 }, { 4, 4, 4 }, { 8, 8, 8 }, { 16, 16, 16 }, { 32, 8, 8 }, { 40, 8, 8 },
        { 48, 2, 2 }, { 50, 2, 2 }, { 52, 4, 4 },
    };
    sim_ptx_module_t m;

    if (parse(forms_ptx, &m))
        return;
    CHECK_EQ(4, m.nentries);
    CHECK_EQ(0, m.nglobals);
    check_layout(&m, "forms", 11, forms, 128);
    check_layout(&m, "more", 9, more, 64);
    check_layout(&m, "plain", 0, NULL, 0);
    check_layout(&m, "empty", 0, NULL, 0);
    if (m.nentries == 4)
        CHECK(m.entries[2].params == NULL, "no parameters: expected params NULL");
    sim_ptx_free(&m);
    CHECK(m.nentries == 0 && m.entries == NULL, "sim_ptx_free leaves the module zeroed");
}

/* 4096 parameters and a long mangled name. */
static void test_many_params(void)
{
    size_t cap = 4096 * 64 + 8192, n = 0;
    char *text = malloc(cap), name[3001];
    sim_ptx_module_t m;

    if (!text)
        return;
    memcpy(name, "_Z6kernel", 9);
    memset(name + 9, 'x', sizeof name - 10);
    name[sizeof name - 1] = '\0';
    n += (size_t)snprintf(text + n, cap - n, ".version 9.0\n.visible .entry %s(", name);
    for (int i = 0; i < 4096; i++)
        n += (size_t)snprintf(text + n, cap - n, "%s.param .u32 %s_param_%d", i ? ",\n" : "",
                              "_Z6kernelPfS_i", i);
    snprintf(text + n, cap - n, ")\n{\n ret;\n}\n");
    if (parse(text, &m) == 0) {
        CHECK_EQ(1, m.nentries);
        CHECK(strcmp(m.entries[0].name, name) == 0, "long name kept");
        CHECK_EQ(4096, m.entries[0].nparams);
        CHECK_EQ(16384, m.entries[0].args_size);
        CHECK_EQ(16380, m.entries[0].params[4095].offset);
    }
    sim_ptx_free(&m);
    free(text);
}

/* ------------------------------------------------------------------ real nvcc output */

static void check_vecadd_module(const sim_ptx_module_t *m)
{
    static const uint32_t vecadd[][3] = { { 0, 8, 8 }, { 8, 8, 8 }, { 16, 8, 8 }, { 24, 4, 4 } };
    static const uint32_t by_value[][3] = { { 0, 24, 8 }, { 24, 1, 1 }, { 26, 2, 2 },
                                            { 32, 8, 8 } };
    static const uint32_t mangled[][3] = { { 0, 8, 8 }, { 8, 4, 4 } };
    static const unsigned char table[16] = { 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0 };
    double coeffs[2] = { 0.25, -2.0 };
    float scale = 1.5f;

    CHECK_EQ(4, m->nentries);
    check_layout(m, "vecadd", 4, vecadd, 32);
    check_layout(m, "by_value", 4, by_value, 40);
    check_layout(m, "_Z7mangledPfi", 2, mangled, 16);
    check_layout(m, "noargs", 0, NULL, 0);
    CHECK_EQ(4, m->nglobals);
    check_global(m, "scale", 4, 4, &scale);
    check_global(m, "counter", 4, 4, NULL);
    check_global(m, "table", 16, 4, table);
    check_global(m, "coeffs", 16, 8, coeffs);
}

static void test_nvcc_ptx(void)
{
    size_t len;
    char *text = (char *)read_file("tests/fixtures/vecadd.ptx", &len);
    char err[256];
    sim_ptx_module_t m;

    if (!text)
        return;
    CHECK_EQ(0, sim_ptx_parse(text, len, &m, err, sizeof err));
    check_vecadd_module(&m);
    sim_ptx_free(&m);
    free(text);
}

static void test_nvcc_debug_ptx(void)
{
    static const uint32_t vecadd[][3] = { { 0, 8, 8 }, { 8, 8, 8 }, { 16, 8, 8 }, { 24, 4, 4 } };
    size_t len;
    char *text = (char *)read_file("tests/fixtures/vecadd_debug.ptx", &len);
    char err[256];
    sim_ptx_module_t m;
    float scale = 1.5f;

    if (!text)
        return;
    CHECK(strstr(text, ".section") && strstr(text, ".file"), "fixture has debug sections");
    CHECK_EQ(0, sim_ptx_parse(text, len, &m, err, sizeof err));
    CHECK_EQ(1, m.nentries);
    check_layout(&m, "vecadd", 4, vecadd, 32);
    CHECK_EQ(1, m.nglobals);
    check_global(&m, "scale", 4, 4, &scale);
    sim_ptx_free(&m);
    free(text);
}

/* ------------------------------------------------------------------ variables */

static const char globals_ptx[] =
    ".version 9.0\n.target sm_90, debug\n.address_size 64\n"
    "\t.file\t1 \"/src/k.cu\", 1700000000, 1234\n"
    ".visible .global .align 4 .u32 counter;\n"
    ".global .align 8 .b8 table[64];\n"
    ".global .f32 x = 1.5;\n"
    ".global .align 4 .b8 arr[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
    ".global .u32 v[4] = {1,2,3,4};\n"
    ".global .u32 inferred[] = {0x10, 010, 0b11, 7U};\n"
    ".global .s16 neg[3] = {-1, -32768};\n"
    ".global .f64 d = 0d4004000000000000;\n"
    ".global .f32 hf = 0f3FC00000;\n"
    ".global .f64 e = -1.25e2;\n"
    ".global .f32 fi = 2;\n"
    ".const .align 8 .b8 coeffs[16] = {0, 0, 0, 0, 0, 0, 208, 63};\n"
    ".global .s32 m2[][2] = {{-1, 0}, {0, -1}, {1}};\n"
    ".global .v2 .u32 vec = {5, 6};\n"
    ".global .v4 .f32 vv[2] = {{1.0, 2.0, 3.0, 4.0}, {0f40A00000}};\n"
    ".visible .global .attribute(.managed) .align 4 .u32 mm = 7;\n"
    ".global .u8 a1, a2 = 3, a3[2] = {9, 10};\n"
    ".global .align 8 .u64 big = -5;\n"
    ".global .b128 wide = -2;\n"
    ".weak .global .align 16 .b8 w[4];\n"
    ".common .global .u32 c;\n"
    ".global .f16 h = 0x3C00;\n"
    ".extern .global .align 4 .b8 ext[];\n"
    ".shared .align 4 .b8 sh[16];\n"
    ".global .texref tex;\n"
    ".visible .entry k()\n{\n\t.loc 1 2 3\n\tret;\n}\n"
    "\t.section\t.debug_str\n\t{\n$L__info_string0:\n.b8 95,90,0\n\t}\n"
    "\t.section\t.debug_info\n\t{\n.b32 120\n.b64 $L__func_begin0\n\t}\n";

static void check_globals_module(const sim_ptx_module_t *m)
{
    static const unsigned char arr[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    static const uint32_t v[4] = { 1, 2, 3, 4 }, inferred[4] = { 16, 8, 3, 7 };
    static const int16_t neg[3] = { -1, -32768, 0 };
    static const int32_t m2[6] = { -1, 0, 0, -1, 1, 0 };
    static const unsigned char coeffs[16] = { 0, 0, 0, 0, 0, 0, 208, 63 };

    CHECK_EQ(24, m->nglobals);
    check_global(m, "counter", 4, 4, NULL);
    check_global(m, "table", 64, 8, NULL);
    check_global(m, "arr", 8, 4, arr);
    check_global(m, "v", 16, 4, v);
    check_global(m, "inferred", 16, 4, inferred);
    check_global(m, "neg", 6, 2, neg);
    check_global(m, "coeffs", 16, 8, coeffs);
    check_global(m, "m2", 24, 4, m2);
}

static void check_more_globals(const sim_ptx_module_t *m)
{
    static const uint32_t vec[2] = { 5, 6 }, mm = 7;
    static const float vv[8] = { 1, 2, 3, 4, 5, 0, 0, 0 };
    static const uint8_t a2 = 3, a3[2] = { 9, 10 };
    static const int64_t big = -5, wide[2] = { -2, -1 };
    static const uint16_t h = 0x3C00;
    float x = 1.5f, fi = 2.0f;
    double d = 2.5, e = -125.0;

    check_global(m, "x", 4, 4, &x);
    check_global(m, "d", 8, 8, &d);
    check_global(m, "hf", 4, 4, &x);
    check_global(m, "e", 8, 8, &e);
    check_global(m, "fi", 4, 4, &fi);
    check_global(m, "vec", 8, 8, vec);
    check_global(m, "vv", 32, 16, vv);
    check_global(m, "mm", 4, 4, &mm);
    check_global(m, "a1", 1, 1, NULL);
    check_global(m, "a2", 1, 1, &a2);
    check_global(m, "a3", 2, 1, a3);
    check_global(m, "big", 8, 8, &big);
    check_global(m, "wide", 16, 16, wide);
    check_global(m, "w", 4, 16, NULL);
    check_global(m, "c", 4, 4, NULL);
    check_global(m, "h", 2, 2, &h);
}

static void test_globals(void)
{
    sim_ptx_module_t m;

    if (parse(globals_ptx, &m))
        return;
    check_globals_module(&m);
    check_more_globals(&m);
    CHECK_EQ(1, m.nentries);
    for (uint32_t i = 0; i < m.nglobals; i++)
        CHECK(strcmp(m.globals[i].name, "ext") && strcmp(m.globals[i].name, "sh") &&
              strcmp(m.globals[i].name, "tex"), "%s must be skipped", m.globals[i].name);
    sim_ptx_free(&m);
}

/* ------------------------------------------------------------------ errors */

static const struct bad {
    const char *text;
    unsigned line;
} bad_inputs[] = {
    { ".entry k(.param .u32 a", 1 },
    { ".entry k(\n.param .u32 a\n{ ret; }", 1 },
    { ".entry k()\n{\n ret;\n", 2 },
    { ".entry k() { ret; }\n}", 2 },
    { ".entry k() { ret; }\n)", 2 },
    { ".entry k(.param .foo a) {}", 1 },
    { ".entry k(.param .pred p) {}", 1 },
    { ".entry k(.param .u32) {}", 1 },
    { ".entry k(.param a) {}", 1 },
    { ".entry k(.param .u32 a,) {}", 1 },
    { ".entry k(.u32 a) {}", 1 },
    { ".entry (.param .u32 a) {}", 1 },
    { ".entry\n", 2 },
    { ".entry k(.param .align 3 .b8 a[4]) {}", 1 },
    { ".entry k(.param .align .b8 a[4]) {}", 1 },
    { ".entry k(.param .b8 a[]) {}", 1 },
    { ".entry k(.param .b8 a[0]) {}", 1 },
    { ".entry k(.param .b8 a[2) {}", 1 },
    { ".entry k(.param .b8 a[1073741825]) {}", 1 },
    { ".entry k(.param .u32 a .param .u32 b) {}", 1 },
    { ".entry k(.param .u32 .u64 a) {}", 1 },
    { ".entry k(.param .v2 .v4 .u32 a) {}", 1 },
    { ".entry k(.param .u32 a) ret; }", 1 },
    { ".entry k(.param .u32 a)\n.entry j() {}", 2 },
    { "\n\n.global .u32 x = foo;", 3 },
    { ".global .u64 p = generic(x);", 1 },
    { ".global .u32 x[2] = {1,2,3};", 1 },
    { ".global .u32 x = 1.5;", 1 },
    { ".global .f16 h = 1.0;", 1 },
    { ".global .u32 x", 1 },
    { ".global .u32 x[2] = 5;", 1 },
    { ".global .u32 x = {5};", 1 },
    { ".global .u32 x[] ;", 1 },
    { ".global .u32 x[] = {};", 1 },
    { ".global .u32 x[2][2] = {1,2,3,4};", 1 },
    { ".global .u32 x[2] = {{1},{2}};", 1 },
    { ".global .u32 x[2] = {1 2};", 1 },
    { ".global .u32 x[2] = {1,2;", 1 },
    { ".global .u32 ;", 1 },
    { ".global x;", 1 },
    { ".global .pred p;", 1 },
    { ".global .u32 x = 0x;", 1 },
    { ".global .u32 x = 0f123;", 1 },
    { ".global .f32 x = 1.5e;", 1 },
    { ".global .u32 x = 99999999999999999999999;", 1 },
    { ".global .b8 huge[1099511627777];", 1 },
    { ".global .b8 huge[1048576][1048576][2];", 1 },
    { ".global .attribute .u32 x;", 1 },
    { ".global .attribute(.managed .u32 x;", 1 },
    { "/* unterminated", 1 },
    { ".version 9.0\n.pragma \"abc;\n", 2 },
    { "foo", 1 },
    { ".visible", 1 },
    { "\n.weak\n", 3 },
    { ".section .debug_info { .b8 1", 1 },
    { ".section .debug_info .b8 1", 1 },
    { ".func f(.param .b32 a { ret; }", 1 },
    { ".func f(.param .b32 a) ) { ret; }", 1 },
    { ".func f(.param .b32 a)", 1 },
    { ".shared .b8 s[4]", 1 },
    { "\x01", 1 },
    { ".version 9.0\n\xc3\xa9", 2 },
};

static void test_errors(void)
{
    for (size_t i = 0; i < sizeof bad_inputs / sizeof bad_inputs[0]; i++) {
        const struct bad *b = &bad_inputs[i];
        char err[256], want[32];
        sim_ptx_module_t m;
        int rc = sim_ptx_parse(b->text, strlen(b->text), &m, err, sizeof err);

        snprintf(want, sizeof want, "line %u: ", b->line);
        CHECK(rc == -EINVAL, "input %zu \"%s\": expected -EINVAL, got %d", i, b->text, rc);
        CHECK(strncmp(err, want, strlen(want)) == 0 && strlen(err) > strlen(want) + 5,
              "input %zu \"%s\": expected a message starting \"%s\", got \"%s\"", i, b->text,
              want, err);
        CHECK(m.nentries == 0 && !m.entries && m.nglobals == 0 && !m.globals,
              "input %zu: module left zeroed", i);
        /* no error buffer, and a tiny one, are fine too */
        CHECK_EQ(-EINVAL, sim_ptx_parse(b->text, strlen(b->text), &m, NULL, 0));
        CHECK_EQ(-EINVAL, sim_ptx_parse(b->text, strlen(b->text), &m, err, 4));
        CHECK(strlen(err) == 3, "truncated message: got \"%s\"", err);
    }
    CHECK_EQ(-EINVAL, sim_ptx_parse(NULL, 0, &(sim_ptx_module_t){ 0 }, NULL, 0));
    CHECK_EQ(-EINVAL, sim_ptx_parse("", 0, NULL, NULL, 0));
}

/* An empty text and one that stops at a NUL before len are well-formed. */
static void test_edges(void)
{
    static const char padded[] = ".entry k() {}\0\0garbage{{{";
    sim_ptx_module_t m;

    CHECK_EQ(0, sim_ptx_parse("", 0, &m, NULL, 0));
    CHECK_EQ(0, m.nentries);
    CHECK_EQ(0, sim_ptx_parse(padded, sizeof padded, &m, NULL, 0));
    CHECK_EQ(1, m.nentries);
    sim_ptx_free(&m);
    sim_ptx_free(NULL);
}

/* ------------------------------------------------------------------ robustness */

/* Parse `n` bytes copied into an exact-size buffer, so that any read past them is caught. */
static void parse_exact(const char *text, size_t n, const char *what, size_t at)
{
    char *buf = malloc(n ? n : 1), err[256];
    sim_ptx_module_t m;
    int rc;

    if (!buf)
        return;
    memcpy(buf, text, n);
    rc = sim_ptx_parse(buf, n, &m, err, sizeof err);
    CHECK(rc == 0 || (rc == -EINVAL && strncmp(err, "line ", 5) == 0),
          "%s at %zu: got %d \"%s\"", what, at, rc, err);
    for (uint32_t i = 0; rc == 0 && i < m.nentries; i++)
        CHECK(m.entries[i].name && m.entries[i].args_size >= m.entries[i].nparams, "%s", what);
    sim_ptx_free(&m);
    free(buf);
}

static void test_truncated(const char *text, size_t len, const char *what)
{
    for (size_t n = 0; n <= len; n++)
        parse_exact(text, n, what, n);
}

/* Replace bytes of a real file with syntax characters; nothing may crash. */
static void test_mutations(const char *text, size_t len)
{
    static const char alphabet[] = "{}()[];,.=-+\"/*\n\t0x9fe_$%@ \x80";
    char *copy = malloc(len);
    uint64_t seed = 0x9E3779B97F4A7C15ull;

    if (!copy || len == 0) {
        free(copy);
        return;
    }
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, text, len);
        for (int k = 0; k < 1 + round % 4; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            copy[(seed >> 33) % len] = alphabet[(seed >> 17) % (sizeof alphabet - 1)];
        }
        parse_exact(copy, len, "mutation", (size_t)round);
    }
    free(copy);
}

static void test_robustness(void)
{
    size_t len;
    char *text = (char *)read_file("tests/fixtures/vecadd.ptx", &len);

    test_truncated(forms_ptx, strlen(forms_ptx), "forms prefix");
    test_truncated(globals_ptx, strlen(globals_ptx), "globals prefix");
    if (!text)
        return;
    test_truncated(text, len, "vecadd.ptx prefix");
    test_mutations(text, len);
    free(text);
}

/* ------------------------------------------------------------------ images */

static void test_image_text(void)
{
    static const char text[] = "  // generated\n/* header */\n\n.version 9.0\n.target sm_90\n";
    static const unsigned char garbage[] = { 0x12, 0x34, 0x56, 0x78, 0x9a, 0, 0, 0 };
    const char *ptx = NULL;
    size_t len = 0;
    int kind = -1;

    CHECK_EQ(0, sim_image_ptx(text, &ptx, &len, &kind));
    CHECK(ptx == text && len == strlen(text) && kind == SIM_IMAGE_PTX, "PTX text as is");
    CHECK_EQ(-EINVAL, sim_image_ptx(garbage, &ptx, &len, &kind));
    CHECK_EQ(0, kind);
    CHECK_EQ(-EINVAL, sim_image_ptx("", &ptx, &len, NULL));
    CHECK_EQ(-EINVAL, sim_image_ptx("hello", &ptx, &len, NULL));
    CHECK_EQ(-EINVAL, sim_image_ptx("// only a comment\n", &ptx, &len, NULL));
    CHECK_EQ(-EINVAL, sim_image_ptx("/* unterminated .version", &ptx, &len, NULL));
    CHECK_EQ(-EINVAL, sim_image_ptx("\x7f" "EL", &ptx, &len, NULL));
    CHECK_EQ(-EINVAL, sim_image_ptx("P\xed", &ptx, &len, NULL));
    CHECK_EQ(-EINVAL, sim_image_ptx(NULL, &ptx, &len, &kind));
    CHECK_EQ(-EINVAL, sim_image_ptx(text, NULL, &len, NULL));
}

static void test_image_cubin(void)
{
    size_t len;
    unsigned char *elf = read_file("tests/fixtures/vecadd.cubin", &len);
    const char *ptx;
    int kind = 0;

    if (!elf)
        return;
    CHECK_EQ(-ENOEXEC, sim_image_ptx(elf, &ptx, &len, &kind));
    CHECK_EQ(SIM_IMAGE_ELF, kind);
    free(elf);
}

/* The PTX of an uncompressed fatbin lies inside it and reads like the .ptx fixture. */
static void check_fatbin_ptx(const unsigned char *fb, size_t size, const char *ptx, size_t len)
{
    char err[256];
    sim_ptx_module_t m;

    CHECK((const unsigned char *)ptx > fb && (const unsigned char *)ptx + len <= fb + size,
          "PTX points into the container");
    CHECK(len > 0 && strnlen(ptx, len) == len && strstr(ptx, ".version 9.0"), "PTX text");
    CHECK_EQ(0, sim_ptx_parse(ptx, len, &m, err, sizeof err));
    check_vecadd_module(&m);
    sim_ptx_free(&m);
}

static void test_image_fatbin(void)
{
    size_t size, len;
    unsigned char *fb = read_file("tests/fixtures/vecadd.fatbin", &size);
    struct { int magic, version; const unsigned long long *data; void *name; } wrap;
    const char *ptx = NULL, *direct;
    int kind = 0;

    if (!fb)
        return;
    CHECK_EQ(0, sim_image_ptx(fb, &ptx, &len, &kind));
    CHECK_EQ(SIM_IMAGE_FATBIN, kind);
    check_fatbin_ptx(fb, size, ptx, len);
    direct = ptx;
    wrap.magic = 0x466243B1;
    wrap.version = 1;
    wrap.data = (const unsigned long long *)(void *)fb;
    wrap.name = NULL;
    CHECK_EQ(0, sim_image_ptx(&wrap, &ptx, &len, &kind));
    CHECK(ptx == direct && kind == SIM_IMAGE_FATBIN, "the wrapper leads to the same PTX");
    wrap.version = 7;
    CHECK_EQ(-EINVAL, sim_image_ptx(&wrap, &ptx, &len, &kind));
    wrap.version = 2;
    wrap.data = NULL;
    CHECK_EQ(-EINVAL, sim_image_ptx(&wrap, &ptx, &len, &kind));
    free(fb);
}

static void test_image_no_ptx(void)
{
    size_t size, len;
    unsigned char *zc = read_file("tests/fixtures/vecadd_compressed.fatbin", &size);
    unsigned char *elf = read_file("tests/fixtures/vecadd_elf.fatbin", &size);
    const char *ptx;
    int kind = 0;

    if (zc) {
        CHECK_EQ(-ENOTSUP, sim_image_ptx(zc, &ptx, &len, &kind));
        CHECK_EQ(SIM_IMAGE_FATBIN, kind);
    }
    if (elf) {
        CHECK_EQ(-ENOEXEC, sim_image_ptx(elf, &ptx, &len, &kind));
        CHECK_EQ(SIM_IMAGE_FATBIN, kind);
    }
    free(zc);
    free(elf);
}

/* A container holding the single entries of several fixture containers, in order. */
static unsigned char *container(unsigned char *const *parts, const size_t *sizes, int n,
                                size_t *total)
{
    size_t off = 16;
    unsigned char *c;
    uint64_t body = 0;

    for (int i = 0; i < n; i++)
        body += sizes[i] - 16;
    c = calloc(1, 16 + body);
    if (!c)
        return NULL;
    memcpy(c, parts[0], 8);
    memcpy(c + 8, &body, 8);
    for (int i = 0; i < n; i++) {
        memcpy(c + off, parts[i] + 16, sizes[i] - 16);
        off += sizes[i] - 16;
    }
    *total = off;
    return c;
}

static void test_image_mixed(void)
{
    size_t sz[3], total, len;
    unsigned char *p[3] = {
        read_file("tests/fixtures/vecadd_elf.fatbin", &sz[0]),
        read_file("tests/fixtures/vecadd_compressed.fatbin", &sz[1]),
        read_file("tests/fixtures/vecadd.fatbin", &sz[2]),
    };
    unsigned char *c = p[0] && p[1] && p[2] ? container(p, sz, 3, &total) : NULL;
    const char *ptx = NULL;
    uint64_t bad;

    if (c) {
        /* ELF, compressed PTX, plain PTX: the plain PTX is chosen */
        CHECK_EQ(0, sim_image_ptx(c, &ptx, &len, NULL));
        check_fatbin_ptx(c, total, ptx, len);
        /* a payload running past the container is refused */
        memcpy(&bad, c + 8, 8);
        bad -= 8;
        memcpy(c + 8, &bad, 8);
        CHECK_EQ(-EINVAL, sim_image_ptx(c, &ptx, &len, NULL));
        c[4] = 2;   /* unknown container version */
        CHECK_EQ(-EINVAL, sim_image_ptx(c, &ptx, &len, NULL));
        memset(c + 8, 0, 8);
        c[4] = 1;   /* an empty container */
        CHECK_EQ(-ENOEXEC, sim_image_ptx(c, &ptx, &len, NULL));
    }
    free(c);
    for (int i = 0; i < 3; i++)
        free(p[i]);
}

/* Of two plain PTX entries, the one for the highest architecture is chosen. */
static void test_image_pick(void)
{
    size_t sz[2], total, len;
    unsigned char *p[2] = {
        read_file("tests/fixtures/vecadd.fatbin", &sz[0]),
        read_file("tests/fixtures/vecadd.fatbin", &sz[1]),
    };
    unsigned char *c = p[0] && p[1] ? container(p, sz, 2, &total) : NULL;
    const char *ptx = NULL;

    if (c) {
        c[16 + 28] = 80;    /* the first entry's arch: sm_80 */
        CHECK_EQ(0, sim_image_ptx(c, &ptx, &len, NULL));
        CHECK((const unsigned char *)ptx > c + sz[0], "expected the sm_90 entry, the second");
        c[16 + 28] = 100;
        CHECK_EQ(0, sim_image_ptx(c, &ptx, &len, NULL));
        CHECK((const unsigned char *)ptx < c + sz[0], "expected the sm_100 entry, the first");
        check_fatbin_ptx(c, total, ptx, len);
    }
    free(c);
    free(p[0]);
    free(p[1]);
}

int main(void)
{
    test_param_forms();
    test_many_params();
    test_nvcc_ptx();
    test_nvcc_debug_ptx();
    test_globals();
    test_errors();
    test_edges();
    test_robustness();
    test_image_text();
    test_image_cubin();
    test_image_fatbin();
    test_image_no_ptx();
    test_image_mixed();
    test_image_pick();
    if (failures) {
        fprintf(stderr, "unit_ptx: %d check(s) failed\n", failures);
        return 1;
    }
    printf("unit_ptx: ok\n");
    return 0;
}
