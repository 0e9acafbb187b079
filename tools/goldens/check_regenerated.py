"""Checks regenerated goldens under tests/data against the committed ones.

    /usr/bin/python3 tools/goldens/check_regenerated.py [--root REPO]

Run by regenerate.sh after every generator has rewritten its files. PyTorch's
floating-point results depend on the CPU it runs on (BLIS picks its kernels
by CPU, ATen its vector width), so a golden regenerated on another machine
can differ from the committed one in its last bits. A file passes when it is
byte-identical, or when it is the same golden up to that rounding:
  - JSON goldens (golden_io.py): the same structure, strings, integers and
    attributes; each tensor's dtype and shape equal; its float data within
    TOLERANCE[dtype] times the tensor's largest magnitude, with non-finite
    values ("nan", "inf", "-inf") equal;
  - safetensors files: the same metadata, names, dtypes and shapes; float
    tensors within the same tolerance, integer and bool tensors equal;
  - any other file, and a file the generators made that is not committed:
    byte-identical only.
A real change to a generator moves values by far more than rounding. Files
that pass by tolerance are restored to their committed bytes, so the tests
that follow read what is committed. Exit status 0 when every file passes,
1 naming each file and the first difference otherwise.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_io  # noqa: E402

# Largest difference, relative to the tensor's largest magnitude. Measured
# between the committed goldens and ones regenerated on a Zen 5 (AMD family
# 26; float32): up to 3e-6.
TOLERANCE = {"float16": 1e-2, "bfloat16": 1e-1, "float32": 1e-4, "float64": 1e-10}


def git(root, *args, binary=False):
    out = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return out.stdout if binary else out.stdout.decode()


def close(dtype, committed, regenerated):
    """None when the arrays agree as the dtype allows, else why not."""
    a, b = np.asarray(committed), np.asarray(regenerated)
    if a.shape != b.shape:
        return f"shape {a.shape} became {b.shape}"
    if dtype not in TOLERANCE:
        return None if np.array_equal(a, b) else "values differ"
    a, b = a.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(a)
    if not np.array_equal(finite, np.isfinite(b)) or not np.array_equal(a[~finite], b[~finite],
                                                                        equal_nan=True):
        return "non-finite values differ"
    if not finite.any():
        return None
    scale = np.abs(a[finite]).max()
    worst = np.abs(a[finite] - b[finite]).max()
    if worst <= TOLERANCE[dtype] * scale:
        return None
    return f"max difference {worst:.3g} over a largest magnitude {scale:.3g}"


def as_floats(data):
    names = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
    return [names.get(v, v) if isinstance(v, str) else v for v in data]


def compare_json(a, b, path=""):
    """None when two golden JSON values agree, else the first difference."""
    if isinstance(a, dict) and {"dtype", "shape", "data"} <= a.keys() and isinstance(b, dict):
        if a.keys() != b.keys() or a["dtype"] != b["dtype"] or a["shape"] != b["shape"]:
            return f"{path}: dtype or shape"
        why = close(a["dtype"], as_floats(a["data"]), as_floats(b["data"]))
        return f"{path}: {why}" if why else None
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(set(a) ^ set(b))}"
        for key in a:
            why = compare_json(a[key], b[key], f"{path}/{key}")
            if why:
                return why
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            why = compare_json(x, y, f"{path}[{i}]")
            if why:
                return why
        return None
    return None if a == b else f"{path}: {a!r} became {b!r}"


def compare_safetensors(committed_bytes, path):
    with tempfile.NamedTemporaryFile(suffix=".safetensors") as f:
        f.write(committed_bytes)
        f.flush()
        a_tensors, a_meta = safetensors_io.load(f.name)
    b_tensors, b_meta = safetensors_io.load(path)
    if a_meta != b_meta:
        return "metadata"
    if list(a_tensors) != list(b_tensors):
        return "tensor names"
    for name, a in a_tensors.items():
        b = b_tensors[name]
        if a.dtype != b.dtype:
            return f"{name}: dtype {a.dtype} became {b.dtype}"
        why = close(str(a.dtype), a, b)
        if why:
            return f"{name}: {why}"
    return None


def compare(root, path):
    """None when the regenerated file at `path` agrees with the committed one."""
    committed = git(root, "show", f"HEAD:{path}", binary=True)
    full = os.path.join(root, path)
    if path.endswith(".json"):
        with open(full) as f:
            return compare_json(json.loads(committed), json.load(f))
    if path.endswith(".safetensors"):
        return compare_safetensors(committed, full)
    return "differs byte for byte (only JSON and safetensors goldens may differ in rounding)"


def check(root):
    """0 when every file under root's tests/data passes, else 1 (see above)."""
    status = git(root, "status", "--porcelain", "--untracked-files=all", "--", "tests/data")
    failed, rounding = [], []
    for line in status.splitlines():
        code, path = line[:2], line[3:]
        why = compare(root, path) if code.strip() == "M" else f"git status '{code.strip()}'"
        (failed if why else rounding).append((path, why))
    for path, why in failed:
        print(f"golden differs from the committed one: {path}: {why}", file=sys.stderr)
    if rounding:
        git(root, "checkout", "--", *[path for path, _ in rounding])
        print(f"{len(rounding)} golden files differ from the committed ones in rounding only "
              "(restored): " + " ".join(path for path, _ in rounding))
    if not failed:
        print("every golden regenerated: byte-identical, or the same up to this CPU's rounding")
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.abspath(os.path.join(HERE, "..", "..")),
                        help="the repository whose tests/data to check")
    sys.exit(check(parser.parse_args().root))
