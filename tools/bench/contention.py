"""Times dagrad's and PyTorch's toy and GPT training steps at --threads threads
on a quiet machine and beside competing processes, and prints each side's
median, mean and p90 milliseconds per step (issue 38).

    /usr/bin/python3 tools/bench/contention.py [--build build] [--steps 40] [--threads 2]
                                               [--max_seconds 60] [--policies spin auto share]
                                               [--rounds 1] [--replicas 2]

Conditions, each started and stopped here: quiet (no competitor), one busy
loop (a process spinning on one core), one busy loop per core placed by the
scheduler, and the same loops pinned one to each core (where the scheduler
puts them changes a step by up to 2x; pinned is the harder placement). Under each
condition and for each case, dagrad runs once per wait policy
(DAGRAD_WAIT_POLICY, ops/cpu/cpu_threads.h: one binary does the A/B), once
as --replicas replicas on threads of their own (each on its share of the
batch with one compute thread, engine/device/thread_communicator.h), and
PyTorch runs once, one after the other. dagrad's steps are `dagrad_bench
--step_times=CASE` (2 untimed warm-up steps, then each step timed alone, up
to --steps, or fewer but at least 3 once a run has taken --max_seconds);
PyTorch's are the same models (tools/bench/torch_anchor.py's toy step and
tools/reference/gpt.py's GPT, batch 32, T 64, AdamW) timed the same way by
this script, run as a worker of itself. Both use the same BLIS kernel set
(BLIS_ARCH_TYPE, from `dagrad info`) and thread count (BLIS_NUM_THREADS,
OMP_NUM_THREADS, torch.set_num_threads). The load average at the start and
end of each condition is printed: the competitors here are the script's own;
anything else on the machine adds to them.

"x quiet" is a row's mean over the quiet median of the same side and policy.
Where the scheduler puts the competitors changes a busy row by up to 2x from
one run to the next (PERFORMANCE.md, issue 38), so --rounds N repeats each
busy condition N times with new competitors and ends with each row's ratio
in every round.
Fair sharing predicts, for T threads beside L busy loops on C cores, a step
about max(1, (T + L) / C) times the quiet one.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from compare import BLIS_IDS  # noqa: E402
from script_errors import run_main  # noqa: E402

CASES = ["toy_train_step", "gpt_train_step"]


def torch_step(case, threads):
    """A PyTorch training step of `case`, as a function of no arguments."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    if case == "toy_train_step":
        from torch_cuda_anchor import ToyTransformer
        model, vocab, B, T = ToyTransformer(16, 32, 128, 4, 2, 512, 0.1), 16, 64, 32
        opt = torch.optim.Adam(model.parameters(), 1e-3)
        x = torch.randint(1, 16, (B, T))
        y = x.flip(1)
    else:
        sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))
        import gpt
        model, vocab, B, T = gpt.GPT(256, 64, 128, 4, 4, 0.0), 256, 32, 64
        opt = torch.optim.AdamW(model.parameters(), 1e-3, weight_decay=0.1)
        x = torch.randint(0, 256, (B, T))
        y = torch.randint(0, 256, (B, T))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
    return step


def torch_worker(case, steps, threads, seconds):
    step = torch_step(case, threads)
    ms = []
    begin = time.perf_counter()
    for i in range(steps + 2):
        if len(ms) >= 3 and time.perf_counter() - begin > seconds:
            break
        start = time.perf_counter()
        step()
        if i >= 2:
            ms.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"case": case, "ms": ms}))


def run_json(cmd, env):
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["ms"]


def summary(ms):
    s = sorted(ms)
    # p90 by nearest rank: the ceil(0.9 n)-th smallest (the 18th of 20).
    return statistics.median(s), statistics.fmean(s), s[math.ceil(0.9 * len(s)) - 1]


def busy_loops(n, pinned=False):
    """n processes spinning; pinned: loop i may run on core i only."""
    cores = sorted(os.sched_getaffinity(0))
    def pin(i):
        return (lambda: os.sched_setaffinity(0, {cores[i % len(cores)]})) if pinned else None
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin(i))
            for i in range(n)]


