#!/usr/bin/env python3
"""Shows tools/lint/header_examples.py failing on an example no test holds.

  header_examples_lint_test.py path/to/header_examples.py

Builds a small tree in a temporary folder, with a header whose doc comment
has an example, a formula and a list in prose, and runs the check: it must
fail naming the header, the line and the example while no test copies it,
fail again when the copy differs in one line, and pass once a test holds
it line for line (indented as the test likes), or once an op's case
(tests/*/*_cases.cc) does. Exits 0 when it does.
"""

import os
import subprocess
import sys
import tempfile

HEADER = """// ops/gather.h
//
//   out[i] = params[indices[i]]
//
//   - a list in prose;
//   - not code.
//
//   Value idx = g.Input("idx", DType::kInt64, {3});
//   Value y = Gather(x, idx, 0);   // (3, 4)
"""
COPY = """HEADER_EXAMPLE(Gather) {
    Value idx = g.Input("idx", DType::kInt64, {3});
    Value y = Gather(x, idx, 0);   // (3, 4)
}
"""


def run_check(check, root):
    result = subprocess.run([sys.executable, check, root], capture_output=True, text=True)
    return result.returncode, result.stdout


def main(argv):
    check = argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "ops"))
        os.makedirs(os.path.join(root, "tests/autodiff"))
        with open(os.path.join(root, "ops/gather.h"), "w") as f:
            f.write(HEADER)
        test = os.path.join(root, "tests/autodiff/header_examples_ops_test.cc")
        for text, want_rc in [("", 1), (COPY.replace("(3, 4)", "(3, 5)"), 1), (COPY, 0)]:
            with open(test, "w") as f:
                f.write(text)
            rc, out = run_check(check, root)
            if rc != want_rc:
                failures.append(f"exit {rc}, want {want_rc}, with test file:\n{text}\n{out}")
            if want_rc == 1 and ("ops/gather.h:8:" not in out or "Gather(x, idx, 0)" not in out
                                 or "out[i]" in out or "a list in prose" in out):
                failures.append(f"report does not name just the example:\n{out}")
        # An op's case (tests/*/*_cases.cc) may hold its example instead.
        with open(test, "w") as f:
            f.write("")
        with open(os.path.join(root, "tests/autodiff/gather_cases.cc"), "w") as f:
            f.write(COPY)
        rc, out = run_check(check, root)
        if rc != 0:
            failures.append(f"exit {rc}, want 0, with the example in tests/autodiff/gather_cases.cc:\n{out}")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
