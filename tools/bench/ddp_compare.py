"""Data-parallel scaling of `dagrad train` on MPI, beside PyTorch DDP (gloo).

    /usr/bin/python3 tools/bench/ddp_compare.py [--build build] [--steps 60]

On the toy configuration of tools/bench/torch_anchor.py (ToyTransformer
vocab 16, T 32, D 128, H 4, L 2, ffn 512, dropout 0.1, Adam, global batch
64), in one run, it measures steps per second of:
    dagrad 1 rank x 1 thread, 1 rank x 2 threads, 2 ranks x 1 thread
    (mpirun -np 2), 2 ranks without overlap (--overlap=false), and, with
    --profile, the milliseconds a 2-rank step waits on the all-reduce;
    PyTorch 1 process x 1 thread and DistributedDataParallel, 2 processes x
    1 thread (gloo backend), each process on half the global batch.
It prints the throughput ratios (ideal 2.0) and dagrad's 2-rank step time
over DDP's, and beside it two floors: the ratio a 2-rank step would reach
if its matrix products were all it did, at one core's peak multiply-add
rate (kernel_bench's fma_peak/<level>) and at the rate BLIS ran them in
this run (the matmul and linear rows of rank 0's --profile). A goal below
a floor cannot be met by any code around those products. Benchmarks
print, never assert; the machine's ISA is printed first (`dagrad info`).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_errors import run_main  # noqa: E402

TOY = ["--vocab=16", "--seq_len=32", "--dim=128", "--heads=4", "--layers=2", "--ffn=512",
       "--dropout=0.1", "--batch=64", "--optimizer=adam"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def dagrad_rate(cli, ranks, threads, steps, extra=()):
    """Steps per second of the training loop (the last progress line) and,
    with --profile, (ms per step waiting on the all-reduce, its share in %,
    the step's ms) and the ms per step of the matrix products (matmul and
    linear)."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [cli, "train"] + TOY + [f"--steps={steps}", f"--eval_every={steps}",
                                      f"--threads={threads}", f"--out={out}"] + list(extra)
        if ranks > 1:
            cmd = ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none"] + cmd
        env = dict(os.environ, **MPI_ENV)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    rates = re.findall(r"([0-9.]+) steps/s", r.stdout)
    wait = re.search(r"waiting on communication: ([0-9.]+) ms per step, ([0-9.]+)% of the "
                     r"step's ([0-9.]+) ms", r.stdout)
    products = sum(float(ms) for ms in re.findall(r"^(?:matmul|linear) +([0-9.]+) ", r.stdout,
                                                  re.MULTILINE))
    return float(rates[-1]), tuple(map(float, wait.groups())) if wait else None, products


def peak_floor(build, level, ranks):
    """(GFLOP of one rank's step products, one core's peak GFLOP/s at `level`):
    dagrad_bench's toy_train_step counts the products of the global batch,
    and a rank runs 1 / ranks of them."""
    def bench(tool, pattern):
        out = subprocess.run([os.path.join(build, "tools", tool), "--threads=1",
                              f"--benchmark_filter={pattern}", "--benchmark_format=json",
                              "--benchmark_min_time=0.2"],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)["benchmarks"][0]["flops"] / 1e9
    return bench("dagrad_bench", "^toy_train_step") / ranks, bench("kernel_bench",
                                                                   f"^fma_peak/{level}/")