def stop(procs):
    for p in procs:
        p.kill()
        p.wait()


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def environment(args):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), BLIS_NUM_THREADS=str(args.threads))
    info = subprocess.run([os.path.join(args.build, "tools", "dagrad"), "info"], env=env,
                          check=True, capture_output=True, text=True).stdout
    env.setdefault("BLIS_ARCH_TYPE", str(BLIS_IDS[re.search(r"kernel set '(\w+)'", info).group(1)]))
    return env, info


def measure(args, env, case):
    """{side: [ms]} for dagrad under each policy and for PyTorch."""
    bench = [os.path.join(args.build, "tools", "dagrad_bench"), f"--step_times={case}",
             f"--steps={args.steps}", f"--threads={args.threads}",
             f"--max_seconds={args.max_seconds}"]
    out = {}
    for policy in args.policies:
        out[f"dagrad {policy}"] = run_json(bench, dict(env, DAGRAD_WAIT_POLICY=policy))
    if args.replicas > 1:
        out[f"dagrad {args.replicas} replicas"] = run_json(
            bench + [f"--replicas={args.replicas}"], dict(env, DAGRAD_WAIT_POLICY="auto"))
    out["pytorch"] = run_json([sys.executable, os.path.abspath(__file__), "--torch_worker", case,
                               "--steps", str(args.steps), "--threads", str(args.threads),
                               "--max_seconds", str(args.max_seconds)], env)
    return out


def run_condition(args, env, name, loops, cores, quiet, ratios, pinned=False):
    """Times every case beside `loops` fresh busy loops and prints a row per side."""
    procs = busy_loops(loops, pinned)
    try:
        start_load = load()
        for case in args.cases:
            for side, ms in measure(args, env, case).items():
                med, mean, p90 = summary(ms)
                quiet.setdefault((case, side), med)
                ratio = mean / quiet[(case, side)]
                ratios.setdefault((name, case, side), []).append(ratio)
                print(f"{name:<14} {case:<15} {side:<18} {len(ms):3d} {med:8.1f} {mean:8.1f} "
                      f"{p90:8.1f} {ratio:8.2f}", flush=True)
        print(f"  load average {start_load} -> {load()}; fair share predicts "
              f"{max(1.0, (args.threads + loops) / cores):.2f}x", flush=True)
    finally:
        stop(procs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max_seconds", type=float, default=60.0)
    p.add_argument("--policies", nargs="+", default=["spin", "auto", "share"],
                   choices=["spin", "auto", "share"])
    p.add_argument("--cases", nargs="+", default=CASES, choices=CASES)
    p.add_argument("--rounds", type=int, default=1,
                   help="times each busy condition runs, with new competitors each time")
    p.add_argument("--replicas", type=int, default=None,
                   help="also time dagrad as this many replicas on threads of their own "
                        "(dagrad_bench --replicas; default: --threads; 1: not)")
    p.add_argument("--torch_worker", choices=CASES, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.torch_worker:
        return torch_worker(args.torch_worker, args.steps, args.threads, args.max_seconds)
    if args.replicas is None:
        args.replicas = args.threads
    env, info = environment(args)
    cores = len(os.sched_getaffinity(0))
    print(info.splitlines()[1], "|", re.search(r"^kernels: .*$", info, re.M).group(0))
    print(f"{cores} cores, {args.threads} threads, at most {args.steps} steps or "
          f"{args.max_seconds:g} s per run (n: steps timed), "
          f"BLIS_ARCH_TYPE={env['BLIS_ARCH_TYPE']}")
    quiet, ratios = {}, {}
    print(f"{'condition':<14} {'case':<15} {'side':<18} {'n':>3} {'median':>8} {'mean':>8} "
          f"{'p90':>8} {'x quiet':>8}")
    run_condition(args, env, "quiet", 0, cores, quiet, ratios)
    for _ in range(args.rounds):
        for name, loops, pinned in [("1 busy loop", 1, False), (f"{cores} busy loops", cores, False),
                                    (f"{cores} loops, pinned", cores, True)]:
            run_condition(args, env, name, loops, cores, quiet, ratios, pinned)
    if args.rounds > 1:
        print("x quiet in each round (the competitors start anew, so the scheduler places "
              "them anew):")
        for (name, case, side), r in ratios.items():
            if name != "quiet":
                print(f"{name:<14} {case:<15} {side:<18} " + " ".join(f"{x:5.2f}" for x in r) +
                      f"   median {statistics.median(r):.2f}")


if __name__ == "__main__":
    sys.exit(run_main(main))
