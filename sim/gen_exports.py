#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generate the exported symbol set and the cuGetProcAddress table of the simulated driver.

The real libcuda.so.1 exports every Driver API function that cuda.h declares, under every ABI
name it has ever had (cuMemAlloc and cuMemAlloc_v2, cuMemcpy and cuMemcpy_ptds, ...).  This
script asks the C preprocessor which names those are, by expanding cuda.h three ways:

  plain                                the current default-stream names (cuMemAlloc_v2, ...)
  -DCUDA_API_PER_THREAD_DEFAULT_STREAM the per-thread names (cuMemcpy_ptds, cuLaunchKernel_ptsz)
  -D__CUDA_API_VERSION_INTERNAL        the legacy ABI names (cuMemAlloc, cuCtxCreate, ...)

(static inline helpers such as cuGetProcAddress_v2_ptsz are not exported).  What is expanded is
cudaTypedefs.h, which includes cuda.h, so the PFN typedefs that exist only under
__CUDA_API_VERSION_INTERNAL (PFN_cuMemAlloc_v2000 and the other legacy ABIs) are seen as well.
It then writes one C file that defines a weak fallback for each name (returning
CUDA_ERROR_NOT_SUPPORTED; a strong definition anywhere in sim/ replaces it at link time), and
the table behind cuGetProcAddress: one row per PFN_<name>_v<version>[_ptds|_ptsz] typedef of
cudaTypedefs.h, mapped to the exported symbol that implements that variant.  It also writes
exports.txt, the exported names one per line, next to the C file (tests read it).

Python 3 standard library only.  Usage:
  gen_exports.py --cuda-include DIR --cc "CC" -o build/gen/sim_exports.c
