"""Trains the GPT of tools/reference/gpt.py with PyTorch and with `dagrad train
--task=text` the same way, on the concatenated files of
/usr/share/common-licenses (or --data), and prints, side by side, the
validation loss of each (both measured here, by the reference model on the same
validation windows: dagrad's model.safetensors is loaded into it), the
milliseconds per training step and their ratio; then the tokens/s of `dagrad
generate` with and without the KV cache.

    /usr/bin/python3 tools/bench/gpt_compare.py --steps=600 --rounds=3 --threads=2

The recipe (issue 15): dim 128, 4 heads, 4 layers, seq_len 64, batch 32, AdamW
lr 1e-3 with weight decay 0.1 on matrices only, clip 1, warmup 0 then cosine
decay to 10%, dropout 0. Training windows are random on each side (dagrad draws
them with Philox, PyTorch with torch.randint); the validation windows are the
same: the consecutive windows of the last 10% of the bytes, at most 64.

Timing. The machine is shared, so the two sides alternate: the steps are cut
into --rounds equal parts, and each round runs dagrad's part (`--stop_after`,
then `--resume`, which continues exactly) and then PyTorch's. dagrad's time of
a round is the growth of metrics.csv's elapsed_s over it: its steps and the one
evaluation closing the round, without start-up and compilation. PyTorch's is
its steps' wall time (batch drawing included, as on dagrad's side). Both use
--threads threads, in their own kernels and in BLIS (BLIS_NUM_THREADS for
PyTorch's), and the same BLIS kernel set (BLIS_ARCH_TYPE, from `dagrad
info`). The load average is printed beside each round: two-thread numbers
mean something only on a quiet machine (load under about 1.5). The CPU time
of each side (dagrad's whole process, start-up and final outputs included;
PyTorch's steps) is printed too: on a loaded machine it moves far less than
the wall time.

Generation: a model with block_size --gen_block (256), dim 128, 4 heads, 4
layers (PyTorch's initialisation: the speed does not depend on the weights)
greedily continues a one-byte prompt by --gen_block - 1 bytes, all inside the
window, where the cache does its work.
"""
import argparse
import glob
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
from compare import BLIS_IDS  # noqa: E402
from script_errors import run_main  # noqa: E402


def corpus(path):
    if path:
        with open(path, "rb") as f:
            return f.read()
    parts = []
    for name in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(name):
            with open(name, "rb") as f:
                parts.append(f.read())
    return b"".join(parts)


def load_average():
    return os.getloadavg()[0]


