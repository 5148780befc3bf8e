/* SPDX-License-Identifier: MIT */
/*
 * dwarf_line.h - source lines for code addresses, from a module's DWARF line tables.
 *
 * The line number programs of .debug_line (DWARF versions 2 to 5, 32- and 64-bit) are run
 * once into one table of rows sorted by address; a look-up is then a binary search.  Path
 * strings of version 5 tables may live in .debug_line_str or .debug_str, which the caller
 * passes along.  The sections come from a file nobody vouched for: every length, count,
 * index and string is checked before it is used, a unit that breaks a rule is skipped (the
 * units before it are kept), and the table's size is bounded.
 */
#ifndef ELIXIR_TRACE_DWARF_LINE_H
#define ELIXIR_TRACE_DWARF_LINE_H

#include <stddef.h>
#include <stdint.h>

/* One row: from addr on (up to the next row's address), the code is line `line` of file
 * `file` (an index into the table's files).  Line 0 means no line: the end of a sequence, or
 * code the compiler attributed to none. */
typedef struct dl_row {
    uint64_t addr;
    uint32_t file, line;
} dl_row_t;

typedef struct dl_table {
    dl_row_t *rows;
    size_t nrows, cap;
    size_t *files;                  /* offsets into names of each file's path */
    size_t nfiles, files_cap;
    char *names;                    /* NUL-terminated paths */
    size_t names_len, names_cap;
} dl_table_t;

/* Sections of one module: .debug_line, and .debug_line_str and .debug_str (either may be
 * empty: a version 5 path that refers to a missing one is then skipped). */
typedef struct dl_sections {
    const uint8_t *line, *line_str, *str;
    size_t line_len, line_str_len, str_len;
} dl_sections_t;

/* Runs every line program of s->line into t (zeroed by the caller).  0, or -ENOMEM (t then
 * holds what was read before); units that are malformed are skipped without an error. */
int dl_parse(dl_table_t *t, const dl_sections_t *s);

/* The file and line of the code at addr: 0 with *file (the table's string) and *line, or
 * -ENOENT when no row with a line holds addr. */
int dl_find(const dl_table_t *t, uint64_t addr, const char **file, uint32_t *line);

/* Bytes the table holds (for a cache's accounting). */
size_t dl_bytes(const dl_table_t *t);

void dl_free(dl_table_t *t);

#endif
