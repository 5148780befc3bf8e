# SPDX-License-Identifier: MIT
# gen_results.awk - turn the CUptiResult enum of cupti_result.h into a C table of
# { value, "NAME", "description" } rows for cuptiGetResultString and cuptiGetErrorMessage.
# The description is the enumerator's doc comment, first sentence, joined onto one line.
/^typedef enum/ { inside = 1; doc = ""; next }
inside && /} CUptiResult;/ { inside = 0 }
!inside { next }
/\/\*\*/ { doc = ""; indoc = 1; next }
indoc && /\*\// { indoc = 0; next }
indoc {
    line = $0
    sub(/^[ \t]*\*[ \t]?/, "", line)
    gsub(/\\/, "", line)
    gsub(/"/, "'", line)
    doc = doc (doc == "" ? "" : " ") line
    next
}
/^[ \t]*CUPTI_[A-Z0-9_]+[ \t]*=[ \t]*[0-9]+/ {
    name = $1
    sub(/=.*/, "", name)
    if (name == "CUPTI_ERROR_FORCE_INT")
        next
    sentence = doc
    if (match(sentence, /\.( |$)/))
        sentence = substr(sentence, 1, RSTART)
    printf "    { %s, \"%s\", \"%s\" },\n", name, name, sentence
    doc = ""
}
