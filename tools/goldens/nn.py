"""Goldens for dagrad::nn (models/nn/nn.h) from the torch.nn modules they twin:
Linear, Embedding, LayerNorm, timm's Mlp (ReLU, exact GELU, tanh GELU),
TransformerEncoderLayer in both norm orders and TransformerDecoderLayer
(cross-attention), all with dropout 0.

Each case stores the input x (and memory for cross-attention), R, every
parameter as "param.<state_dict name>", the output y and the gradients of
sum(y * R) with respect to the float inputs ("grad.x", "grad.memory") and
every parameter ("grad.<state_dict name>"). Attributes name the layer and
its options, so the C++ test builds the twin. Masks are stored as lengths
(keys at positions >= length are padding), which the test passes as
valid_lens and torch as key_padding_mask. Parameters that torch initialises
to constants (biases, norm weights) are perturbed, so that their values
matter. Every random draw is seeded from the case's name, so a rerun writes
the same bytes.

    /usr/bin/python3 tools/goldens/nn.py
"""
import zlib

import torch
import torch.nn.functional as F
from torch import nn

from golden_io import GoldenFile

B, T, S = 2, 5, 4

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu,
               "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}


class Mlp(nn.Module):
    """timm's Mlp without dropout: fc2(act(fc1(x)))."""

    def __init__(self, in_features, hidden, out_features, activation):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, out_features)
        self.act = ACTIVATIONS[activation]

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def seed(name):
    torch.manual_seed(zlib.crc32(name.encode()))


def perturb(module):
    """Moves the 1-D parameters (biases, norm weights) off their constants."""
    with torch.no_grad():
        for p in module.parameters():
            if p.dim() == 1:
                p.add_(torch.empty_like(p).uniform_(-0.5, 0.5))


def padding(lengths, length):
    """key_padding_mask (True = padding) for `lengths` over `length` keys."""
    return torch.arange(length)[None, :] >= lengths[:, None]


def record(out, name, module, inputs, y, attrs):
    """Backpropagates sum(y * R) and adds the case."""
    r = torch.randn_like(y)
    (y * r).sum().backward()
    stored = {k: v.detach() for k, v in inputs.items()}
    stored["r"] = r
    outputs = {"y": y.detach()}
    for k, v in inputs.items():
        if v.is_floating_point():
            outputs["grad." + k] = v.grad
    for pname, p in module.named_parameters():
        stored["param." + pname] = p.detach()
        outputs["grad." + pname] = p.grad
    out.add(name, stored, outputs, attrs)


def linear_case(out, name, shape, out_features, bias=True):
    seed(name)
    m = nn.Linear(shape[-1], out_features, bias=bias)
    perturb(m)
    x = torch.randn(*shape, requires_grad=True)
    record(out, name, m, {"x": x}, m(x), {"layer": "linear", "in": shape[-1],
                                          "out": out_features, "bias": bias})


def embedding_case(out, name):
    seed(name)
    m = nn.Embedding(7, 6)
    ids = torch.tensor([[0, 3, 3, 6, 1], [5, 0, 2, 3, 3]])
    record(out, name, m, {"x": ids}, m(ids), {"layer": "embedding", "num": 7, "dim": 6})


def layer_norm_case(out, name, affine, eps):
    seed(name)
    m = nn.LayerNorm(6, eps=eps, elementwise_affine=affine)
    perturb(m)
    x = (torch.randn(B, 3, 6) * 2 + 0.5).requires_grad_()
    record(out, name, m, {"x": x}, m(x), {"layer": "layer_norm", "dim": 6, "eps": eps,
                                          "affine": affine})


def mlp_case(out, name, activation):
    seed(name)
    m = Mlp(6, 10, 4, activation)
    perturb(m)
    x = torch.randn(B, 3, 6, requires_grad=True)
    record(out, name, m, {"x": x}, m(x), {"layer": "mlp", "in": 6, "hidden": 10, "out": 4,
                                          "activation": activation})


def block_case(out, name, *, norm_first, activation, cross=False, causal=False,
               lengths=None, memory_lengths=None):
    seed(name)
    E, H, FF, eps = 8, 2, 12, 1e-5
    layer = nn.TransformerDecoderLayer if cross else nn.TransformerEncoderLayer
    m = layer(E, H, dim_feedforward=FF, dropout=0.0, activation=ACTIVATIONS[activation],
              layer_norm_eps=eps, batch_first=True, norm_first=norm_first)
    perturb(m)
    x = torch.randn(B, T, E, requires_grad=True)
    inputs = {"x": x}
    causal_mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if causal else None
    kpm = None
    if lengths is not None:
        inputs["lengths"] = lengths
        kpm = padding(lengths, T)
    if cross:
        memory = torch.randn(B, S, E, requires_grad=True)
        inputs["memory"] = memory
        memory_kpm = None
        if memory_lengths is not None:
            inputs["memory_lengths"] = memory_lengths
            memory_kpm = padding(memory_lengths, S)
        y = m(x, memory, tgt_mask=causal_mask, tgt_key_padding_mask=kpm,
              memory_key_padding_mask=memory_kpm)
    else:
        y = m(x, src_mask=causal_mask, src_key_padding_mask=kpm)
    record(out, name, m, inputs, y,
           {"layer": "block", "d_model": E, "nhead": H, "dim_feedforward": FF, "eps": eps,
            "norm_first": norm_first, "activation": activation, "cross": cross,
            "causal": causal})


def main():
    out = GoldenFile("nn")
    linear_case(out, "linear", (B, 3, 5), 4)
    linear_case(out, "linear_no_bias", (4, 5), 3, bias=False)
    embedding_case(out, "embedding")
    layer_norm_case(out, "layer_norm", affine=True, eps=1e-5)
    layer_norm_case(out, "layer_norm_no_affine", affine=False, eps=1e-3)
    for activation in ("relu", "gelu", "gelu_tanh"):
        mlp_case(out, "mlp_" + activation, activation)
    lengths = torch.tensor([5, 3])
    block_case(out, "block_post_norm_relu", norm_first=False, activation="relu",
               lengths=lengths)
    block_case(out, "block_pre_norm_gelu_causal", norm_first=True, activation="gelu",
               causal=True)
    block_case(out, "block_pre_norm_gelu_tanh", norm_first=True, activation="gelu_tanh",
               lengths=lengths)
    block_case(out, "block_cross_post_norm", norm_first=False, activation="relu", cross=True,
               causal=True, memory_lengths=torch.tensor([4, 2]))
    block_case(out, "block_cross_pre_norm", norm_first=True, activation="gelu", cross=True,
               lengths=lengths, memory_lengths=torch.tensor([3, 4]))
    out.write()


if __name__ == "__main__":
    main()
