"""Trains the GPT of tools/reference/gpt.py with PyTorch and with `dagrad train
--task=text` the same way, on the concatenated files of
/usr/share/common-licenses (or --data), and prints, side by side, the
validation loss of each (both measured here, by the reference model on the same
validation windows: dagrad's model.safetensors is loaded into it) and the
milliseconds per training step.

    /usr/bin/python3 tools/bench/gpt_compare.py --dagrad=build/tools/dagrad --steps=300

The recipe (issue 15): dim 128, 4 heads, 4 layers, seq_len 64, batch 32, AdamW
lr 1e-3 with weight decay 0.1 on matrices only, clip 1, warmup 0 then cosine
decay to 10%, dropout 0. Training windows are random on each side (dagrad draws
them with Philox, PyTorch with torch.randint); the validation windows are the
same: the consecutive windows of the last 10% of the bytes, at most 64.
"""
import argparse
import glob
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from torch.nn import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import gpt as reference  # noqa: E402


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


def validation_windows(data, T, max_windows=64):
    val = np.frombuffer(data[len(data) * 9 // 10:], dtype=np.uint8).astype(np.int64)
    n = min(max_windows, (len(val) - 1) // T)
    x = np.stack([val[i * T:i * T + T] for i in range(n)])
    y = np.stack([val[i * T + 1:i * T + T + 1] for i in range(n)])
    return torch.from_numpy(x), torch.from_numpy(y)


@torch.no_grad()
def validation_loss(model, windows):
    model.eval()
    x, y = windows
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()


def lr_at(step, args):  # dagrad's LearningRate: warmup 0, cosine to 10%
    progress = min(1.0, step / args.steps)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train_torch(data, args):
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    model = reference.GPT(256, args.seq_len, args.dim, args.heads, args.layers, 0.0)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}], lr=args.lr)
    train = torch.from_numpy(np.frombuffer(data[:len(data) * 9 // 10], np.uint8).astype(np.int64))
    T = args.seq_len
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        model.train()
        offsets = torch.randint(0, len(train) - T, (args.batch,))
        x = torch.stack([train[o:o + T] for o in offsets])
        y = torch.stack([train[o + 1:o + T + 1] for o in offsets])
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args)
        loss = F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return model, 1000 * (time.perf_counter() - start) / args.steps


def train_dagrad(path, args, out):
    cmd = [args.dagrad, "train", "--task=text", f"--data={path}", f"--seq_len={args.seq_len}",
           f"--dim={args.dim}", f"--heads={args.heads}", f"--layers={args.layers}", "--dropout=0",
           f"--batch={args.batch}", f"--steps={args.steps}", f"--lr={args.lr}", "--warmup=0",
           "--optimizer=adamw", "--weight_decay=0.1", "--clip=1", f"--seed={args.seed}",
           f"--eval_every={args.steps}", f"--threads={args.threads}", f"--out={out}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "metrics.csv")) as f:
        last = f.read().strip().splitlines()[-1].split(",")
    ms_per_step = 1000 * float(last[4]) / args.steps  # includes the one evaluation
    return reference.load_checkpoint(os.path.join(out, "model.safetensors")), ms_per_step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dagrad", default="build/tools/dagrad")
    parser.add_argument("--data", default="")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seq_len", type=int, default=64)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    data = corpus(args.data)
    windows = validation_windows(data, args.seq_len)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "corpus.txt")
        with open(path, "wb") as f:
            f.write(data)
        dagrad_model, dagrad_ms = train_dagrad(path, args, os.path.join(tmp, "run"))
    torch_model, torch_ms = train_torch(data, args)
    print(f"{len(data)} bytes, {args.steps} steps, dim {args.dim}, {args.heads} heads, "
          f"{args.layers} layers, seq_len {args.seq_len}, batch {args.batch}, "
          f"{args.threads} threads")
    print(f"{'':8} {'val loss':>9} {'ms/step':>9}")
    for name, model, ms in (("pytorch", torch_model, torch_ms), ("dagrad", dagrad_model, dagrad_ms)):
        print(f"{name:8} {validation_loss(model, windows):9.4f} {ms:9.1f}")


if __name__ == "__main__":
    main()
