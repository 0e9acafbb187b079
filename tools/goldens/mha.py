"""Goldens for dagrad's MultiHeadAttention from torch.nn.MultiheadAttention
(dropout 0): outputs, attention weights, and the gradients of
sum(output * R) with respect to the inputs and every parameter, for each
option (add_bias_kv, add_zero_attn, batch_first, kdim/vdim) alone and
combined with the masks.

Masks are stored as PyTorch takes them (bool: True = masked out; float:
added to the scores); the C++ test converts them with dagrad's converters
(KeepFromKeyPaddingMask, KeepFromAttnMask, BiasFromAttnMask,
BiasFromKeyPaddingMask). Inputs are stored in the case's layout: (T, B, E)
when batch_first is false. Every random draw is seeded from the case's
name, so a rerun writes the same bytes.

    /usr/bin/python3 tools/goldens/mha.py
"""
import zlib

import torch
from torch import nn

from golden_io import GoldenFile

B, T, S, E, H = 2, 5, 7, 16, 4


def case(out, name, *, kdim=None, vdim=None, self_attn=True, kpm=None, attn_mask=None,
         need_weights=False, average=True, lengths=None, add_bias_kv=False,
         add_zero_attn=False, batch_first=True):
    torch.manual_seed(zlib.crc32(name.encode()))
    mha = nn.MultiheadAttention(E, H, dropout=0.0, batch_first=batch_first, kdim=kdim,
                                vdim=vdim, add_bias_kv=add_bias_kv,
                                add_zero_attn=add_zero_attn)
    with torch.no_grad():  # non-zero biases, so their gradients and values matter
        for pname, p in mha.named_parameters():
            if pname.endswith("bias"):
                p.uniform_(-0.5, 0.5)
    src = T if self_attn else S

    def layout(length, width):  # an input of the case's layout
        dims = (B, length, width) if batch_first else (length, B, width)
        return torch.randn(*dims, requires_grad=True)

    query = layout(T, E)
    if self_attn:
        key = value = query
    else:
        key = layout(src, kdim or E)
        value = layout(src, vdim or E)
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
                                    "average": average, "add_bias_kv": add_bias_kv,
                                    "add_zero_attn": add_zero_attn,
                                    "batch_first": batch_first})


def masks(name):
    """The masks of the option cases, drawn from a generator seeded by `name`:
    lengths (B), bool and float key padding (B, S), bool and float attention
    masks of both shapes, and lengths per query (B, T) with their bool
    (B*H, T, S) equivalent."""
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    m = {}
    m["lengths"] = torch.tensor([7, 3])
    m["kpm"] = torch.arange(S)[None, :] >= m["lengths"][:, None]
    kpm_float = torch.randn(B, S, generator=gen)
    m["kpm_float"] = kpm_float.masked_fill(m["kpm"], float("-inf"))
    m["bool_2d"] = torch.rand(T, S, generator=gen) < 0.3
    m["bool_3d"] = torch.rand(B * H, T, S, generator=gen) < 0.4
    m["bool_3d"][:3, 1, :] = True  # whole rows masked: only the appended keys remain
    m["float_2d"] = torch.randn(T, S, generator=gen)
    m["float_3d"] = torch.randn(B * H, T, S, generator=gen).masked_fill(
        torch.rand(B * H, T, S, generator=gen) < 0.2, float("-inf"))
    m["float_3d"][:, :, 0] = 0.5  # a finite key in every row (no NaN without appended keys)
    m["lengths_2d"] = torch.randint(1, S + 1, (B, T), generator=gen)
    per_query = torch.arange(S)[None, None, :] >= m["lengths_2d"][:, :, None]  # (B, T, S)
    m["lengths_2d_mask"] = per_query[:, None].expand(B, H, T, S).reshape(B * H, T, S)
    return m


def option_cases(out):
    """Each new option alone and with the masks; kdim != vdim; both weights."""
    case(out, "bias_kv", add_bias_kv=True)
    case(out, "zero_attn", self_attn=False, add_zero_attn=True)
    case(out, "bias_kv_zero_attn", self_attn=False, add_bias_kv=True, add_zero_attn=True)
    case(out, "seq_first", self_attn=False, batch_first=False, need_weights=True)
    case(out, "seq_first_self", batch_first=False)
    m = masks("float_mask_3d")
    case(out, "float_mask_3d", self_attn=False, attn_mask=m["float_3d"])
    m = masks("float_key_padding")
    case(out, "float_key_padding", self_attn=False, kpm=m["kpm_float"])
    m = masks("bias_kv_key_padding")
    case(out, "bias_kv_key_padding", self_attn=False, add_bias_kv=True, kpm=m["kpm"],
         lengths=m["lengths"], need_weights=True, average=False)
    m = masks("zero_attn_float_key_padding")
    case(out, "zero_attn_float_key_padding", self_attn=False, add_zero_attn=True,
         kpm=m["kpm_float"], need_weights=True, average=True)
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    case(out, "bias_kv_zero_attn_causal", add_bias_kv=True, add_zero_attn=True,
         attn_mask=causal, need_weights=True, average=False)
    m = masks("bias_kv_bool_mask_2d")
    case(out, "bias_kv_bool_mask_2d", self_attn=False, add_bias_kv=True,
         attn_mask=m["bool_2d"], kpm=m["kpm"])
    m = masks("zero_attn_bool_mask_3d")
    case(out, "zero_attn_bool_mask_3d", self_attn=False, add_zero_attn=True,
         attn_mask=m["bool_3d"], need_weights=True, average=False)
    m = masks("bias_kv_float_mask_2d")
    case(out, "bias_kv_float_mask_2d", self_attn=False, add_bias_kv=True,
         attn_mask=m["float_2d"], kpm=m["kpm"])
    m = masks("zero_attn_float_mask_3d_kdim_vdim")
    case(out, "zero_attn_float_mask_3d_kdim_vdim", self_attn=False, kdim=12, vdim=10,
         add_zero_attn=True, attn_mask=m["float_3d"], kpm=m["kpm"], need_weights=True,
         average=True)
    m = masks("all_options_seq_first")
    case(out, "all_options_seq_first", self_attn=False, kdim=12, vdim=10, add_bias_kv=True,
         add_zero_attn=True, batch_first=False, attn_mask=m["bool_3d"], kpm=m["kpm"],
         lengths=m["lengths"], need_weights=True, average=False)
    m = masks("bias_kv_lengths_per_query")
    inputs = {"attn_mask": m["lengths_2d_mask"], "lengths": m["lengths_2d"]}
    case(out, "bias_kv_lengths_per_query", self_attn=False, add_bias_kv=True, **inputs,
         need_weights=True, average=True)
    m = masks("seq_first_bias_kv_float_mask_3d")
    case(out, "seq_first_bias_kv_float_mask_3d", self_attn=False, batch_first=False,
         add_bias_kv=True, attn_mask=m["float_3d"], need_weights=True, average=False)


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
    option_cases(out)
    out.write()


if __name__ == "__main__":
    main()
