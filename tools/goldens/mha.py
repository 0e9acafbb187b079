"""Goldens for dagrad's MultiHeadAttention from torch.nn.MultiheadAttention
(batch_first=True, dropout 0): outputs, attention weights, and the
gradients of sum(output * R) with respect to the inputs and every parameter.

Masks are stored in PyTorch's polarity (True = masked out); the C++ test
converts them to dagrad's keep-masks (True = may attend).

    /usr/bin/python3 tools/goldens/mha.py
"""
import zlib

import torch
from torch import nn

from golden_io import GoldenFile

B, T, S, E, H = 2, 5, 7, 16, 4


def case(out, name, *, kdim=None, vdim=None, self_attn=True, kpm=None, attn_mask=None,
         need_weights=False, average=True, lengths=None):
    torch.manual_seed(zlib.crc32(name.encode()))
    mha = nn.MultiheadAttention(E, H, dropout=0.0, batch_first=True, kdim=kdim, vdim=vdim)
    with torch.no_grad():  # non-zero biases, so their gradients and values matter
        for pname, p in mha.named_parameters():
            if pname.endswith("bias"):
                p.uniform_(-0.5, 0.5)
    src = T if self_attn else S
    query = torch.randn(B, T, E, requires_grad=True)
    if self_attn:
        key = value = query
    else:
        key = torch.randn(B, src, kdim or E, requires_grad=True)
        value = torch.randn(B, src, vdim or E, requires_grad=True)
    y, w = mha(query, key, value, key_padding_mask=kpm, attn_mask=attn_mask,
               need_weights=need_weights, average_attn_weights=average)
    r = torch.randn_like(y)
    (y * r).sum().backward()
    inputs = {"query": query.detach(), "r": r}
    if not self_attn:
        inputs["key"] = key.detach()
        inputs["value"] = value.detach()
    if kpm is not None:
        inputs["key_padding_mask"] = kpm
    if attn_mask is not None:
        inputs["attn_mask"] = attn_mask
    if lengths is not None:
        inputs["lengths"] = lengths
    for pname, p in mha.named_parameters():
        inputs[pname] = p.detach()
    outputs = {"output": y.detach(), "grad.query": query.grad}
    if not self_attn:
        outputs["grad.key"] = key.grad
        outputs["grad.value"] = value.grad
    if w is not None:
        outputs["weights"] = w.detach()
    for pname, p in mha.named_parameters():
        outputs["grad." + pname] = p.grad
    out.add(name, inputs, outputs, {"E": E, "H": H, "kdim": kdim or E, "vdim": vdim or E,
                                    "self_attn": self_attn, "need_weights": need_weights,
                                    "average": average})


def main():
    out = GoldenFile("mha")
    case(out, "self_attention")
    case(out, "cross_attention", self_attn=False)
    case(out, "kdim_vdim", self_attn=False, kdim=12, vdim=10)
    lengths = torch.tensor([7, 4])
    kpm = torch.arange(S)[None, :] >= lengths[:, None]
    case(out, "key_padding", self_attn=False, kpm=kpm, lengths=lengths)
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    case(out, "causal", attn_mask=causal)
    per_head = torch.rand(B * H, T, S) < 0.3
    per_head[:, :, 0] = False  # every query keeps at least one key (torch would give NaN)
    case(out, "mask_3d_per_head", self_attn=False, attn_mask=per_head)
    bias = torch.randn(T, S)
    case(out, "additive_bias", self_attn=False, attn_mask=bias)
    case(out, "weights_per_head", self_attn=False, kpm=kpm, lengths=lengths, need_weights=True,
         average=False)
    case(out, "weights_averaged", self_attn=False, kpm=kpm, lengths=lengths, need_weights=True,
         average=True)
    out.write()


if __name__ == "__main__":
    main()
