"""Goldens for dagrad's masked softmax (ops/softmax.h), from PyTorch.

Run: /usr/bin/python3 tools/goldens/softmax.py  ->  tests/data/goldens/softmax.json

Torch has no fused masked softmax, so every mask kind is emulated the usual
way: the masked positions of z = scale * scores + bias are filled with -inf,
then torch.softmax. dagrad's conventions, which the emulation follows:
  - keep: bool, True = may attend (PyTorch's key_padding_mask is the
    opposite);
  - valid_lens (B) or (B, Q): positions k >= valid_len are masked;
  - causal with causal_offset: positions k > q + causal_offset are masked.
A row with every position masked is NaN in torch (1.13); dagrad defines it
as zeros, so NaN outputs are replaced by 0 in the golden (only the case
"fully_masked" has such rows). Gradients need no such fix: masked_fill's
backward already zeroes the gradient at every masked position.

Each case stores the inputs (float64), the upstream gradient "g", the output
"y" and the gradients "dscores" (and "dbias") of sum(y * g).
"""
import torch

from golden_io import GoldenFile


def masked_softmax(scores, keep=None, valid_lens=None, bias=None, causal=False,
                   causal_offset=0, scale=1.0):
    z = scores * scale
    if bias is not None:
        z = z + bias
    q_size, k_size = scores.shape[-2], scores.shape[-1]
    masked = torch.zeros(scores.shape, dtype=torch.bool)
    k = torch.arange(k_size)
    if keep is not None:
        masked |= ~keep.expand(scores.shape)
    if valid_lens is not None:
        b_size = scores.shape[0]
        if valid_lens.dim() == 1:
            lens = valid_lens.reshape(b_size, *([1] * (scores.dim() - 1)))
        else:
            lens = valid_lens.reshape(b_size, *([1] * (scores.dim() - 3)), q_size, 1)
        masked |= k >= lens
    if causal:
        q = torch.arange(q_size).reshape(q_size, 1)
        masked |= k > q + causal_offset
    return torch.softmax(z.masked_fill(masked, float("-inf")), dim=-1)


def main():
    f = GoldenFile("softmax", seed=1234)

    def add(name, shape, keep=None, valid_lens=None, bias_shape=None, causal=False,
            causal_offset=0, scale=1.0, allow_nan_rows=False):
        scores = (torch.randn(shape, dtype=torch.float64) * 3).requires_grad_()
        bias = None
        if bias_shape is not None:
            bias = torch.randn(bias_shape, dtype=torch.float64).requires_grad_()
        y = masked_softmax(scores, keep, valid_lens, bias, causal, causal_offset, scale)
        nan_rows = torch.isnan(y).any(dim=-1)
        assert allow_nan_rows == bool(nan_rows.any()), name
        # torch 1.13 gives NaN for fully masked rows; dagrad gives zeros.
        y_fixed = torch.nan_to_num(y.detach(), nan=0.0)
        g = torch.randn(shape, dtype=torch.float64)
        # sum(y * g) with NaN rows dropped: their gradient is zero either way.
        (torch.where(nan_rows.unsqueeze(-1), torch.zeros_like(y), y) * g).sum().backward()
        inputs = {"scores": scores, "g": g}
        outputs = {"y": y_fixed, "dscores": scores.grad}
        if keep is not None:
            inputs["keep"] = keep
        if valid_lens is not None:
            inputs["valid_lens"] = valid_lens
        if bias is not None:
            inputs["bias"] = bias
            outputs["dbias"] = bias.grad
        for t in outputs.values():
            assert not torch.isnan(t).any(), name
        f.add(name, inputs, outputs,
              {"causal": causal, "causal_offset": causal_offset, "scale": scale})

    add("plain", (2, 3, 5))
    add("keep_broadcast_over_heads", (2, 2, 3, 4),
        keep=torch.tensor([[[[True, False, True, True]]],
                           [[[False, True, True, False]]]]))
    add("keep_per_query", (2, 2, 3, 4), keep=torch.rand(2, 1, 3, 4) < 0.7)
    add("valid_lens_1d", (2, 2, 3, 5), valid_lens=torch.tensor([2, 5]))
    add("valid_lens_2d", (2, 2, 3, 5),
        valid_lens=torch.tensor([[1, 3, 5], [4, 2, 1]], dtype=torch.int32))
    add("causal", (2, 4, 4), causal=True)
    add("causal_offset", (2, 3, 5), causal=True, causal_offset=2)
    add("bias_and_scale", (2, 3, 4), bias_shape=(3, 4), scale=0.125)
    add("combined", (2, 2, 3, 6),
        keep=torch.tensor([[[[True, True, False, True, True, True]]],
                           [[[True, True, True, True, False, True]]]]),
        valid_lens=torch.tensor([[5, 6, 6], [4, 6, 3]]),
        bias_shape=(2, 1, 3, 6), causal=True, causal_offset=2, scale=0.5)
    # Rows masked entirely by each kind: keep (batch 0, query 1), a zero
    # valid length (batch 1), and causal with a negative offset (query 0).
    keep = torch.ones(3, 3, 4, dtype=torch.bool)
    keep[0, 1, :] = False
    add("fully_masked", (3, 3, 4), keep=keep, valid_lens=torch.tensor([4, 0, 3]),
        causal=True, causal_offset=-1, allow_nan_rows=True)
    f.write()


if __name__ == "__main__":
    main()
