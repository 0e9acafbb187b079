"""Runs dagrad's CPU benchmarks and the PyTorch anchor side by side and
prints the comparison the performance targets are judged on.

    /usr/bin/python3 tools/bench/compare.py [--build build] [--threads 1 2] [--rounds 3]

Both sides run under the same BLIS kernel set (BLIS_ARCH_TYPE, set to the
one dagrad selects unless given) and thread count, in alternating rounds;
each case's median over rounds is reported. Also printed: the fraction of
the sgemm roofline MHA forward+backward at (8, 256, 512, 8) reaches
(counted FLOPs / time / the sgemm rate of matmul_1024 in the same run), and
the training step's planned peak activation memory against the sum of its
intermediates.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
ANCHOR = os.path.normpath(os.path.join(ROOT, "..", "shared", "bench", "torch_anchor.py"))
BLIS_IDS = {"skx": 0, "knl": 1, "haswell": 3, "sandybridge": 4, "penryn": 5, "zen3": 6,
            "zen2": 7, "zen": 8, "generic": 25}
TARGETS = {  # case prefix -> dagrad / torch must be at most this
    "mha_fwdbwd": 0.5,
    "toy_train_step": 0.5,
}


def run_dagrad(build, threads, env):
    out = subprocess.run(
        [os.path.join(build, "tools", "dagrad_bench"), f"--threads={threads}",
         "--benchmark_format=json", "--benchmark_min_time=1"],
        env=env, check=True, capture_output=True, text=True).stdout
    results = {}
    for b in json.loads(out)["benchmarks"]:
        name = b["name"].split("/")[0]
        results[name] = {"ms": b["real_time"], **{k: b[k] for k in
                         ("flops", "peak_bytes", "intermediate_bytes") if k in b}}
    return results


def run_torch(threads, reps, env):
    out = subprocess.run(["/usr/bin/python3", ANCHOR, "--threads", str(threads), "--reps",
                          str(reps)], env=env, check=True, capture_output=True, text=True).stdout
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
    args = p.parse_args()
    env = dict(os.environ)
    if "BLIS_ARCH_TYPE" not in env:
        env["BLIS_ARCH_TYPE"], name = blis_arch(args.build)
    else:
        name = env["BLIS_ARCH_TYPE"]
    print(f"BLIS kernel set: {name} (BLIS_ARCH_TYPE={env['BLIS_ARCH_TYPE']}), "
          f"rounds: {args.rounds}, machine: {os.cpu_count()} cores")
    all_ok = True
    for threads in args.threads:
        env["OMP_NUM_THREADS"] = str(threads)
        ours, theirs = {}, {}
        for r in range(args.rounds):
            order = [("d", None), ("t", None)] if r % 2 == 0 else [("t", None), ("d", None)]
            for side, _ in order:
                if side == "d":
                    for k, v in run_dagrad(args.build, threads, env).items():
                        ours.setdefault(k, []).append(v)
                else:
                    for k, v in run_torch(threads, args.reps, env).items():
                        theirs.setdefault(k, []).append(v)
        print(f"\nthreads = {threads}")
        print(f"{'case':32} {'dagrad ms':>10} {'torch ms':>10} {'ratio':>7}  target")
        med = {k: statistics.median(x["ms"] for x in v) for k, v in ours.items()}
        for case in ours:
            t = statistics.median(theirs[case]) if case in theirs else float("nan")
            ratio = med[case] / t
            target = next((v for k, v in TARGETS.items() if case.startswith(k)), None)
            verdict = ""
            if target is not None:
                ok = ratio <= target
                all_ok &= ok
                verdict = f"<= {target}: {'met' if ok else 'MISSED'}"
            print(f"{case:32} {med[case]:10.2f} {t:10.2f} {ratio:7.3f}  {verdict}")
        sgemm = ours["matmul_1024"][0]["flops"] / (med["matmul_1024"] / 1e3) / 1e9
        key = "mha_fwdbwd_B8_T256_D512_H8"
        achieved = ours[key][0]["flops"] / (med[key] / 1e3) / 1e9
        frac = achieved / sgemm
        all_ok &= frac >= 0.6
        print(f"roofline: {key} {achieved:.1f} GFLOP/s of sgemm's {sgemm:.1f} = {frac:.1%} "
              f"(target >= 60%: {'met' if frac >= 0.6 else 'MISSED'})")
        step = ours["toy_train_step"][0]
        mem = step["peak_bytes"] / step["intermediate_bytes"]
        all_ok &= mem <= 0.5
        print(f"memory: training step peak {step['peak_bytes'] / 2**20:.1f} MiB of "
              f"{step['intermediate_bytes'] / 2**20:.1f} MiB intermediates = {mem:.1%} "
              f"(target <= 50%: {'met' if mem <= 0.5 else 'MISSED'})")
    print("\nall targets met" if all_ok else "\nsome targets missed")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
