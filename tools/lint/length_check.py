#!/usr/bin/env python3
"""Fails when a library function or file is too long.

  length_check.py [ROOT]     ROOT: the repository (default: two levels up)

The C++ and CUDA sources of the library (engine/, ops/, models/, tools/;
.h, .cc, .cu, .cuh) keep each function to at most 60 lines and each file to
at most 500. A function's length runs from the first line of its declaration
to its closing brace; lambdas and local classes count toward the function
that holds them. Each one over a limit is printed as

  ops/softmax.cc:185: MaskedSoftmaxTyped is 72 lines (at most 60)
  engine/plan/planner.cc: 612 lines (at most 500)

and the check exits 1, else 0. ctest runs it (test `length`), and
tests/lint/length_check_test.py shows it failing on a long function and file.
"""

import os
import re
import sys

from lint_common import run_main, sources

MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 500
FOLDERS = ("engine", "ops", "models", "tools")
SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh")

# Files exempt from the limits: none. (Add one only with the reason beside it.)
ALLOWED_LONG = set()

# A block that holds declarations rather than statements.
SCOPE = re.compile(r'^(template\s*<.*>\s*)?(namespace|class|struct|union|enum)\b|^extern\s*"C"',
                   re.S)
ACCESS = re.compile(r"\s*(public|private|protected)\s*:(?!:)")
NAME = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)*(?:operator\s*(?:\(\)|[^\s(]+)|~?[A-Za-z_]\w*))\s*\($")


def blank_out(text):
    """Returns text with comments, literals and preprocessor lines blanked.

    Newlines stay, so that offsets map to the same line numbers; every other
    character of what is removed becomes a space.
    """
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and text[i:].lstrip(" \t").startswith("#"):
            # A preprocessor line, with its backslash continuations.
            j = i
            while j < n:
                k = text.find("\n", j)
                k = n if k < 0 else k
                if text[j:k].rstrip().endswith("\\"):
                    j = k + 1
                else:
                    break
            k = text.find("\n", j)
            k = n if k < 0 else k
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
            continue
        if text.startswith("//", i):
            k = text.find("\n", i)
            k = n if k < 0 else k
            out.append(" " * (k - i))
            i = k
            continue
        if text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k + 2
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
            continue
        raw = re.match(r'R"([^(\s]*)\(', text[i:i + 20])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + raw.group(1) + '"', i)
            k = n if end < 0 else end + len(raw.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
            continue
        if c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
            continue
        out.append(c)
        at_line_start = c == "\n" or (at_line_start and c in " \t")
        i += 1
    return "".join(out)


def top_level_equals(header):
    """True when header has an '=' outside brackets: an initializer."""
    depth = 0
    header = re.sub(r"\boperator\s*[^\s(]+", "operator", header)
    for c in header:
        if c in "([<":
            depth += 1
        elif c in ")]>":
            depth = max(0, depth - 1)
        elif c == "=" and depth == 0:
            return True
    return False


def long_functions(text, limit):
    """Yields (line, name, lines) for each function longer than limit."""
    code = blank_out(text)
    line_at = [0] * (len(code) + 1)
    line = 1
    for i, c in enumerate(code):
        line_at[i] = line
        if c == "\n":
            line += 1
    line_at[len(code)] = line

    def scan(begin, end):
        """Scans the declarations of a scope, code[begin:end]."""
        header_start = begin
        i = begin
        while i < end:
            c = code[i]
            if c in ";}":
                header_start = i + 1
            elif c == "{":
                close = matching_brace(code, i)
                header = code[header_start:i].strip()
                if SCOPE.match(header):
                    yield from scan(i + 1, close)
                elif "(" in header and not top_level_equals(header):
                    label = ACCESS.match(code, header_start)
                    first = label.end() if label else header_start
                    first += len(code[first:i]) - len(code[first:i].lstrip())
                    lines = line_at[close] - line_at[first] + 1
                    if lines > limit:
                        yield (line_at[first], function_name(header), lines)
                i = close
                header_start = close + 1
            i += 1

    yield from scan(0, len(code))


def matching_brace(code, open_at):
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(code) - 1


def function_name(header):
    """The function's name: the identifier before its parameter list."""
    depth = 0
    for i in range(len(header) - 1, -1, -1):
        if header[i] == ")":
            depth += 1
        elif header[i] == "(":
            depth -= 1
            if depth == 0:
                m = NAME.search(header[:i + 1])
                if m and m.group(1) not in ("if", "for", "while", "switch", "return"):
                    return re.sub(r"\s+", "", m.group(1))
    return header.split("(")[0].split()[-1] if header.split("(")[0].split() else "?"


def problems(root):
    found = []
    for path in sources(root, FOLDERS, SOURCE_SUFFIXES):
        if path in ALLOWED_LONG:
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if n > MAX_FILE_LINES:
            found.append(f"{path}: {n} lines (at most {MAX_FILE_LINES})")
        for line, name, lines in long_functions(text, MAX_FUNCTION_LINES):
            found.append(f"{path}:{line}: {name} is {lines} lines (at most {MAX_FUNCTION_LINES})")
    return found


def main(argv):
    return run_main(argv, "length_check.py", problems, "too long",
                    f"every function within {MAX_FUNCTION_LINES} lines, "
                    f"every file within {MAX_FILE_LINES}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