"""

import argparse
import os
import re
import shlex
import subprocess
import sys

# The row type of the table.  sim/procaddr.c declares the same struct; the two must match.
PROC_STRUCT = """\
typedef struct sim_proc {
    const char *name;   /* base name asked for, e.g. "cuMemAlloc" */
    int version;        /* CUDA version that introduced this variant, e.g. 3020 */
    int per_thread;     /* SIM_PROC_PTDS for a _ptds/_ptsz variant, else SIM_PROC_DEFAULT */
    const char *symbol; /* exported name of the variant, e.g. "cuMemAlloc_v2" */
    void *fn;           /* its address */
} sim_proc_t;
"""

CUDA_ERROR_NOT_SUPPORTED = 801

# The three expansions of cuda.h whose declarations together make the exported set.
PP_MODES = (
    ("plain", []),
    ("per-thread", ["-DCUDA_API_PER_THREAD_DEFAULT_STREAM"]),
    ("internal", ["-D__CUDA_API_VERSION_INTERNAL"]),
)

# Exceptions to the naming rule (the n-th default variant of NAME is NAME, NAME_v2, NAME_v3...;
# a per-thread variant is the default name current at its version plus _ptds/_ptsz).  Keyed by
# the PFN typedef's name without the PFN_ prefix; the value is the exported symbol.  Each entry
# says why the rule does not hold.  With the CUDA 13.0 headers the rule holds for every typedef
# (checked against cuda.h on every build), so the table is empty.
NAMING_EXCEPTIONS = {
}

ATTRIBUTE_RE = re.compile(r"__attribute__\s*\(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\)")
TOKEN_RE = re.compile(r"[A-Za-z_]\w*|\*")
PFN_RE = re.compile(
    r"typedef\s+(\w+)\s*\(\s*\*\s*PFN_(cu\w+?)_v(\d+)(_ptds|_ptsz)?\s*\)")


class GenError(Exception):
    """A fatal problem with the headers or the compiler; the build must stop."""


def preprocess(cc, include, defines):
    """Return cudaTypedefs.h (which includes cuda.h) expanded by `cc -E` with `defines`."""
    cmd = shlex.split(cc) + ["-E", "-P", "-x", "c", "-I", include] + defines + ["-"]
    try:
        res = subprocess.run(cmd, input="#include <cudaTypedefs.h>\n", capture_output=True,
                             text=True, check=False)
    except OSError as e:
        raise GenError("cannot run %r: %s" % (cmd[0], e))
    if res.returncode != 0:
        raise GenError("%s failed (exit %d):\n%s" % (" ".join(cmd), res.returncode, res.stderr))
    return res.stdout


def top_level_statements(text):
    """Split preprocessed C into file-scope statements (declarations and definitions).

    A statement ends at a ';' outside any braces or parentheses, or at the '}' that closes a
    function body (a brace block whose opening '{' follows a ')').
    """
    stmts, start, brace, paren, is_def = [], 0, 0, 0, False
    for m in re.finditer(r"[{}();]", text):
        c = m.group()
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        elif c == "{":
            if brace == 0:
                is_def = text[start:m.start()].rstrip().endswith(")")
            brace += 1
        elif c == "}":
            brace -= 1
            if brace == 0 and is_def:
                stmts.append(text[start:m.end()])
                start, is_def = m.end(), False
        elif brace == 0 and paren == 0:
            stmts.append(text[start:m.end()])
            start = m.end()
    return stmts


def function_head(stmt):
    """Return (specifier tokens, name) of a function declaration or definition, else None."""
    head, paren, _ = stmt.partition("(")
    if not paren:
        return None
    tokens = TOKEN_RE.findall(head)
    if len(tokens) < 2 or tokens[0] == "typedef" or tokens[-1] == "*":
        return None
    return tokens[:-1], tokens[-1]


def declared_functions(text, where):
    """Return (exported, inline) name sets of the cu* functions declared in preprocessed text.

    Every exported function must return CUresult; anything else stops the build, since the
    weak fallbacks and the table assume it.
    """
    exported, inline = set(), set()
    for stmt in top_level_statements(ATTRIBUTE_RE.sub(" ", text)):
        fh = function_head(stmt)
        if fh is None or not fh[1].startswith("cu"):
            continue
        spec, name = fh
        if "static" in spec:
            inline.add(name)
            continue
        ret = [t for t in spec if t not in ("extern", "inline")]
        if ret != ["CUresult"]:
            raise GenError("%s: %s returns %r, not CUresult" % (where, name, " ".join(ret)))
        exported.add(name)
    return exported, inline


def pfn_variants(text, where):
    """Return {(base, version, suffix)} for every PFN typedef in preprocessed text."""
    found = set()
    for m in PFN_RE.finditer(text):
        ret, base, version, suffix = m.group(1), m.group(2), int(m.group(3)), m.group(4) or ""
        if ret != "CUresult":
            raise GenError("%s: PFN_%s_v%d%s returns %s, not CUresult"
                           % (where, base, version, suffix, ret))
        found.add((base, version, suffix))
    return found


def derive_symbol(base, version, suffix, default_versions):
    """Apply the naming rule: the exported name of variant (base, version, suffix).

    default_versions lists the versions of base's non-per-thread variants, ascending.  Returns
    None for a per-thread variant older than every default variant (no rule applies).
    """
    key = "%s_v%d%s" % (base, version, suffix)
    if key in NAMING_EXCEPTIONS:
        return NAMING_EXCEPTIONS[key]
    current = [i for i, v in enumerate(default_versions) if v <= version]
    if not current:
        return None
    n = current[-1]
    return base + ("_v%d" % (n + 1) if n else "") + suffix


def build_table(variants, exported, inline, warn):
    """Map each PFN variant to its exported symbol; return sorted rows.

    A row is (base, per_thread, version, symbol), sorted by (base, per_thread, version), the
    order sim/procaddr.c binary-searches.  A derived name that cuda.h does not declare is
    reported through warn() and left out.
    """
    defaults = {}
    for base, version, suffix in variants:
        if not suffix:
            defaults.setdefault(base, []).append(version)
    rows = []
    for base, version, suffix in variants:
        symbol = derive_symbol(base, version, suffix, sorted(defaults.get(base, [])))
        pfn = "PFN_%s_v%d%s" % (base, version, suffix)
        if symbol is None:
            warn("%s: no default variant at or before %d; skipped" % (pfn, version))
        elif symbol in inline:
            warn("%s: %s is a static inline helper, not exported; skipped" % (pfn, symbol))
        elif symbol not in exported:
            warn("%s: derived name %s is not declared in cuda.h; skipped" % (pfn, symbol))
        else:
            rows.append((base, 1 if suffix else 0, version, symbol))
    rows.sort()
    return rows


HEADER = """\
/* SPDX-License-Identifier: MIT */
/*
 * Generated by sim/gen_exports.py from cuda.h and cudaTypedefs.h; do not edit.
 *
 * A weak fallback for every Driver API function the real libcuda.so.1 exports
 * (%(nexports)d names): each returns CUDA_ERROR_NOT_SUPPORTED until a strong definition
 * elsewhere in sim/ replaces it.  The functions take no parameters here; a caller
 * passing arguments is harmless on the supported ABIs (x86-64, aarch64).  cuda.h is
 * not included, since its prototypes would conflict.
 *
 * sim_procs: the %(nrows)d variants of cudaTypedefs.h, sorted by (name, per_thread, version),
 * for cuGetProcAddress in sim/procaddr.c.
 */

