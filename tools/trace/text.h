/* SPDX-License-Identifier: MIT */
/*
 * text.h - the text elixir-trace writes, shared by the commands and the exporters: XML and
 * JSON strings escaped from whatever bytes a trace holds, byte counts and durations for
 * people, and error messages into a caller's buffer.
 *
 * Strings from a trace are arbitrary bytes.  Both writers pass well-formed UTF-8 through and
 * write U+FFFD for every byte that does not start a character they may carry, so their output
 * is always valid XML 1.0 or JSON.
 */
#ifndef ELIXIR_TRACE_TEXT_H
#define ELIXIR_TRACE_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes s (NULL: "") as XML character data, fit for text and quoted attribute values alike
 * (and so for HTML): the markup characters as entities, tab, newline, CR, DEL and the C1
 * controls as character references, every byte that does not start a character XML 1.0
 * allows as U+FFFD. */
void text_xml(FILE *f, const char *s);

/* Writes s (NULL: "") as a JSON string, quotes included: '"' and '\\' escaped, newline, CR
 * and tab as \n, \r, \t, other control characters (DEL and C1 included) as \u00XX, bytes
 * that are not UTF-8 as U+FFFD: the output holds no raw control character. */
void text_json(FILE *f, const char *s);

/* A JSON number for a double, or null when it is not finite. */
void text_json_num(FILE *f, double v);
/* A time in ns as a JSON integer (rounded), or null where it is not finite or out of range. */
void text_json_ns(FILE *f, double ns);

/* A byte count in binary units: "512 B", "1.50 GiB". */
const char *text_bytes(uint64_t v, char buf[32]);

/* A duration: "850 ns", "2.35 us", "2.35 ms", "1.250 s".  text_ns_utf8 writes "µs" for
 * microseconds (pictures and HTML), text_ns the ASCII "us" (terminal output). */
const char *text_ns(uint64_t v, char buf[32]);
const char *text_ns_utf8(uint64_t v, char buf[32]);

/* Formats a message into err (len bytes; nothing when err is NULL or len 0) and returns rc:
 * `return text_fail(err, len, -EIO, "plot: write error");`. */
int text_fail(char *err, size_t len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The end of an exporter named `what`: rc < 0 (out of memory) gives "WHAT: out of memory"
 * and rc; then out is flushed, and a write error gives "WHAT: write error" and -EIO; else 0. */
int text_finish(FILE *out, int rc, const char *what, char *err, size_t len);

#endif
