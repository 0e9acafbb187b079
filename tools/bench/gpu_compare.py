"""Prints the GPU comparison table: dagrad (tools/bench/cuda_bench) against
PyTorch (tools/bench/torch_cuda_anchor.py), eager and at its best
(torch.compile + fused Adam, the anchor's CASE_compiled lines), from the
JSON lines each printed, with the targets of the CUDA issue.

    python3 tools/bench/gpu_compare.py DAGRAD_LOG TORCH_LOG

Lines that are not JSON objects with "case" and "ms" are ignored, so the
programs' whole output can be passed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_errors import run_main  # noqa: E402

# case: (what, target kind, target value). "ms": at most that many
# milliseconds; "eager" / "compiled": dagrad / PyTorch eager (or compiled)
# at most that.
TARGETS = {
    "toy_step": ("toy training step, float32", "ms", 1.0),
    "large_step_f32": ("large training step, float32", "compiled", 0.9),
    "large_step_tf32": ("large training step, TF32", "compiled", 0.9),
    "mha_fwdbwd_f32": ("MHA forward+backward, float32", "eager", 0.9),
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


def verdict(ms, kind, value, ratios):
    if ms is None:
        return "not run"
    if kind == "ms":
        return "met" if ms <= value else "missed"
    ratio = ratios[kind]
    if ratio is None:
        return f"no PyTorch {kind} time"
    return "met" if ratio <= value else "missed"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ours, theirs = read(sys.argv[1]), read(sys.argv[2])
    device = next((r.get("device") for r in list(ours.values()) + list(theirs.values())
                   if r.get("device")), "unknown device")
    torch_version = next((r["torch"] for r in theirs.values() if "torch" in r), "?")
    print(f"dagrad vs PyTorch {torch_version} on {device} (median ms per step, CUDA events);"
          " compiled = torch.compile + fused Adam")
    print(f"{'case':<32} {'dagrad':>9} {'eager':>9} {'compiled':>9} {'/eager':>7} {'/compiled':>9}"
          f"  {'target':<16} result")
    fmt = lambda v, spec: format(v, spec) if v is not None else "-"
    for case, (what, kind, value) in TARGETS.items():
        ms = ours.get(case, {}).get("ms")
        eager = theirs.get(case, {}).get("ms")
        compiled = theirs.get(case + "_compiled", {}).get("ms")
        ratios = {k: ms / v if ms is not None and v else None
                  for k, v in (("eager", eager), ("compiled", compiled))}
        target = f"<= {value} ms" if kind == "ms" else f"<= {value}x {kind}"
        print(f"{what:<32} {fmt(ms, '9.3f'):>9} {fmt(eager, '9.3f'):>9} {fmt(compiled, '9.3f'):>9}"
              f" {fmt(ratios['eager'], '7.3f'):>7} {fmt(ratios['compiled'], '9.3f'):>9}"
              f"  {target:<16} {verdict(ms, kind, value, ratios)}")


if __name__ == "__main__":
    sys.exit(run_main(main))
