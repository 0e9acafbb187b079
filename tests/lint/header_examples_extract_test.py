#!/usr/bin/env python3
"""Shows tools/header_examples/extract.py failing on a broken example.

  header_examples_extract_test.py path/to/extract.py CXX

Builds a small tree in a temporary folder: a header whose doc comment has
an example, a formula and a list in prose, and a setup file whose stand-ins
for absl::Status and gtest keep the generated source self-contained. Then:
- the extracted source compiles (CXX -fsyntax-only) with one test, for the
  example alone;
- an example that calls what the header does not declare fails to compile,
  the compiler naming the header's line (the #line directives);
- an example naming an unknown setup, or whose braces never close, fails the
  extraction itself, naming the header and line.
Exits 0 when all of that holds.
"""

import os
import subprocess
import sys
import tempfile

HEADER = """// ops/twice.h
int Twice(int x);
//
//   out[i] = 2 * x[i]
//
//   - a list in prose;
//   - not code.
//
//   int y = Twice(x);   // 2 * x
"""
SETUPS = """namespace absl {
struct Status { bool ok() const { return true; } };
inline Status OkStatus() { return {}; }
}  // namespace absl
#define TEST(suite, name) void suite##_##name()
template <typename Example> void RunHeaderExample() { Example().Run(); }
namespace dagrad::examples {
struct Default {
  int x = 3;
  absl::Status Finish() { return absl::OkStatus(); }
};
}  // namespace dagrad::examples
"""


def extract(tool, root, header_text):
    with open(os.path.join(root, "ops/twice.h"), "w") as f:
        f.write(header_text)
    out = os.path.join(root, "examples.cc")
    if os.path.exists(out):
        os.remove(out)
    result = subprocess.run([sys.executable, tool, root, "autodiff", out],
                            capture_output=True, text=True)
    return result.returncode, result.stdout, out


def compile_source(cxx, root, source):
    result = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-I", root, source],
                            capture_output=True, text=True)
    return result.returncode, result.stderr


def main(argv):
    tool, cxx = argv[1], argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "ops"))
        os.makedirs(os.path.join(root, "tests/autodiff/support"))
        with open(os.path.join(root, "tests/autodiff/support/header_example_setups.h"), "w") as f:
            f.write(SETUPS)
        rc, out, source = extract(tool, root, HEADER)
        text = open(source).read() if rc == 0 else ""
        if rc != 0 or text.count("TEST(HeaderExample") != 1 or "out[i]" in text:
            failures.append(f"the example alone should be extracted (exit {rc}):\n{out}{text}")
        elif compile_source(cxx, root, source)[0] != 0:
            failures.append(f"the example should compile:\n{compile_source(cxx, root, source)[1]}")
        rc, out, source = extract(tool, root, HEADER.replace("Twice(x)", "Thrice(x)"))
        crc, errors = compile_source(cxx, root, source) if rc == 0 else (0, out)
        if crc == 0 or "ops/twice.h:9" not in errors:
            failures.append(f"a broken example should fail to compile at ops/twice.h:9:\n{errors}")
        for broken, want in [("//   int y", "//   // setup: Nowhere\n//   int y"),
                             ("//   int y = Twice(x);   // 2 * x", "//   if (x) {\n//     x = 1;")]:
            rc, out, _ = extract(tool, root, HEADER.replace(broken, want))
            if rc != 1 or "ops/twice.h:9:" not in out:
                failures.append(f"exit {rc}, want 1 naming ops/twice.h:9, for:\n{want}\n{out}")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
