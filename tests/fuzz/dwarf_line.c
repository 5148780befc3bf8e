/* SPDX-License-Identifier: MIT */
/*
 * dwarf_line.c - libFuzzer target for the DWARF line-table reader (tools/trace/dwarf_line.c):
 * the input's first byte k says how many of the bytes after it are the .debug_line_str
 * section; the rest is .debug_line (and serves as .debug_str too).  Each input is parsed,
 * and every row's file and line are read back through dl_find, so an out-of-bounds string
 * handed out is caught too.  Built and run for a bounded time by tests/fuzz_trace.sh (clang
 * -fsanitize=fuzzer,address,undefined); unit_dwarf_line writes the seed.
 */
#include "../../tools/trace/dwarf_line.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t k = size ? data[0] : 0;
    if (k > size - (size ? 1 : 0))
        k = size ? size - 1 : 0;
    const uint8_t *ls = size ? data + 1 : data, *line = ls + k;
    size_t line_len = size ? size - 1 - k : 0;
    dl_sections_t s = { line, ls, line, line_len, k, line_len };
    dl_table_t t;
    memset(&t, 0, sizeof(t));
    dl_parse(&t, &s);
    size_t n = 0;
    for (size_t i = 0; i < t.nrows; i++) {
        const char *f;
        uint32_t l;
        if (dl_find(&t, t.rows[i].addr, &f, &l) == 0)
            n += strlen(f) + l;
    }
    dl_free(&t);
    return n == (size_t)-1;
}
