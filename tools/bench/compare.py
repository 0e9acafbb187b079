"""Runs dagrad's CPU benchmarks and the PyTorch anchor side by side and
prints the comparison the performance targets are judged on.

    /usr/bin/python3 tools/bench/compare.py [--build build] [--threads 1 2] [--rounds 3]
                                            [--isa avx512|avx2|baseline] [--cpu_time]

Both sides run under the same BLIS kernel set (BLIS_ARCH_TYPE, set to the
one dagrad selects unless given) and thread count, in alternating rounds;
each case's median over rounds is reported. Also printed: the fraction of
the sgemm roofline MHA forward+backward at (8, 256, 512, 8) reaches
(counted FLOPs / time / the sgemm rate of matmul_1024 in the same run), the
rate of batched small products (kernel_bench's matmul_batched) against the
same sgemm rate, and the training step's planned peak activation memory
against the sum of its intermediates. Beside each ratio, two floors: the
ratio dagrad would reach if the case's matrix products (counted FLOPs) ran
at the same run's sgemm rate at 1024^3 and nothing else took any time (a
target below it cannot be met with BLIS's products), and the ratio at the
cores' peak multiply-add rate at the run's level (kernel_bench's
fma_peak/<level> on as many threads; a target below it cannot be met by any
kernel on this machine).

--cpu_time compares the CPU time of one thread (Google Benchmark's
cpu_time, Python's process_time) instead of the wall clock: on cores shared
with other work, the wall clock counts the time the benchmark waited for a
core, and the two sides wait differently.

Cases named composed_<case> (dagrad_bench's) are <case> with the composed
attention subgraph instead of the fused attention op: printed after the
table as fused / composed, each side dagrad's, at the same level.

--isa runs both sides at one ISA level, so that a machine with AVX-512
measures all three: dagrad with DAGRAD_CPU_ISA, PyTorch with
ATEN_CPU_CAPABILITY, and BLIS (shared by both) with the level's kernel set
as a numeric BLIS_ARCH_TYPE, the only form BLIS 0.9 reads: skx for avx512,
haswell for avx2, and penryn for baseline, the set BLIS itself picks on an
x86-64 CPU without AVX (every such CPU since 2006 has penryn's SSSE3); both
sides use it, so it does not favour either. Targets differ by level
(TARGETS_BY_ISA).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from script_errors import run_main  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
ANCHOR = os.path.join(HERE, "torch_anchor.py")
BLIS_IDS = {"skx": 0, "knl": 1, "haswell": 3, "sandybridge": 4, "penryn": 5, "zen3": 6,
            "zen2": 7, "zen": 8, "generic": 25}
# case prefix -> dagrad / torch must be at most this, per --isa ("" for none).
TARGETS_BY_ISA = {
    "": {"mha_fwdbwd": 0.5, "toy_train_step": 0.5},
    "avx512": {"mha_fwdbwd": 0.5, "toy_train_step": 0.5},
    "avx2": {"mha_fwdbwd": 0.6, "toy_train_step": 0.5},
    "baseline": {"": 1.0},  # no case slower than PyTorch's default capability
}
ISA_ENV = {  # --isa -> (DAGRAD_CPU_ISA, ATEN_CPU_CAPABILITY, BLIS kernel set)
    "avx512": ("avx512", "avx512", "skx"),
    "avx2": ("avx2", "avx2", "haswell"),
    "baseline": ("baseline", "default", "penryn"),
}


COMPOSED = "composed_"


def print_fused_against_composed(med):
    """Prints each fused case's time against its composed_ twin's."""
    twins = [c for c in med if c.startswith(COMPOSED) and c[len(COMPOSED):] in med]
    if not twins:
        return
    print(f"{'fused against composed':32} {'fused ms':>10} {'composed':>10} {'ratio':>7}")
    for twin in twins:
        case = twin[len(COMPOSED):]
        print(f"{case:32} {med[case]:10.2f} {med[twin]:10.2f} {med[case] / med[twin]:7.3f}")


def run_dagrad(build, threads, env, cpu_time=False):
    out = subprocess.run(
        [os.path.join(build, "tools", "dagrad_bench"), f"--threads={threads}",
         "--benchmark_format=json", "--benchmark_min_time=1"],
        env=env, check=True, capture_output=True, text=True).stdout
    results = {}
    for b in json.loads(out)["benchmarks"]:
        name = b["name"].split("/")[0]
        results[name] = {"ms": b["cpu_time" if cpu_time else "real_time"], **{k: b[k] for k in
                         ("flops", "peak_bytes", "intermediate_bytes") if k in b}}
    return results


def run_batched(build, threads, env, level):
    """kernel_bench's matmul cases and the peak at `level`: GFLOP/s by name."""
    out = subprocess.run(
        [os.path.join(build, "tools", "kernel_bench"), f"--threads={threads}",
         f"--benchmark_filter=^(matmul_|fma_peak/{level}/)", "--benchmark_format=json",
         "--benchmark_min_time=1"],
        env=env, check=True, capture_output=True, text=True).stdout
    return {b["name"].split("/real_time")[0]: b["flops"] / 1e9
            for b in json.loads(out)["benchmarks"]}


