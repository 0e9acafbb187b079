#!/usr/bin/env python3
"""Shows tools/lint/readme_excerpts.py failing on an excerpt that drifted.

  readme_excerpts_test.py path/to/readme_excerpts.py

A README whose excerpt of tools/a.cc matches it (a trailing comment and
a "..." line aside) passes; one with a line the file no longer has, and
one excerpting a file that does not exist, fail, naming the line.
"""

import sys

from lint_check_cases import expect_cases

SOURCE = "int Twice(int x) {\n  return 2 * x;\n}\nint Thrice(int x) { return 3 * x; }\n"


def readme(*lines):
    return "The core of [`a.cc`](tools/a.cc):\n\n```cpp\n" + "\n".join(lines) + "\n```\n"


CLEAN = {
    "tools/a.cc": SOURCE,
    "README.md": readme("int Twice(int x) {  // doubles", "  ...", "}"),
}
BAD = [
    ("README.md", readme("int Twice(int x) {", "  return x + x;", "}"),
     "README.md:5: 'return x + x;' is not in tools/a.cc"),
    ("README.md", "The core of [`b.cc`](tools/b.cc):\n\n```cpp\nint B();\n```\n",
     "an excerpt of tools/b.cc, which does not exist"),
]

if __name__ == "__main__":
    sys.exit(expect_cases(sys.argv[1], CLEAN, BAD))
