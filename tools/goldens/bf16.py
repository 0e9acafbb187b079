"""PyTorch goldens of the 16-bit floats (tests/autodiff/bf16_golden_test.cc):
  tests/data/goldens/bf16.json
      cast_edges   float32 x -> x.to(bfloat16), x.to(float16): NaN, +-inf,
                   +-0, subnormals of both formats, values that round up,
                   down and to even at ties, overflow to inf
      cast_random  the same for float32 values of every magnitude
      matmul       bfloat16 a (2, 5, 24) and b (24, 7): the float32 product of
                   their values, and torch's bfloat16 product
      autocast_linear  F.linear under torch.autocast("cpu", bfloat16) of
                   float32 x (4, 6), w (5, 6), bias (5): y, and the gradients
                   of sum(y * r)
  tests/data/safetensors/torch_bf16.safetensors
      PyTorch bfloat16 and float16 tensors (w, h) beside their float32
      values (w_f32, h_f32), written by safetensors_io.py from torch's bytes

    /usr/bin/python3 tools/goldens/bf16.py                        # write the goldens
    /usr/bin/python3 tools/goldens/bf16.py --roundtrip IN OUT     # a dagrad file
      IN holds bfloat16 w and float16 h written by dagrad: loads them as
      torch tensors and writes OUT with w, h, w_f32, h_f32 (their float32
      values) and w_twice ((2 * w) in bfloat16), which dagrad checks.

Casts from float64 and from integers are not here: torch rounds those to
float32 first, and can land on a tie that was none; dagrad rounds once
(engine/bfloat16.h), which tests/engine/bf16_test.cc checks against a reference
of its own.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

from golden_io import GoldenFile
from safetensors_io import load_torch, save

SAFETENSORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                           "data", "safetensors")


def edges():
    tiny = [2.0 ** -149, 2.0 ** -133, 2.0 ** -134, 3 * 2.0 ** -134, 1e-40, 2.0 ** -126,
            2.0 ** -24, 2.0 ** -25, 1.5 * 2.0 ** -25, 3 * 2.0 ** -25, 2.0 ** -14, 1023.5 * 2.0 ** -24]
    ties = [1.00390625, 1.01171875, 1.0039063, 1.0078124, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
            257.0, 259.0, 2049.0, 1 / 3, math.pi, -3.75]
    large = [65504.0, 65519.996, 65520.0, 70000.0, 3.3895314e38, 3.3961773e38,
             3.3961776e38, 3.4028235e38]
    values = [math.nan, math.inf, -math.inf, 0.0, -0.0] + tiny + ties + large
    return torch.tensor(values + [-v for v in tiny + ties + large], dtype=torch.float32)


def random_floats():
    # Every magnitude float32 has: exponents from -149 to 127, both signs.
    g = torch.Generator().manual_seed(3)
    mantissa = torch.rand(400, generator=g, dtype=torch.float64) + 1
    exponent = torch.randint(-149, 128, (400,), generator=g, dtype=torch.int64)
    sign = torch.randint(0, 2, (400,), generator=g) * 2 - 1
    return (sign * mantissa * torch.pow(2.0, exponent.double())).float()


def autocast_linear(g):
    x, w = torch.randn(4, 6), torch.randn(5, 6)
    bias, r = torch.randn(5), torch.rand(4, 5) + 0.5
    x.requires_grad_(), w.requires_grad_(), bias.requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = F.linear(x, w, bias)
    (y.float() * r).sum().backward()
    g.add("autocast_linear", {"x": x, "w": w, "bias": bias, "r": r},
          {"y": y, "grad_x": x.grad, "grad_w": w.grad, "grad_bias": bias.grad})


def main():
    g = GoldenFile("bf16", seed=0)
    for name, x in [("cast_edges", edges()), ("cast_random", random_floats())]:
        g.add(name, {"x": x}, {"bfloat16": x.to(torch.bfloat16), "float16": x.to(torch.float16)})
    a = torch.randn(2, 5, 24).to(torch.bfloat16)
    b = torch.randn(24, 7).to(torch.bfloat16)
    g.add("matmul", {"a": a, "b": b},
          {"float32": torch.matmul(a.float(), b.float()), "bfloat16": torch.matmul(a, b)})
    autocast_linear(g)
    g.write()
    w = (torch.randn(3, 4) * 100).to(torch.bfloat16)
    w[0, :4] = torch.tensor([-0.0, float("inf"), 2.0 ** -133, 1 / 3])
    h = (torch.randn(5) * 100).to(torch.float16)
    h[0] = 2.0 ** -24
    path = os.path.join(SAFETENSORS, "torch_bf16.safetensors")
    save(path, {"w": w, "w_f32": w.float(), "h": h, "h_f32": h.float()})
    back, _ = load_torch(path)
    assert back["w"].dtype == torch.bfloat16 and torch.equal(back["w"], w)
    assert back["h"].dtype == torch.float16 and torch.equal(back["h"], h)


def roundtrip(source, target):
    tensors, _ = load_torch(source)
    w, h = tensors["w"], tensors["h"]
    assert w.dtype == torch.bfloat16, w.dtype
    assert h.dtype == torch.float16, h.dtype
    save(target, {"w": w, "h": h, "w_f32": w.float(), "h_f32": h.float(),
                  "w_twice": (w.float() * 2).to(torch.bfloat16)})
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--roundtrip":
        sys.exit(roundtrip(sys.argv[2], sys.argv[3]))
    main()
