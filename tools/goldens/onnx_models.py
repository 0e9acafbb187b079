"""PyTorch models exported with torch.onnx.export (opset 17) for dagrad's
ONNX importer, with their goldens: nn.MultiheadAttention, a 2-layer
nn.TransformerEncoder and the GPT of tools/reference/gpt.py.

Each model is exported in eval mode with dropout 0, batch and sequence axes
symbolic (dynamic_axes) so that the file holds PyTorch's shape arithmetic,
and without constant folding so that the initializers keep their
state_dict names. The golden case of a model holds its inputs (by ONNX
input name), its output, and the gradients of sum(output * R) for a fixed
random R with respect to every parameter (as "grad.<state_dict name>") and
every float input, which the C++ test compares with dagrad's within 1e-4.

    /usr/bin/python3 tools/goldens/onnx_models.py
        -> tests/data/onnx/{mha,encoder,gpt}.onnx, tests/data/goldens/onnx_models.json
"""
import io
import os
import sys
import zlib

import torch
from torch import nn

from golden_io import GoldenFile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import gpt  # noqa: E402

ONNX_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                        "tests", "data", "onnx")
B, T, S, E, H, F = 2, 5, 4, 8, 2, 16


class SelfAttention(nn.Module):
    """nn.MultiheadAttention called on (query, key, value), output only."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(E, H, batch_first=True)

    def forward(self, query, key, value):
        return self.attn(query, key, value, need_weights=False)[0]


def seeded(name):
    torch.manual_seed(zlib.crc32(name.encode()))


def perturb(model):
    """Moves every parameter off its initial value: copies of one layer and
    LayerNorm's ones and zeros would otherwise be equal tensors, which the
    exporter merges into one initializer."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))


def export(model, name, inputs, dynamic_axes):
    """Writes tests/data/onnx/<name>.onnx and returns its bytes."""
    buffer = io.BytesIO()
    torch.onnx.export(model, tuple(inputs.values()), buffer, opset_version=17,
                      input_names=list(inputs), output_names=["output"],
                      dynamic_axes=dynamic_axes, do_constant_folding=False)
    os.makedirs(ONNX_DIR, exist_ok=True)
    with open(os.path.join(ONNX_DIR, name + ".onnx"), "wb") as f:
        f.write(buffer.getvalue())


def add_case(golden, name, model, inputs):
    """Adds the forward output and the gradients of sum(output * R)."""
    inputs = {k: v.detach().requires_grad_(v.is_floating_point()) for k, v in inputs.items()}
    output = model(*inputs.values())
    r = torch.randn(output.shape)
    (output * r).sum().backward()
    grads = {f"grad.{n}": p.grad for n, p in model.named_parameters()}
    grads.update({f"grad.{k}": v.grad for k, v in inputs.items() if v.is_floating_point()})
    golden.add(name, {**inputs, "R": r}, {"output": output, **grads})


def main():
    golden = GoldenFile("onnx_models")
    seq = {0: "batch", 1: "seq"}

    seeded("mha")
    mha = SelfAttention().eval()
    perturb(mha)
    inputs = {"query": torch.randn(B, T, E), "key": torch.randn(B, S, E),
              "value": torch.randn(B, S, E)}
    export(mha, "mha", inputs, {"query": seq, "key": seq, "value": seq, "output": seq})
    add_case(golden, "mha", mha, inputs)

    seeded("encoder")
    layer = nn.TransformerEncoderLayer(E, H, F, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    perturb(encoder)
    inputs = {"src": torch.randn(B, T, E)}
    export(encoder, "encoder", inputs, {"src": seq, "output": seq})
    add_case(golden, "encoder", encoder, inputs)

    seeded("gpt")
    model = gpt.GPT(vocab=11, block_size=8, dim=E, heads=H, layers=2).eval()
    perturb(model)
    inputs = {"tokens": torch.randint(0, 11, (B, T))}
    export(model, "gpt", inputs, {"tokens": seq, "output": seq})
    add_case(golden, "gpt", model, inputs)
    golden.write()


if __name__ == "__main__":
    main()
