"""Writes PyTorch goldens for dagrad's tests as small JSON files.

A golden file holds named cases; each case has named input and output
tensors (dtype, shape, flat data) and optional attributes:

    {"cases": {"add_broadcast": {"inputs": {"a": {"dtype": "float32",
     "shape": [2, 3], "data": [...]}}, "outputs": {...}, "attrs": {...}}}}

Values are written with full precision (Python's float repr). Tests read
them with tests/support/golden.h and never need torch. Run generators with
Debian's interpreter: /usr/bin/python3 tools/goldens/<family>.py
"""
import json
import math
import os

import torch

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                        "tests", "data", "goldens")

_DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.int32: "int32",
           torch.int64: "int64", torch.bool: "bool", torch.bfloat16: "bfloat16",
           torch.float16: "float16"}


def tensor_json(t):
    t = t.detach().cpu().contiguous()
    dtype = _DTYPES[t.dtype]
    flat = t.reshape(-1).tolist()
    if "float" in dtype:  # 16-bit values are listed widened, exactly
        flat = [v if math.isfinite(v) else ("nan" if math.isnan(v) else
                                             ("inf" if v > 0 else "-inf")) for v in flat]
    elif dtype == "bool":
        flat = [int(v) for v in flat]
    return {"dtype": dtype, "shape": list(t.shape), "data": flat}


class GoldenFile:
    """Collects cases and writes tests/data/goldens/<name>.json."""

    def __init__(self, name, seed=0):
        self.name = name
        self.cases = {}
        torch.manual_seed(seed)

    def add(self, case, inputs, outputs, attrs=None):
        assert case not in self.cases, case
        self.cases[case] = {
            "inputs": {k: tensor_json(v) for k, v in inputs.items()},
            "outputs": {k: tensor_json(v) for k, v in outputs.items()},
            "attrs": attrs or {},
        }

    def write(self):
        os.makedirs(DATA_DIR, exist_ok=True)
        path = os.path.join(DATA_DIR, self.name + ".json")
        with open(path, "w") as f:
            json.dump({"generator": "tools/goldens/" + self.name + ".py",
                       "torch": torch.__version__, "cases": self.cases}, f,
                      separators=(",", ":"))
            f.write("\n")
        print(f"wrote {path}: {len(self.cases)} cases")