def validation_windows(torch, data, T, max_windows=64):
    val = np.frombuffer(data[len(data) * 9 // 10:], dtype=np.uint8).astype(np.int64)
    n = min(max_windows, (len(val) - 1) // T)
    x = np.stack([val[i * T:i * T + T] for i in range(n)])
    y = np.stack([val[i * T + 1:i * T + T + 1] for i in range(n)])
    return torch.from_numpy(x), torch.from_numpy(y)


def validation_loss(torch, model, windows):
    with torch.no_grad():
        model.eval()
        x, y = windows
        logits = model(x)
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()


def lr_at(step, args):  # dagrad's LearningRate: warmup 0, cosine to 10%
    progress = min(1.0, step / args.steps)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


class TorchRun:
    """The reference trained as dagrad trains, a round of steps at a time."""

    def __init__(self, torch, reference, data, args):
        self.torch, self.args, self.step = torch, args, 0
        torch.manual_seed(args.seed)
        torch.set_num_threads(args.threads)
        self.model = reference.GPT(256, args.seq_len, args.dim, args.heads, args.layers, 0.0)
        decay = [p for p in self.model.parameters() if p.dim() >= 2]
        rest = [p for p in self.model.parameters() if p.dim() < 2]
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                      {"params": rest, "weight_decay": 0.0}], lr=args.lr)
        self.train = torch.from_numpy(
            np.frombuffer(data[:len(data) * 9 // 10], np.uint8).astype(np.int64))

    def run_to(self, last):
        """Trains up to step `last`; returns the wall and CPU seconds it took."""
        torch, args, T, F = self.torch, self.args, self.args.seq_len, self.torch.nn.functional
        start, cpu = time.perf_counter(), time.process_time()
        self.model.train()
        while self.step < last:
            self.step += 1
            offsets = torch.randint(0, len(self.train) - T, (args.batch,))
            x = torch.stack([self.train[o:o + T] for o in offsets])
            y = torch.stack([self.train[o + 1:o + T + 1] for o in offsets])
            for group in self.opt.param_groups:
                group["lr"] = lr_at(self.step, args)
            loss = F.cross_entropy(self.model(x).reshape(-1, 256), y.reshape(-1))
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
        return time.perf_counter() - start, time.process_time() - cpu


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def dagrad_round(path, args, out, last, env):
    """Runs dagrad's training up to step `last`; returns the wall and CPU
    seconds it took (the CPU time of the whole process, start-up and writing
    the outputs included)."""
    every = args.steps // args.rounds
    cmd = [args.dagrad, "train", "--task=text", f"--data={path}", f"--seq_len={args.seq_len}",
           f"--dim={args.dim}", f"--heads={args.heads}", f"--layers={args.layers}", "--dropout=0",
           f"--batch={args.batch}", f"--steps={args.steps}", f"--lr={args.lr}", "--warmup=0",
           "--optimizer=adamw", "--weight_decay=0.1", "--clip=1", f"--seed={args.seed}",
           f"--eval_every={every}", f"--threads={args.threads}", f"--out={out}",
           f"--stop_after={last}"]
    if last > every:
        cmd.append("--resume")
    cpu = children_cpu()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    cpu = children_cpu() - cpu
    with open(os.path.join(out, "metrics.csv")) as f:
        rows = [line.split(",") for line in f.read().strip().splitlines()[1:]]
    elapsed = {int(r[0]): float(r[-1]) for r in rows}
    return elapsed[last] - elapsed.get(last - every, 0.0), cpu


def generation_rate(args, checkpoint, cache, env):
    result = subprocess.run(
        [args.dagrad, "generate", f"--checkpoint={checkpoint}", "--prompt=T",
         f"--tokens={args.gen_block - 1}", "--temperature=0", f"--kv_cache={cache}",
         f"--threads={args.threads}", "--timing"],
        check=True, capture_output=True, env=env)  # stdout: any bytes
    return float(re.search(r"([0-9.]+) tokens/s", result.stderr.decode()).group(1))


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dagrad", default="build/tools/dagrad")
    parser.add_argument("--data", default="")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seq_len", type=int, default=64)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--gen_block", type=int, default=256)
    args = parser.parse_args()
    if args.rounds < 1 or args.steps % args.rounds:
        parser.error("--steps must be a multiple of --rounds")
    return args


def train_both(args, path, out, env, torch_run):
    """Alternates the rounds; returns ms per step, wall and CPU, of each side."""
    every = args.steps // args.rounds
    totals = np.zeros(4)  # dagrad wall, dagrad CPU, torch wall, torch CPU
    print(f"{'round':>5} {'steps':>11} {'dagrad ms':>10} {'torch ms':>9} {'ratio':>6} "
          f"{'CPU ratio':>9} {'load':>5}")
    for r in range(1, args.rounds + 1):
        load = load_average()
        times = np.array(dagrad_round(path, args, out, r * every, env) +
                         torch_run.run_to(r * every))
        totals += times
        d, dc, t, tc = 1000 * times / every
        print(f"{r:5d} {(r - 1) * every + 1:5d}-{r * every:<5d} {d:10.1f} {t:9.1f} {d / t:6.2f} "
              f"{dc / tc:9.2f} {load:5.2f}", flush=True)
    return 1000 * totals / args.steps


def main():
    args = parse_args()
    env = dict(os.environ)
    info = subprocess.run([args.dagrad, "info"], check=True, capture_output=True, text=True,
                          env=env).stdout
    if "BLIS_ARCH_TYPE" not in env:  # dagrad's BLIS kernel set, for both sides
        env["BLIS_ARCH_TYPE"] = str(BLIS_IDS[re.search(r"kernel set '(\w+)'", info).group(1)])
    # PyTorch's products run in BLIS, which takes its thread count from the
    # environment (one thread when unset), not from torch.set_num_threads.
    env["BLIS_NUM_THREADS"] = str(args.threads)
    if any(os.environ.get(k) != env[k] for k in ("BLIS_ARCH_TYPE", "BLIS_NUM_THREADS")):
        # numpy, imported above, has already loaded BLIS (Debian's libblas),
        # which reads these once: start again with them set.
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    import torch
    import gpt as reference
    print("\n".join(line for line in info.splitlines() if line.startswith(("cpu", "kernels"))))
    data = corpus(args.data)
    print(f"{len(data)} bytes, {args.steps} steps, dim {args.dim}, {args.heads} heads, "
          f"{args.layers} layers, seq_len {args.seq_len}, batch {args.batch}, "
          f"{args.threads} threads, BLIS_ARCH_TYPE={env['BLIS_ARCH_TYPE']}")
    windows = validation_windows(torch, data, args.seq_len)
    torch_run = TorchRun(torch, reference, data, args)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "wb") as f:
            f.write(data)
        out = os.path.join(tmp, "run")
        dagrad_ms, dagrad_cpu, torch_ms, torch_cpu = train_both(args, path, out, env, torch_run)
        dagrad_model = reference.load_checkpoint(os.path.join(out, "model.safetensors"))
        torch.manual_seed(args.seed)
        checkpoint = os.path.join(tmp, "gen.safetensors")
        reference.save_checkpoint(reference.GPT(256, args.gen_block, args.dim, args.heads,
                                                args.layers), checkpoint)
        rates = {cache: generation_rate(args, checkpoint, cache, env)
                 for cache in ("true", "false")}
    losses = {name: validation_loss(torch, model, windows)
              for name, model in (("pytorch", torch_run.model), ("dagrad", dagrad_model))}
    print(f"{'':8} {'val loss':>9} {'ms/step':>9}")
    print(f"{'pytorch':8} {losses['pytorch']:9.4f} {torch_ms:9.1f}")
    print(f"{'dagrad':8} {losses['dagrad']:9.4f} {dagrad_ms:9.1f}")
    print(f"dagrad - pytorch validation loss: {losses['dagrad'] - losses['pytorch']:+.4f} nats "
          f"(target <= +0.05); dagrad / pytorch ms per step: {dagrad_ms / torch_ms:.2f} "
          f"(target <= 0.5); CPU time per step: {dagrad_cpu:.1f} / {torch_cpu:.1f} ms = "
          f"{dagrad_cpu / torch_cpu:.2f}")
    print(f"dagrad generate, block_size {args.gen_block}, {args.gen_block - 1} greedy tokens: "
          f"{rates['true']:.1f} tokens/s with the KV cache, {rates['false']:.1f} without "
          f"({rates['true'] / rates['false']:.1f}x)")


if __name__ == "__main__":
    sys.exit(run_main(main))