def run_torch(threads, reps, env, cpu_time=False):
    out = subprocess.run(["/usr/bin/python3", ANCHOR, "--threads", str(threads), "--reps",
                          str(reps)] + (["--cpu_time"] if cpu_time else []),
                         env=env, check=True, capture_output=True, text=True).stdout
    return {j["case"]: j["ms"] for j in map(json.loads, out.strip().splitlines())}


def blis_arch(build):
    info = subprocess.run([os.path.join(build, "tools", "dagrad"), "info"], check=True,
                          capture_output=True, text=True).stdout
    name = re.search(r"kernel set '(\w+)'", info).group(1)
    return str(BLIS_IDS[name]), name


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--isa", choices=sorted(ISA_ENV), default="",
                   help="run dagrad, PyTorch and BLIS at this ISA level")
    p.add_argument("--cpu_time", action="store_true",
                   help="compare CPU time, not wall time (one thread only): steadier when "
                        "other processes share the cores")
    args = p.parse_args()
    if args.cpu_time and args.threads != [1]:
        p.error("--cpu_time compares one thread only (--threads 1): with more, CPU time "
                "adds up the threads")
    env = dict(os.environ)
    if args.isa:
        ours_isa, aten, blis = ISA_ENV[args.isa]
        env.update(DAGRAD_CPU_ISA=ours_isa, ATEN_CPU_CAPABILITY=aten,
                   BLIS_ARCH_TYPE=str(BLIS_IDS[blis]))
    if "BLIS_ARCH_TYPE" not in env:
        env["BLIS_ARCH_TYPE"], name = blis_arch(args.build)
    else:  # the set's name, when the number is one of BLIS_IDS
        name = {str(v): k for k, v in BLIS_IDS.items()}.get(env["BLIS_ARCH_TYPE"],
                                                             env["BLIS_ARCH_TYPE"])
    info = subprocess.run([os.path.join(args.build, "tools", "dagrad"), "info"], env=env,
                          check=True, capture_output=True, text=True).stdout
    kernels = re.search(r"^kernels: (.*)$", info, re.M).group(1)
    level = kernels.split()[0]
    print(f"BLIS kernel set: {name} (BLIS_ARCH_TYPE={env['BLIS_ARCH_TYPE']}), dagrad kernels: "
          f"{kernels}, ATEN_CPU_CAPABILITY={env.get('ATEN_CPU_CAPABILITY', '(unset)')}, "
          f"rounds: {args.rounds}, machine: {os.cpu_count()} cores, clock: "
          f"{'CPU time' if args.cpu_time else 'wall'}")
    targets = TARGETS_BY_ISA[args.isa]
    all_ok = True
    for threads in args.threads:
        env["OMP_NUM_THREADS"] = str(threads)
        ours, theirs, batched = {}, {}, {}
        for r in range(args.rounds):
            order = [("d", None), ("t", None)] if r % 2 == 0 else [("t", None), ("d", None)]
            for side, _ in order:
                if side == "d":
                    for k, v in run_dagrad(args.build, threads, env, args.cpu_time).items():
                        ours.setdefault(k, []).append(v)
                    for k, v in run_batched(args.build, threads, env, level).items():
                        batched.setdefault(k, []).append(v)
                else:
                    for k, v in run_torch(threads, args.reps, env, args.cpu_time).items():
                        theirs.setdefault(k, []).append(v)
        print(f"\nthreads = {threads}")
        print(f"{'case':32} {'dagrad ms':>10} {'torch ms':>10} {'ratio':>7} {'floor':>6} "
              f"{'peak':>6}  target")
        med = {k: statistics.median(x["ms"] for x in v) for k, v in ours.items()}
        sgemm = ours["matmul_1024"][0]["flops"] / (med["matmul_1024"] / 1e3) / 1e9
        rates = {k: statistics.median(v) for k, v in batched.items()}
        peak = rates[f"fma_peak/{level}"]
        for case in (c for c in ours if not c.startswith(COMPOSED)):
            t = statistics.median(theirs[case]) if case in theirs else float("nan")
            ratio = med[case] / t
            # floor: the ratio if the case's products ran at sgemm's 1024^3
            # rate of this run and everything else took no time; peak: the
            # same at the cores' peak multiply-add rate.
            flops = ours[case][0].get("flops")
            floor = f"{flops / (sgemm * 1e9) * 1e3 / t:6.3f}" if flops else " " * 6
            at_peak = f"{flops / (peak * 1e9) * 1e3 / t:6.3f}" if flops else " " * 6
            # Cases PyTorch's anchor lacks (gpt_train_step) are printed, not judged.
            target = next((v for k, v in targets.items() if case.startswith(k)), None)
            if case not in theirs:
                target = None
            verdict = ""
            if target is not None:
                ok = ratio <= target
                all_ok &= ok
                verdict = f"<= {target}: {'met' if ok else 'MISSED'}"
            print(f"{case:32} {med[case]:10.2f} {t:10.2f} {ratio:7.3f} {floor} {at_peak}  "
                  f"{verdict}")
        print_fused_against_composed(med)
        key = "mha_fwdbwd_B8_T256_D512_H8"
        achieved = ours[key][0]["flops"] / (med[key] / 1e3) / 1e9
        frac = achieved / sgemm
        all_ok &= frac >= 0.6
        print(f"roofline: {key} {achieved:.1f} GFLOP/s of sgemm's {sgemm:.1f} = {frac:.1%} "
              f"(target >= 60%: {'met' if frac >= 0.6 else 'MISSED'})")
        print(f"peak: {peak:.1f} GFLOP/s ({threads} x fma_peak/{level}); sgemm at 1024^3 "
              f"{sgemm / peak:.1%} of it")
        for case in sorted(k for k in rates if k.startswith("matmul_batched")):
            frac = rates[case] / rates["matmul_1024"]
            ok = args.isa != "avx2" or frac >= 0.6
            all_ok &= ok
            print(f"small products: {case} (64 products) {rates[case]:.1f} GFLOP/s of the "
                  f"matmul op's {rates['matmul_1024']:.1f} at 1024^3 = {frac:.1%}"
                  + (f" (target >= 60%: {'met' if ok else 'MISSED'})" if args.isa == "avx2"
                     else ""))
        step = ours["toy_train_step"][0]
        mem = step["peak_bytes"] / step["intermediate_bytes"]
        all_ok &= mem <= 0.5
        print(f"memory: training step peak {step['peak_bytes'] / 2**20:.1f} MiB of "
              f"{step['intermediate_bytes'] / 2**20:.1f} MiB intermediates = {mem:.1%} "
              f"(target <= 50%: {'met' if mem <= 0.5 else 'MISSED'})")
    print("\nall targets met" if all_ok else "\nsome targets missed")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
