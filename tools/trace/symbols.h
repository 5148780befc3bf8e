/* SPDX-License-Identifier: MIT */
/*
 * symbols.h - symbol names and source lines for call-site frames, read from the modules' ELF
 * files (symbol tables, DWARF line tables).
 *
 * A frame is (module path, offset from the module's load base), as the recorder writes it.
 * The module's ELF file is read at most once (a bounded cache of the most recently used
 * modules, failures included), and nothing in it is trusted: a missing, truncated or garbage
 * file only means the frame stays unresolved.
 */
#ifndef ELIXIR_TRACE_SYMBOLS_H
#define ELIXIR_TRACE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

/* The function holding `offset` of `module`: 0 with its name in name (len bytes, cut when
 * longer) and the offset from the symbol's start in *sym_off; -ENOENT when no symbol holds
 * it, or another negative errno when the module cannot be read as a 64-bit little-endian
 * ELF file.
 *
 * Two load bases are in use, and both are understood.  The recorder (tracer/stack.c) takes
 * the load bias of dl_iterate_phdr, so its offset is the ELF virtual address itself; dladdr's
 * dli_fbase is the start of the lowest PT_LOAD segment rounded down to the page, so an offset
 * from it is the virtual address minus that start.  The two agree for every object whose
 * lowest segment starts at 0 (position-independent executables and shared objects as linked
 * today); otherwise (a fixed-address executable, a prelinked library) the offset is read as
 * a virtual address when it falls inside an executable segment, and as relative to the
 * lowest segment when it does not.  Offsets are return addresses, so the function is the
 * one holding offset - 1 (a call as a function's last instruction returns past its end),
 * unless a function starts exactly at the offset.
 */
int tsym_lookup(const char *module, uint64_t offset, char *name, size_t len,
                uint64_t *sym_off);

/* The source line of the frame at `offset` of `module` (the one tsym_lookup names), from
 * the module's DWARF line table (.debug_line: built with -g, not stripped of it): 0 with the
 * file's path as the table gives it in file (len bytes, cut when longer) and the line in
 * *line; -ENOENT when the module has no line for it (no table, compressed debug sections,
 * code of no line), or another negative errno as tsym_lookup.  The table is read at the
 * first question about the module and counts toward its share of the cache. */
int tsym_line(const char *module, uint64_t offset, char *file, size_t len, uint32_t *line);

/* A C++ symbol's name demangled into buf (len bytes, cut when longer), through the C++
 * runtime's __cxa_demangle (libstdc++.so.6, opened at the first mangled name); name itself
 * when it is not a mangled name, or no runtime can be opened, or it cannot demangle it. */
const char *tsym_demangle(const char *name, char *buf, size_t len);

/* Forgets every cached module. */
void tsym_clear(void);

#endif
