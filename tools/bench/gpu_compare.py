"""Prints the GPU comparison table: dagrad (tools/bench/cuda_bench) against
PyTorch (tools/bench/torch_cuda_anchor.py), from the JSON lines each printed,
with the targets of the CUDA issue.

    python3 tools/bench/gpu_compare.py DAGRAD_LOG TORCH_LOG

Lines that are not JSON objects with "case" and "ms" are ignored, so the
programs' whole output can be passed.
"""
import json
import sys

# case: (what, target kind, target value). "ms": at most that many
# milliseconds; "ratio": dagrad / PyTorch at most that.
TARGETS = {
    "toy_step": ("toy training step, float32", "ms", 1.0),
    "large_step_f32": ("large training step, float32", "ratio", 0.8),
    "large_step_tf32": ("large training step, TF32", "ratio", 0.8),
    "mha_fwdbwd_f32": ("MHA forward+backward, float32", "ratio", 1.0),
}


def read(path):
    cases = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "case" in row and "ms" in row:
                cases[row["case"]] = row
    return cases


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ours, theirs = read(sys.argv[1]), read(sys.argv[2])
    device = next((r.get("device") for r in list(ours.values()) + list(theirs.values())
                   if r.get("device")), "unknown device")
    torch_version = next((r["torch"] for r in theirs.values() if "torch" in r), "?")
    print(f"dagrad vs PyTorch {torch_version} eager on {device} (median ms per step, CUDA events)")
    print(f"{'case':<32} {'dagrad':>9} {'PyTorch':>9} {'ratio':>7}  {'target':<14} result")
    for case, (what, kind, value) in TARGETS.items():
        a = ours.get(case, {}).get("ms")
        b = theirs.get(case, {}).get("ms")
        ratio = a / b if a is not None and b else None
        target = f"<= {value} ms" if kind == "ms" else f"<= {value}x"
        if a is None:
            result = "not run"
        elif kind == "ms":
            result = "met" if a <= value else "missed"
        elif ratio is None:
            result = "no PyTorch time"
        else:
            result = "met" if ratio <= value else "missed"
        fmt = lambda v, spec: format(v, spec) if v is not None else "-"
        print(f"{what:<32} {fmt(a, '9.3f'):>9} {fmt(b, '9.3f'):>9} {fmt(ratio, '7.3f'):>7}  "
              f"{target:<14} {result}")


if __name__ == "__main__":
    main()
