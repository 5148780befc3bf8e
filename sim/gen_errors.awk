# SPDX-License-Identifier: MIT
# gen_errors.awk - turn a result enum of a CUDA header into a C table of
# { value, "NAME", "description" } rows: CUresult of cuda.h for cuGetErrorName/cuGetErrorString,
# CUptiResult of cupti_result.h for cuptiGetResultString/cuptiGetErrorMessage.
#   awk -v enum=CUresult -v prefix=CUDA_ -f sim/gen_errors.awk cuda.h
#   awk -v enum=CUptiResult -v prefix=CUPTI_ -f sim/gen_errors.awk cupti_result.h
# Rows are the enumerators named PREFIX... with a numeric value in the typedef enum that closes
# with "} ENUM;" (other enums are read and dropped), less the *_FORCE_INT sentinel.  The
# description is the enumerator's doc comment, first sentence, joined onto one line, with
# Doxygen's "::" reference marks removed.
BEGIN {
    if (enum == "" || prefix == "") {
        print "gen_errors.awk: set -v enum=TYPE and -v prefix=NAME_ (CUresult and CUDA_, or " \
              "CUptiResult and CUPTI_)" > "/dev/stderr"
        exit 2
    }
    row_re = "^[ \t]*" prefix "[A-Z0-9_]+[ \t]*=[ \t]*[0-9]+"
}
/^typedef enum/ { inside = 1; doc = ""; n = 0; next }
inside && /^}/ {
    inside = 0
    if ($0 ~ ("^}[ \t]*" enum ";")) {
        found = 1
        printed += n
        for (i = 0; i < n; i++)
            print rows[i]
    }
}
!inside { next }
/\/\*\*/ { doc = ""; indoc = 1; next }
indoc && /\*\// { indoc = 0; next }
indoc {
    line = $0
    sub(/^[ \t]*\*[ \t]?/, "", line)
    gsub(/\\/, "", line)
    gsub(/"/, "'", line)
    gsub(/::/, "", line)
    doc = doc (doc == "" ? "" : " ") line
    next
}
$0 ~ row_re {
    name = $1
    sub(/=.*/, "", name)
    if (name ~ /_FORCE_INT$/)
        next
    sentence = doc
    if (match(sentence, /\.( |$)/))
        sentence = substr(sentence, 1, RSTART)
    rows[n++] = sprintf("    { %s, \"%s\", \"%s\" },", name, name, sentence)
    doc = ""
}
END {
    if (enum == "" || prefix == "")
        exit 2
    if (!found || !printed) {
        print "gen_errors.awk: no \"typedef enum { " prefix "... } " enum ";\" in the input" \
              > "/dev/stderr"
        exit 1
    }
}
