#!/usr/bin/env python3
"""Doxygen's INPUT_FILTER for tickwheel's public headers (tools/docs_reference.sh).

The headers document in plain // comments, formatted as text (indented lists,
tables, code). Each block of whole-line // comments is handed to Doxygen as
one verbatim comment, so the reference shows it as written and no header needs
Doxygen markup; the file's opening block becomes the file's page (\\file).
Every output line stands for the input line of the same number, so Doxygen's
messages point into the header. Specializations of other libraries' templates
(fmt::formatter, std::hash), which Doxygen cannot place, are left out.

Usage: doxygen_filter.py <header>  (the filtered text on stdout)
"""

import re
import sys

COMMENT = re.compile(r"^(\s*)//(.*)$")


def filter_header(path, lines):
    out = []
    first = True
    i = 0
    while i < len(lines):
        m = COMMENT.match(lines[i])
        if not m:
            out.append(lines[i])
            if lines[i].strip():
                first = False
            i += 1
            continue
        text = []
        while i < len(lines) and COMMENT.match(lines[i]):
            body = COMMENT.match(lines[i]).group(2)
            body = body[1:] if body.startswith(" ") else body
            text.append(body.replace("*/", "* /"))
            i += 1
        opening = "/** \\file " + path + " " if first else "/** "
        text[0] = m.group(1) + opening + "\\verbatim " + text[0]
        text[-1] += " \\endverbatim */"
        out.extend(text)
        first = False
    k = 0
    while k + 1 < len(out):
        if out[k].startswith("template <>") and re.match(
                r"^struct (fmt|std)::", out[k + 1]):
            out[k] = "/** \\cond */ " + out[k]
            end = k + 1
            while end < len(out) and out[end] != "};":
                end += 1
            if end < len(out):
                out[end] += " /** \\endcond */"
            k = end
        k += 1
    return out


def main():
    path = sys.argv[1]
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    sys.stdout.write("\n".join(filter_header(path, lines)))


if __name__ == "__main__":
    main()