def torch_worker(rank, world, steps, port, results):
    import torch
    import torch.distributed as dist
    from torch import nn
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_cuda_anchor import ToyTransformer
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = ToyTransformer(16, 32, 128, 4, 2, 512, 0.1)
    if world > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    tokens = torch.randint(1, 16, (64 // world, 32))
    target = tokens.flip(1)
    times = []
    for i in range(steps + 5):
        t = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(tokens).reshape(-1, 16), target.reshape(-1))
        loss.backward()
        opt.step()
        if i >= 5:
            times.append(time.perf_counter() - t)
    results.put((rank, statistics.median(times)))
    if world > 1:
        dist.destroy_process_group()


def torch_rate(world, steps):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=torch_worker, args=(r, world, steps, 29517, results))
             for r in range(world)]
    for p in procs:
        p.start()
    medians = [results.get()[1] for _ in procs]
    for p in procs:
        p.join()
    return 1.0 / max(medians)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--steps", type=int, default=60)
    args = p.parse_args()
    cli = os.path.join(args.build, "tools", "dagrad")
    info = subprocess.run([cli, "info"], capture_output=True, text=True).stdout
    print("\n".join(l for l in info.splitlines() if "kernels" in l or "cpu" in l.lower()))
    level = re.search(r"kernels: (\w+)", info).group(1)
    one, _, _ = dagrad_rate(cli, 1, 1, args.steps)
    one_two_threads, _, _ = dagrad_rate(cli, 1, 2, args.steps)
    two, _, _ = dagrad_rate(cli, 2, 1, args.steps)
    two_serial, _, _ = dagrad_rate(cli, 2, 1, args.steps, ["--overlap=false"])
    _, wait, products_ms = dagrad_rate(cli, 2, 1, args.steps, ["--profile"])
    _, wait_serial, _ = dagrad_rate(cli, 2, 1, args.steps, ["--profile", "--overlap=false"])
    gflop, peak = peak_floor(args.build, level, 2)
    torch_one = torch_rate(1, args.steps)
    torch_two = torch_rate(2, args.steps)
    print(f"{'':34}{'steps/s':>9}{'ms/step':>9}")
    for name, rate in [("dagrad 1 rank x 1 thread", one), ("dagrad 1 rank x 2 threads", one_two_threads),
                       ("dagrad 2 ranks x 1 thread", two), ("dagrad 2 ranks, no overlap", two_serial),
                       ("torch 1 process x 1 thread", torch_one),
                       ("torch DDP gloo 2 x 1 thread", torch_two)]:
        print(f"{name:34}{rate:9.1f}{1e3 / rate:9.2f}")
    print(f"dagrad 2 ranks / 1 rank x 1 thread:   {two / one:.2f} (ideal 2.0, efficiency "
          f"{50 * two / one:.0f}%)")
    print(f"dagrad 2 ranks / 1 rank x 2 threads:  {two / one_two_threads:.2f}")
    print(f"dagrad 2 ranks / no overlap:          {two / two_serial:.2f}")
    print(f"torch DDP 2 / torch 1:                {torch_two / torch_one:.2f}")
    print(f"dagrad 2-rank step / DDP 2-process step: {torch_two / two:.2f} (goal <= 0.5)")
    ddp_ms = 1e3 / torch_two
    print(f"floor: a rank's products, {gflop:.2f} GFLOP, take {gflop / peak * 1e3:.1f} ms at one "
          f"core's peak ({peak:.1f} GFLOP/s, fma_peak/{level}) = {gflop / peak * 1e3 / ddp_ms:.2f} "
          f"of DDP's step, and took {products_ms:.1f} ms at BLIS's rate here "
          f"({gflop / products_ms * 1e3:.1f} GFLOP/s) = {products_ms / ddp_ms:.2f}")
    if wait:
        print(f"the rest of rank 0's {wait[2]:.1f} ms step (--profile) took "
              f"{wait[2] - products_ms:.1f} ms; 0.5 of DDP's step leaves it "
              f"{0.5 * ddp_ms - products_ms:.1f} ms at BLIS's rate")
    if wait and wait_serial:
        print(f"waiting on the all-reduce per step: overlapped {wait[0]:.3f} ms ({wait[1]:.1f}%), "
              f"not overlapped {wait_serial[0]:.3f} ms ({wait_serial[1]:.1f}%)")


if __name__ == "__main__":
    sys.exit(run_main(main))
