#!/usr/bin/env python3
"""Shows tools/lint/statusor_check.py failing on unchecked StatusOr uses.

  statusor_check_test.py path/to/statusor_check.py

Builds a small tree in a temporary folder: checked uses pass; each
unchecked use (`*x`, `x->`, `x.value()`, a dereferenced call) fails, naming
the file, the line and the text. Exits 0 when every case behaves.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lint_check_cases import run_check  # noqa: E402  writes a tree, runs a check on it

HEADER = (
    "engine/tensor.h",
    "class Tensor {\n public:\n"
    "  static absl::StatusOr<Tensor> Zeros(DType d, const Shape& s);\n"
    "  template <typename T>\n"
    "  static absl::StatusOr<Tensor> FromVector(const Shape& s, const std::vector<T>& v);\n"
    "};\n"
    "absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank);\n",
)

# Functions whose every StatusOr use is checked: the tree passes with them.
CLEAN = """
absl::Status A() {
  auto t = Tensor::Zeros(DType::kFloat32, {2});
  if (!t.ok()) return t.status();
  float* p = t->data<float>();   // checked above
  // *Tensor::Zeros(...) in a comment is not code
  const char* s = "*Tensor::Zeros(";
  DAGRAD_ASSIGN_OR_RETURN(Tensor u, Tensor::Zeros(DType::kFloat32, {2}));
  return absl::OkStatus();
}
absl::Status B(int64_t a, int64_t x) {
  absl::StatusOr<int> axis = NormalizeAxis(a, 2);
  DAGRAD_RETURN_IF_ERROR(axis.status());
  const int64_t product = a * x;   // a multiplication, not a dereference
  return Use(*axis, product);
}
int C() {
  auto axis = NormalizeAxis(0, 2);
  return axis.ok() ? *axis : -1;
}
"""

# (a function, what the report must say about it) for each unchecked use.
UNCHECKED = [
    ("void D() { auto t = Tensor::Zeros(DType::kFloat32, {2});\n  t->data<float>()[0] = 1; }\n",
     ":2: 't->' uses a StatusOr that nothing checked"),
    ("int E() { absl::StatusOr<int> axis = NormalizeAxis(0, 1);\n  return *axis; }\n",
     ":2: 'return *axis' uses a StatusOr that nothing checked"),
    ("int F() { auto axis = NormalizeAxis(0, 1);\n  return std::move(axis).value(); }\n",
     ":2: 'std::move(axis).value()' uses a StatusOr that nothing checked"),
    ("Batch G() {\n  return Batch{*Tensor::Zeros(DType::kInt64, {b, t})}; }\n",
     ":2: '{*Tensor::Zeros(' uses a StatusOr that nothing checked"),
    ("Tensor H() {\n  return Tensor::FromVector<int64_t>({1}, {3}).value(); }\n",
     ":2: 'Tensor::FromVector<int64_t>({1}, {3}).value()' uses a StatusOr that nothing checked"),
    ("int I() { auto a = NormalizeAxis(0, 1);\n  if (!a.ok()) return 0;\n  return *a; }\n"
     "int J() { auto a = NormalizeAxis(0, 1);\n  return *a; }\n",
     ":5: 'return *a' uses a StatusOr that nothing checked"),
]


def main(argv):
    check = argv[1]
    failures = []
    code, out = run_check(check, {HEADER[0]: HEADER[1], "models/clean.cc": CLEAN})
    if code != 0:
        failures.append(f"the clean tree failed:\n{out}")
    for i, (text, expected) in enumerate(UNCHECKED):
        path = f"tools/case{i}.cc"
        code, out = run_check(check, {HEADER[0]: HEADER[1], "models/clean.cc": CLEAN, path: text})
        if code != 1 or path + expected not in out or out.count(": '") != 1:
            failures.append(f"case {i}: expected exit 1 and '{path}{expected}', got {code}:\n{out}")
    for f in failures:
        print(f)
    print(f"{len(UNCHECKED) + 1 - len(failures)} of {len(UNCHECKED) + 1} cases behave")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
