#!/usr/bin/env python3
"""Shows tools/goldens/check_regenerated.py passing rounding and failing changes.

  check_regenerated_test.py path/to/check_regenerated.py

Commits a JSON golden and a safetensors golden in a temporary git repository,
changes them as a regeneration on another CPU would (the last bits of float
data) and as a changed generator would (values, attributes, integers, a new
file, another kind of file), and runs the check on each. Exits 0 when every
case behaves, 77 (skipped) when numpy is missing.
"""

import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("skipped: numpy is not installed for", sys.executable)
    sys.exit(77)

CHECK = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.dirname(CHECK))
import safetensors_io  # noqa: E402

GOLDEN = {"generator": "tools/goldens/x.py", "cases": {"linear": {
    "outputs": {"y": {"dtype": "float32", "shape": [3], "data": [0.5, -2.0, "nan"]},
                "ids": {"dtype": "int64", "shape": [2], "data": [1, 2]}},
    "attrs": {"eps": 1e-05}}}}


def git(root, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root,
                   check=True, capture_output=True)


def committed_repo():
    root = tempfile.mkdtemp()
    os.makedirs(os.path.join(root, "tests", "data"))
    with open(os.path.join(root, "tests", "data", "g.json"), "w") as f:
        json.dump(GOLDEN, f)
    safetensors_io.save(os.path.join(root, "tests", "data", "t.safetensors"),
                        {"w": np.array([1.0, 3.0], np.float32), "n": np.array([4], np.int64)},
                        {"model": "x"})
    with open(os.path.join(root, "tests", "data", "m.onnx"), "wb") as f:
        f.write(b"\x08\x07")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "goldens")
    return root


def edit_json(root, edit):
    golden = json.loads(json.dumps(GOLDEN))
    edit(golden["cases"]["linear"])
    with open(os.path.join(root, "tests", "data", "g.json"), "w") as f:
        json.dump(golden, f)


def write_tensors(root, w, n):
    safetensors_io.save(os.path.join(root, "tests", "data", "t.safetensors"),
                        {"w": np.array(w, np.float32), "n": np.array(n, np.int64)},
                        {"model": "x"})


def set_y(values):
    return lambda case: case["outputs"]["y"].update(data=values)


# (name, change, passes, what the report must say)
CASES = [
    ("unchanged", lambda root: None, True, "every golden regenerated"),
    ("json rounding", lambda root: edit_json(root, set_y([0.50000006, -2.0000002, "nan"])),
     True, "in rounding only"),
    ("json value", lambda root: edit_json(root, set_y([0.51, -2.0, "nan"])),
     False, "tests/data/g.json: /cases/linear/outputs/y: max difference"),
    ("json nan", lambda root: edit_json(root, set_y([0.5, -2.0, 1.0])),
     False, "non-finite values differ"),
    ("json int", lambda root: edit_json(root, lambda c: c["outputs"]["ids"].update(data=[1, 3])),
     False, "/cases/linear/outputs/ids: values differ"),
    ("json attr", lambda root: edit_json(root, lambda c: c["attrs"].update(eps=1.0000001e-05)),
     False, "/cases/linear/attrs/eps"),
    ("safetensors rounding", lambda root: write_tensors(root, [1.0000001, 3.0000002], [4]),
     True, "in rounding only"),
    ("safetensors int", lambda root: write_tensors(root, [1.0, 3.0], [5]),
     False, "tests/data/t.safetensors: n: values differ"),
    ("onnx bytes", lambda root: open(os.path.join(root, "tests", "data", "m.onnx"), "wb").write(
        b"\x08\x08"), False, "m.onnx: differs byte for byte"),
    ("new file", lambda root: open(os.path.join(root, "tests", "data", "new.json"), "w").write(
        "{}"), False, "tests/data/new.json: git status '??'"),
]


def run_case(name, change, passes, message):
    root = committed_repo()
    change(root)
    out = subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)
    report = out.stdout + out.stderr
    ok = (out.returncode == 0) == passes and message in report
    if ok and passes:  # files that pass are restored to the committed bytes
        status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True,
                                text=True).stdout
        ok = status == ""
    if not ok:
        print(f"FAIL {name}: exit {out.returncode}, expected "
              f"{'pass' if passes else 'fail'} with '{message}':\n{report}")
    return ok


def main():
    results = [run_case(*case) for case in CASES]
    print(f"{sum(results)} of {len(results)} cases behave")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
