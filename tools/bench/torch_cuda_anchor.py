"""PyTorch side of the GPU benchmark comparison (tools/bench/cuda_bench.cc is
dagrad's side; tools/bench/gpu_check.sh runs both and prints the table).

Runs the same work as cuda_bench as a PyTorch user would write it, eagerly
and at PyTorch's best (torch.compile and the fused Adam), and prints one
JSON object per line: {"case": NAME, "ms": median ms per step (CUDA
events), "device": GPU name}. Needs a CUDA build of PyTorch (2.11 on the
lent machines); without a GPU it says so and exits 0.

    python3 tools/bench/torch_cuda_anchor.py [--iters 50] [--warmup 10] [--only toy] [--eager]

Cases:
    toy_step          ToyTransformer(vocab 16, T 32, E 128, H 4, L 2, ffn 512, dropout 0.1),
                      batch 64: forward, cross-entropy, backward, clip_grad_norm_(1.0), Adam
    large_step_f32    the same at vocab 1000, T 256, E 512, H 8, L 6, ffn 2048, batch 32
    large_step_tf32   the same with TF32 matrix products (torch.backends.cuda.matmul.allow_tf32)
    mha_fwdbwd_f32    nn.MultiheadAttention(1024, 16) self-attention on (32, 512, 1024):
                      forward + backward of sum(y * dy) (input and weight gradients)
Each training case also runs as NAME_compiled: the model under torch.compile
(mode "reduce-overhead", CUDA graphs, for the toy step, whose time is
launches; the default mode for the large steps, which took about 20 s to
compile on an H200), torch.optim.Adam(fused=True) and the foreach gradient
clipping. The warm-up compiles; the timed steps replay. --eager leaves the
compiled cases out.
ToyTransformer here is the project's PyTorch twin of models/toy/transformer.h
(post-norm nn.TransformerEncoderLayer, sinusoidal positions, PyTorch's
state_dict names); tools/goldens/toy_eval.py makes goldens with it too.
"""
import argparse
import json
import math
import statistics

import torch
from torch import nn

# Where the cases run; a check of this script on a machine without a GPU sets "cpu".
DEVICE = "cuda"


def sinusoidal(max_len, dim):
    pe = torch.zeros(max_len, dim)
    pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    div = torch.pow(10000.0, torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    pe[:, 0::2] = torch.sin(pos / div)
    pe[:, 1::2] = torch.cos(pos / div)
    return pe


class ToyTransformer(nn.Module):
    def __init__(self, vocab, max_len, dim, heads, layers, ffn, dropout):
        super().__init__()
        self.dim = dim
        self.embedding = nn.Embedding(vocab, dim)
        nn.init.normal_(self.embedding.weight, 0.0, dim ** -0.5)
        self.register_buffer("pe", sinusoidal(max_len, dim), persistent=False)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(dim, heads, ffn, dropout, activation="relu",
                                           batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens, lengths=None):
        T = tokens.shape[1]
        x = self.embedding(tokens) * math.sqrt(self.dim) + self.pe[:T]
        pad = None
        if lengths is not None:  # PyTorch polarity: True = this key is padding
            pad = torch.arange(T, device=tokens.device)[None, :] >= lengths[:, None]
        return self.head(self.encoder(self.dropout(x), src_key_padding_mask=pad))


def time_cuda(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def training_step(vocab, t, dim, heads, layers, ffn, batch, compile_mode=None):
    """One training step; compile_mode None is eager, else PyTorch's best:
    the model under torch.compile(mode=compile_mode) with the fused Adam."""
    model = ToyTransformer(vocab, t, dim, heads, layers, ffn, 0.1).to(DEVICE).train()
    best = compile_mode is not None
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, fused=best)
    net = torch.compile(model, mode=compile_mode) if best else model
    tokens = torch.randint(1, vocab, (batch, t), device=DEVICE)
    targets = tokens.flip(1)

    def step():
        opt.zero_grad(set_to_none=True)
        logits = net(tokens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=best)
        opt.step()
        return loss

    return step


def mha_fwdbwd():
    b, t, e, h = 32, 512, 1024, 16
    mha = nn.MultiheadAttention(e, h, dropout=0.0, batch_first=True).to(DEVICE)
    x = torch.randn(b, t, e, device=DEVICE, requires_grad=True)
    dy = torch.randn(b, t, e, device=DEVICE)

    def step():
        mha.zero_grad(set_to_none=True)
        x.grad = None
        y, _ = mha(x, x, x, need_weights=False)
        (y * dy).sum().backward()

    return step


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--only", default="", help="run only cases whose name contains this")
    p.add_argument("--eager", action="store_true", help="leave out the compiled cases")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("torch_cuda_anchor: no CUDA device visible to PyTorch", torch.__version__)
        return
    torch.manual_seed(0)
    name = torch.cuda.get_device_name()
    toy = (16, 32, 128, 4, 2, 512, 64)
    large = (1000, 256, 512, 8, 6, 2048, 32)
    cases = [
        ("toy_step", False, lambda: training_step(*toy)),
        ("large_step_f32", False, lambda: training_step(*large)),
        ("large_step_tf32", True, lambda: training_step(*large)),
        ("mha_fwdbwd_f32", False, mha_fwdbwd),
        ("toy_step_compiled", False, lambda: training_step(*toy, "reduce-overhead")),
        ("large_step_f32_compiled", False, lambda: training_step(*large, "default")),
        ("large_step_tf32_compiled", True, lambda: training_step(*large, "default")),
    ]
    for case, tf32, make in cases:
        if args.only not in case or (args.eager and case.endswith("_compiled")):
            continue
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        ms = time_cuda(make(), args.iters, args.warmup)
        print(json.dumps({"case": case, "ms": round(ms, 4), "device": name,
                          "torch": torch.__version__}), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
