"""Loads a dagrad model.safetensors into the PyTorch reference with
load_state_dict(strict=True) and checks that its logits equal the ones
`dagrad eval` wrote for the same input.

    /usr/bin/python3 tools/goldens/check_interop.py MODEL IN OUT
    (OUT: the output of `dagrad eval --checkpoint=MODEL --input=IN --output=OUT`)
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "shared", "reference"))
from safetensors_io import load  # noqa: E402
from toy_transformer import from_metadata  # noqa: E402


def main(model_path, input_path, output_path):
    weights, meta = load(model_path)
    model = from_metadata(meta)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=True)
    model.eval()
    inputs, _ = load(input_path)
    lengths = torch.from_numpy(inputs["lengths"]) if "lengths" in inputs else None
    with torch.enable_grad():  # keeps PyTorch off its fused inference path
        logits = model(torch.from_numpy(inputs["tokens"]), lengths).detach().numpy()
    dagrad, _ = load(output_path)
    err = np.max(np.abs(logits - dagrad["logits"])) / max(1e-12, np.max(np.abs(logits)))
    print(f"strict load ok; max |torch - dagrad| / max |torch| = {err:.2e}")
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
