# SPDX-License-Identifier: MIT
# gen_errors.awk - turn the CUresult enum of cuda.h into a C table of
# { value, "NAME", "description" } rows for cuGetErrorName/cuGetErrorString.
# The description is the enumerator's doc comment, first sentence, joined onto one line.
/typedef enum cudaError_enum/ { inside = 1; next }
inside && /} CUresult;/ { inside = 0 }
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
/^[ \t]*CUDA_[A-Z0-9_]+[ \t]*=[ \t]*[0-9]+/ {
    name = $1
    sentence = doc
    if (match(sentence, /\.( |$)/))
        sentence = substr(sentence, 1, RSTART)
    printf "    { %s, \"%s\", \"%s\" },\n", name, name, sentence
    doc = ""
}
