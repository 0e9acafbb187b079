#!/usr/bin/env python3
"""Shows tools/lint/length_check.py failing on a long function and file.

  length_check_test.py path/to/length_check.py

Builds small trees in a temporary folder and runs the check on each: a tree
of short functions passes, also when comments, strings and lambdas hold
braces; a 61-line function, a 61-line method in a class and a 501-line
file fail, naming the file, line and function. Exits 0 when every case
behaves.
"""

import sys

from lint_check_cases import expect_cases


def function(name, lines):
    """A function of exactly `lines` lines, from its declaration to its '}'."""
    body = [f"  x += {i};" for i in range(lines - 3)]
    return "\n".join([f"int {name}(int x) {{", *body, "  return x;", "}"]) + "\n"


SHORT = (
    '// A comment with a brace {\n'
    'namespace dagrad {\n'
    'namespace {\n'
    'const char* kText = "}}}{";\n'
    'const int kTable[] = {1, 2, 3};\n'
    '}  // namespace\n'
    'int Lambdas(int x) {\n'
    '  auto f = [](int y) { return y + 1; };\n'
    '  return f(x);\n'
    '}\n'
    + function("JustRight", 60) +
    '}  // namespace dagrad\n'
)

CLEAN = {
    "engine/graph.cc": SHORT,
    "ops/unary.cc": function("Neg", 10),
    "tests/long_test.cc": function("ManyChecks", 200),  # tests are not library code
}

# (file, its text, what the report must say).
TOO_LONG = [
    ("ops/softmax.cc", "namespace dagrad {\n" + function("Softmax", 61) + "}\n",
     "ops/softmax.cc:2: Softmax is 61 lines (at most 60)"),
    ("models/layer.h",
     "#include <x>\nclass Layer {\n public:\n  " + function("Forward", 61).replace("\n", "\n  ")
     + "};\n",
     "models/layer.h:4: Forward is 61 lines (at most 60)"),
    ("tools/cli/main.cc", "".join(function(f"F{i}", 5) for i in range(100)) + "int x;\n",
     "tools/cli/main.cc: 501 lines (at most 500)"),
]


def main(argv):
    return expect_cases(argv[1], CLEAN, TOO_LONG)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
