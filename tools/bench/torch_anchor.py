"""PyTorch side of the CPU benchmark comparison (the anchor dagrad must beat).

Runs the same cases that dagrad's own benchmarks must run, and prints one JSON
object per line: {"case": NAME, "ms": median milliseconds, "threads": N}.

    /usr/bin/python3 tools/bench/torch_anchor.py --threads 1 [--reps 20] [--only mha_fwdbwd]
                                                 [--cpu_time]

Debian's torch sends matrix products to the system BLAS, which is BLIS here.
Run it under the same BLIS kernel set and thread count as dagrad (for example
BLIS_ARCH_TYPE=skx on a CPU where BLIS would otherwise pick 'generic'), so
that the two sides differ only in the engine; ATEN_CPU_CAPABILITY
(default, avx2, avx512) sets PyTorch's own kernel level, as DAGRAD_CPU_ISA
sets dagrad's (tools/bench/compare.py --isa sets both).

Cases (B batch, T tokens, D model width, H heads; masks: the last quarter of
the keys of every sequence is padding):
    matmul_1024             C = A @ B, all 1024 x 1024, float32
    mha_fwd_B{B}_T{T}_D{D}_H{H}     self-attention forward, no weights returned
    mha_fwdbwd_B{B}_T{T}_D{D}_H{H}  forward + backward of sum(output)
    toy_train_step          ToyTransformer(vocab 16, T 32, D 128, H 4, L 2, ffn 512,
                            dropout 0.1), batch 64, reverse task, cross-entropy, Adam lr 1e-3
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
from torch import nn

# The project's PyTorch twin of models/toy/transformer.h lives in the CUDA
# anchor; both benchmarks use it.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_cuda_anchor import ToyTransformer  # noqa: E402

MHA_CASES = [(32, 64, 128, 4), (16, 128, 256, 8), (8, 256, 512, 8)]


def bench(fn, reps, warm=3, clock=time.perf_counter):
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        t = clock()
        fn()
        times.append(clock() - t)
    return statistics.median(times) * 1e3


def cases():
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    yield "matmul_1024", lambda: torch.mm(a, b)
    for B, T, D, H in MHA_CASES:
        mha = nn.MultiheadAttention(D, H, dropout=0.0, batch_first=True)
        x = torch.randn(B, T, D, requires_grad=True)
        pad = torch.zeros(B, T, dtype=torch.bool)
        pad[:, T - T // 4:] = True

        def fwd(mha=mha, x=x, pad=pad):
            with torch.no_grad():
                mha(x, x, x, key_padding_mask=pad, need_weights=False)

        def fwdbwd(mha=mha, x=x, pad=pad):
            y, _ = mha(x, x, x, key_padding_mask=pad, need_weights=False)
            y.sum().backward()

        yield f"mha_fwd_B{B}_T{T}_D{D}_H{H}", fwd
        yield f"mha_fwdbwd_B{B}_T{T}_D{D}_H{H}", fwdbwd
    model = ToyTransformer(16, 32, 128, 4, 2, 512, 0.1)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    tokens = torch.randint(1, 16, (64, 32))
    target = tokens.flip(1)

    def step():
        opt.zero_grad()
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 16), target.reshape(-1))
        loss.backward()
        opt.step()

    yield "toy_train_step", step


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--only", default="", help="run only cases whose name contains this")
    p.add_argument("--cpu_time", action="store_true",
                   help="time the process's CPU time instead of the wall clock")
    args = p.parse_args()
    clock = time.process_time if args.cpu_time else time.perf_counter
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    for name, fn in cases():
        if args.only in name:
            print(json.dumps({"case": name, "ms": round(bench(fn, args.reps, clock=clock), 4),
                              "threads": args.threads}), flush=True)


if __name__ == "__main__":
    main()
