"""`dagrad train --task=text`, step for step in PyTorch, from the same weights.

    /usr/bin/python3 tools/reference/text_train.py --dagrad=build/tools/dagrad \
        --data=FILE --out=DIR [--steps=2000 --eval_every=100 --beta2=0.99 ...]

1. A fresh GPT of tools/reference/gpt.py (torch.manual_seed(--seed)) is saved
   as DIR/init.safetensors, a byte-level GPT model file.
2. `dagrad train --task=text --init=DIR/init.safetensors` trains from it into
   DIR/dagrad, with the optimizer settings given here and no dropout.
3. The same GPT trains here, as dagrad defines the run (models/gpt/text_task.h,
   ops/autodiff/optimizer.h), each piece written from its documentation:
   - batch i is the windows at TrainOffsets(seed, i): Philox4x32-10 of the
     counter (row, i, i >> 32, 0x7e47) under the key (seed, seed >> 32), the
     first two words as a 64-bit number modulo (train bytes - seq_len);
   - the training split is the first 90% of the bytes (n * 9 // 10), the
     validation split the rest, scored in consecutive windows;
   - AdamW with weight decay on the matrices only (DecayMatrices), the global
     gradient norm clipped (clip_grad_norm_), and the learning rate of step s
     (1-based) linear over the warmup, then cosine to final_fraction x peak.
4. Each metrics.csv row of dagrad (the mean training loss since the previous
   row, the validation loss) is printed beside PyTorch's. The exit code is 1
   when any pair differs by more than --tolerance, 0 when all agree.

Exits 77 (a skip under ctest) when torch is missing.
"""
import argparse
import csv
import math
import os
import subprocess
import sys

try:
    import torch
    from torch.nn import functional as F
except ImportError:
    print("skipped: PyTorch is not installed (apt-get install python3-torch)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import gpt  # noqa: E402
from script_errors import run_main  # noqa: E402

MASK32 = 0xFFFFFFFF


def philox4x32_10(counter, key0, key1):
    """engine/philox.h's Philox4x32-10: four 32-bit words from a counter and a key."""
    c = list(counter)
    for r in range(10):
        if r > 0:
            key0 = (key0 + 0x9E3779B9) & MASK32
            key1 = (key1 + 0xBB67AE85) & MASK32
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ key0, p1 & MASK32, (p0 >> 32) ^ c[3] ^ key1, p0 & MASK32]
    return c


def train_offsets(seed, index, batch, starts):
    offsets = []
    for row in range(batch):
        r = philox4x32_10([row, index & MASK32, index >> 32, 0x7E47], seed & MASK32, seed >> 32)
        offsets.append(((r[1] << 32) | r[0]) % starts)
    return offsets


def windows(split, offsets, T):
    tokens = torch.tensor([list(split[o:o + T]) for o in offsets], dtype=torch.int64)
    targets = torch.tensor([list(split[o + 1:o + T + 1]) for o in offsets], dtype=torch.int64)
    return tokens, targets


def learning_rate(a, s):
    if s <= a.warmup:
        return a.lr * s / a.warmup
    if a.steps <= a.warmup:
        return a.lr
    p = min(1.0, (s - a.warmup) / (a.steps - a.warmup))
    return a.lr * (a.final_lr_fraction + (1 - a.final_lr_fraction) * (1 + math.cos(math.pi * p)) / 2)


@torch.no_grad()
def validation_loss(model, validation, T):
    n = (len(validation) - 1) // T
    tokens, targets = windows(validation, [i * T for i in range(n)], T)
    logits = model(tokens)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)).item()


def torch_rows(a, model, data):
    """Trains `model` as dagrad does; the rows (step, mean loss, validation loss)."""
    cut = len(data) * 9 // 10
    train, validation = data[:cut], data[cut:]
    T = model.config["block_size"]
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    others = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": matrices, "weight_decay": a.weight_decay},
                             {"params": others, "weight_decay": 0.0}],
                            lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)
    rows, window = [], []
    for s in range(1, a.steps + 1):
        tokens, targets = windows(train, train_offsets(a.seed, s, a.batch, len(train) - T), T)
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        opt.zero_grad()
        loss.backward()
        if a.clip > 0:  # dagrad's --clip=0 is off; torch's max_norm 0 zeroes every gradient
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        for group in opt.param_groups:
            group["lr"] = learning_rate(a, s)
        opt.step()
        window.append(loss.item())
        if s % a.eval_every == 0 or s == a.steps:
            rows.append((s, sum(window) / len(window), validation_loss(model, validation, T)))
            window = []
    return rows


def dagrad_rows(a, init, out):
    flags = dict(task="text", init=init, data=a.data, out=out, steps=a.steps,
                 eval_every=a.eval_every, batch=a.batch, seed=a.seed, dropout=0,
                 optimizer="adamw", lr=a.lr, beta1=a.beta1, beta2=a.beta2, eps=a.eps,
                 weight_decay=a.weight_decay, clip=a.clip, warmup=a.warmup,
                 lr_decay="cosine", final_lr_fraction=a.final_lr_fraction, threads=a.threads)
    cmd = a.dagrad.split() + ["train", "--overwrite"] + [f"--{k}={v}" for k, v in flags.items()]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "metrics.csv")) as f:
        return [(int(r["step"]), float(r["loss"]), float(r["eval_loss"])) for r in csv.DictReader(f)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dagrad", required=True, help="the dagrad program (a command line)")
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    for name, kind, default in [("steps", int, 2000), ("eval_every", int, 100), ("batch", int, 12),
                                ("seed", int, 1), ("block_size", int, 64), ("dim", int, 128),
                                ("heads", int, 4), ("layers", int, 4), ("threads", int, 1),
                                ("warmup", int, 100), ("lr", float, 1e-3), ("beta1", float, 0.9),
                                ("beta2", float, 0.99), ("eps", float, 1e-8),
                                ("weight_decay", float, 0.1), ("clip", float, 1.0),
                                ("final_lr_fraction", float, 0.1), ("tolerance", float, 5e-5)]:
        p.add_argument(f"--{name}", type=kind, default=default)
    a = p.parse_args()
    if a.heads < 1 or a.dim % a.heads:
        p.error(f"--dim {a.dim} must be a multiple of --heads {a.heads}")
    with open(a.data, "rb") as f:
        data = f.read()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    model = gpt.GPT(256, a.block_size, a.dim, a.heads, a.layers, dropout=0.0)
    init = os.path.join(a.out, "init.safetensors")
    gpt.save_checkpoint(model, init)
    ours = dagrad_rows(a, init, os.path.join(a.out, "dagrad"))
    theirs = torch_rows(a, model, data)
    worst = 0.0
    print(f"{'step':>6} {'loss dagrad':>12} {'PyTorch':>10} {'val dagrad':>11} {'PyTorch':>10}")
    for (s, loss, val), (ts, tloss, tval) in zip(ours, theirs):
        assert s == ts, (s, ts)
        worst = max(worst, abs(loss - tloss), abs(val - tval))
        print(f"{s:>6} {loss:>12.6f} {tloss:>10.6f} {val:>11.6f} {tval:>10.6f}")
    same = len(ours) == len(theirs) and worst <= a.tolerance
    print(f"{len(ours)} rows, largest difference {worst:.2e} (tolerance {a.tolerance:.0e}): "
          f"{'agree' if same else 'DIFFER'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