#define SIM_PROC_DEFAULT 0
#define SIM_PROC_PTDS 1

/* Must match the declaration in sim/procaddr.c. */
%(struct)s
"""


def render(exported, rows):
    """Return the text of the generated C file."""
    out = [HEADER % {"nexports": len(exported), "nrows": len(rows), "struct": PROC_STRUCT}]
    for name in sorted(exported):
        out.append('__attribute__((weak, visibility("default"))) int %s(void) { return %d; }\n'
                   % (name, CUDA_ERROR_NOT_SUPPORTED))
    out.append("\nextern const sim_proc_t sim_procs[];\nextern const unsigned sim_nprocs;\n\n")
    out.append("const sim_proc_t sim_procs[] = {\n")
    for base, per_thread, version, symbol in rows:
        out.append('    { "%s", %d, %s, "%s", (void *)&%s },\n'
                   % (base, version, "SIM_PROC_PTDS" if per_thread else "SIM_PROC_DEFAULT",
                      symbol, symbol))
    out.append("};\nconst unsigned sim_nprocs = sizeof sim_procs / sizeof sim_procs[0];\n")
    return "".join(out)


def write_atomically(path, text):
    """Write text to path through a temporary file, so a failed run leaves no half file."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuda-include", required=True, help="directory holding cuda.h")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"), help="C compiler (for -E)")
    ap.add_argument("-o", dest="output", required=True, help="generated C file")
    args = ap.parse_args(argv)

    def warn(msg):
        sys.stderr.write("gen_exports.py: warning: %s\n" % msg)

    exported, inline, variants = set(), set(), set()
    for label, defines in PP_MODES:
        text = preprocess(args.cc, args.cuda_include, defines)
        where = "cuda.h (%s)" % label
        names, helpers = declared_functions(text, where)
        exported |= names
        inline |= helpers
        variants |= pfn_variants(text, "cudaTypedefs.h (%s)" % label)
    inline -= exported
    if not exported or not variants:
        raise GenError("no declarations found under %s" % args.cuda_include)
    rows = build_table(sorted(variants), exported, inline, warn)
    unreachable = exported - {row[3] for row in rows}
    if unreachable:
        warn("exported but no PFN typedef reaches them through cuGetProcAddress: %s"
             % " ".join(sorted(unreachable)))

    write_atomically(args.output, render(exported, rows))
    listing = os.path.join(os.path.dirname(os.path.abspath(args.output)), "exports.txt")
    write_atomically(listing, "".join(n + "\n" for n in sorted(exported)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except GenError as e:
        sys.stderr.write("gen_exports.py: error: %s\n" % e)
        sys.exit(1)
