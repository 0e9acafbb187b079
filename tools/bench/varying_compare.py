"""Times training at shapes that vary, dagrad against PyTorch eager, in one run:
tools/examples/varying_lengths.cc (600 AdamW steps on batches of 4 to 8
counting sequences of 3 to 12 tokens, a ShapeFamily building each shape's
step when it first meets it) and the same model, data and optimizer in
PyTorch (nn.TransformerEncoderLayer, post-norm, ReLU, no dropout; a causal
mask; sinusoidal positions), both on one thread at the same kernel level.
The rounds alternate the two sides; each prints its training loop's
seconds (dagrad's includes building and compiling every shape's plan) and
its held-out accuracy.

    cmake --build build && ctest --test-dir build -R '^examples$'
    /usr/bin/python3 tools/bench/varying_compare.py --rounds 3 --isa avx2
"""
import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_errors import run_main  # noqa: E402

V, D, MAX_LEN, MAX_BATCH, STEPS = 16, 32, 12, 8, 600


def torch_seconds():
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = random.Random(1)
    emb = torch.nn.Embedding(V, D)
    block = torch.nn.TransformerEncoderLayer(D, 4, 2 * D, dropout=0.0, batch_first=True)
    head = torch.nn.Linear(D, V)
    params = [*emb.parameters(), *block.parameters(), *head.parameters()]

    def logits(tokens):
        n = tokens.shape[1]
        angle = torch.arange(n).unsqueeze(1) / 10000 ** (torch.arange(0, D, 2) / D)
        positions = torch.stack([angle.sin(), angle.cos()], dim=-1).reshape(n, D)
        causal = torch.triu(torch.full((n, n), float("-inf")), 1)
        return head(block(emb(tokens) + positions, src_mask=causal))

    def draw(batch, n):
        rows = [(rng.randrange(V), 1 + rng.randrange(3)) for _ in range(batch)]
        seq = [[(s + i * k) % V for i in range(n + 1)] for s, k in rows]
        t = torch.tensor(seq)
        return t[:, :-1], t[:, 1:]

    opt = torch.optim.AdamW(params, lr=3e-3, weight_decay=0.01)
    start = time.perf_counter()
    for _ in range(STEPS):
        x, y = draw(4 + rng.randrange(5), 3 + rng.randrange(MAX_LEN - 2))
        loss = torch.nn.functional.cross_entropy(logits(x).reshape(-1, V), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
    took = time.perf_counter() - start
    right = scored = 0
    with torch.no_grad():
        for n in range(3, MAX_LEN + 1):
            x, y = draw(MAX_BATCH, n)
            hit = logits(x).argmax(-1)[:, 1:] == y[:, 1:]
            right, scored = right + hit.sum().item(), scored + hit.numel()
    return took, right / scored


def dagrad_seconds(binary, isa):
    env = dict(os.environ, DAGRAD_NUM_THREADS="1", DAGRAD_CPU_ISA=isa)
    out = subprocess.run([binary], capture_output=True, text=True, env=env, check=True).stdout
    took = float(re.search(r"steps in ([0-9.]+) s", out).group(1))
    return took, float(re.search(r"accuracy ([0-9.]+)", out).group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default="build/examples_test/build/varying_lengths")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--isa", default="avx2", help="dagrad's DAGRAD_CPU_ISA, torch's ATEN_CPU_CAPABILITY")
    args = p.parse_args()
    if "ATEN_CPU_CAPABILITY" not in os.environ:  # read when torch is imported
        os.environ["ATEN_CPU_CAPABILITY"] = {"baseline": "default"}.get(args.isa, args.isa)
    times = {"dagrad": [], "torch": []}
    for r in range(args.rounds):
        for side, run in (("dagrad", lambda: dagrad_seconds(args.binary, args.isa)),
                          ("torch", torch_seconds)):
            took, accuracy = run()
            times[side].append(took)
            print(f"round {r + 1} {side:6}: {STEPS} steps in {took:.3f} s, accuracy {accuracy:.3f}, "
                  f"load {os.getloadavg()[0]:.2f}")
    d, t = statistics.median(times["dagrad"]), statistics.median(times["torch"])
    print(f"median: dagrad {d * 1e3 / STEPS:.2f} ms/step, torch {t * 1e3 / STEPS:.2f} ms/step, "
          f"torch / dagrad {t / d:.2f}")


if __name__ == "__main__":
    sys.exit(run_main(main))
