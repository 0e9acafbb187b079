#!/usr/bin/env python3
"""Fails when library code uses a StatusOr's value without checking it.

  statusor_check.py [ROOT]     ROOT: the repository (default: two levels up)

Every `*x`, `x->` and `x.value()` on an absl::StatusOr in engine/, ops/,
models/ and tools/ must come after a check of x in the same function:
`x.ok()` (`if (!x.ok()) return x.status();`), or `x.status()` handed on
(`DAGRAD_RETURN_IF_ERROR(x.status())`). DAGRAD_ASSIGN_OR_RETURN checks for
itself. A call whose StatusOr is used at once (`*Tensor::Zeros(...)`,
`Parse(s).value()`) is never checked, and always reported. Each finding is
printed as

  models/toy/tasks.cc:47: '*Tensor::Zeros(...)' uses a StatusOr that nothing checked

and the script exits 1 when there is one, else 0. It works on the text, as
grep would: a StatusOr variable is one declared `absl::StatusOr<...> x =`
or `auto x = F(...)` where F is declared anywhere in the tree to return
absl::StatusOr; comments and string literals are ignored. ctest runs it
(test `statusor`), and tests/lint/statusor_check_test.py shows it failing on
unchecked uses.
"""

import os
import re
import sys

LIBRARY = ("engine", "ops", "models", "tools")
SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh")

# A function declared to return a StatusOr: `absl::StatusOr<...> Name(`.
RETURNS_STATUSOR = re.compile(r"StatusOr<[^;{]*?>\s+(?:[\w]+::)*(\w+)\s*\(")
# A StatusOr variable: `absl::StatusOr<...> x =` or `... x{`.
STATUSOR_VAR = re.compile(r"StatusOr<[^;{]*?>\s+(\w+)\s*[={]")
# `auto x = [object. or ns::]F(`.
AUTO_VAR = re.compile(r"\bauto\s*&{0,2}\s+(\w+)\s*=\s*(?:[\w:]+(?:\.|->|::))*(\w+)(?:\s*<[^<>()]*>)?\s*\(")
# What may come just before a dereferencing `*` (not a multiplication).
DEREF_BEFORE = r"(?:^|[=(,{!?:&|;]|\breturn)\s*"
TEMPLATE_ARGS = r"(?:\s*<[^<>()]*>)?"
CALL_DEREF = re.compile(DEREF_BEFORE + r"\*\s*((?:[\w]+(?:::|\.|->))*(\w+))" + TEMPLATE_ARGS + r"\s*\(")
CALL_VALUE = re.compile(r"((?:[\w]+(?:::|\.|->))*(\w+))" + TEMPLATE_ARGS + r"\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*(?:\.value\(\)|->)")


def strip_comments_and_strings(text):
    """Blanks out comments and string/char literals, keeping line numbers."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def sources(root, folders):
    """Yields repository-relative paths of the C++ and CUDA sources in `folders`."""
    for top in folders:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(folder, f), root).replace(os.sep, "/")


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return strip_comments_and_strings(f.read())


def statusor_functions(root):
    """Names of the functions some source declares to return a StatusOr."""
    names = set()
    for path in sources(root, LIBRARY):
        names.update(RETURNS_STATUSOR.findall(read(root, path)))
    return names


def use_patterns(name):
    n = re.escape(name)
    return [
        re.compile(DEREF_BEFORE + r"\*\s*(?:std::move\(\s*)?" + n + r"\b(?!\s*\()"),
        re.compile(r"(?<![\w.>])" + n + r"\s*->"),
        re.compile(r"(?<![\w.>])(?:std::move\(\s*)?" + n + r"\s*\)?\s*\.\s*value\(\)"),
    ]


def unchecked_variables(lines, functions):
    """(line, text) for each use of a StatusOr variable with no check before it."""
    declared = {}  # name -> line index of its latest declaration
    found = []
    for i, line in enumerate(lines):
        for name in list(declared):
            start = declared[name]
            check = re.compile(r"\b" + re.escape(name) + r"\s*\.\s*(?:ok|status)\(\)")
            for pattern in use_patterns(name):
                for m in pattern.finditer(line):
                    before = "\n".join(lines[start:i]) + "\n" + line[: m.start()]
                    if not check.search(before):
                        found.append((i + 1, m.group(0).strip()))
        for m in STATUSOR_VAR.finditer(line):
            declared[m.group(1)] = i
        for m in AUTO_VAR.finditer(line):
            if m.group(2) in functions:
                declared[m.group(1)] = i
            else:
                declared.pop(m.group(1), None)
    return found


def unchecked_calls(lines, functions):
    """(line, text) for each StatusOr a call returns and the caller uses at once."""
    found = []
    for i, line in enumerate(lines):
        for pattern in (CALL_DEREF, CALL_VALUE):
            for m in pattern.finditer(line):
                if m.group(2) in functions:
                    found.append((i + 1, m.group(0).strip()))
    return found


def problems(root):
    functions = statusor_functions(root)
    out = []
    for path in sources(root, LIBRARY):
        lines = read(root, path).split("\n")
        found = unchecked_variables(lines, functions) + unchecked_calls(lines, functions)
        for line_no, text in sorted(set(found)):
            out.append(f"{path}:{line_no}: '{text}' uses a StatusOr that nothing checked")
    return out


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    found = problems(root)
    for p in found:
        print(p)
    if found:
        print(f"{len(found)} unchecked StatusOr use(s): check ok() first, or use "
              "DAGRAD_ASSIGN_OR_RETURN (engine/status_macros.h)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
