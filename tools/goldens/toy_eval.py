"""Goldens for `dagrad eval` from the PyTorch reference toy model
(tools/bench/torch_cuda_anchor.py): a model file with state_dict names
and config metadata, an input file (tokens, lengths, targets), and the
expected output (logits, the mean cross-entropy over non-ignored targets,
and grad.<name> for every parameter), computed in eval mode (no dropout).

    /usr/bin/python3 tools/goldens/toy_eval.py
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
from safetensors_io import save  # noqa: E402
from torch_cuda_anchor import ToyTransformer  # noqa: E402

OUT = os.path.join(HERE, "..", "..", "tests", "data", "toy_eval")


def main():
    torch.manual_seed(7)
    config = dict(vocab=11, max_len=6, dim=16, heads=2, layers=2, ffn=24, dropout=0.1)
    model = ToyTransformer(**config)
    with torch.no_grad():  # non-trivial biases and norms, so every parameter matters
        for name, p in model.named_parameters():
            if not name.startswith("embedding") and p.dim() == 1:
                p.uniform_(-0.3, 0.3)
                if "norm" in name and name.endswith("weight"):
                    p.add_(1.0)
    model.eval()
    B, T = 3, 5
    tokens = torch.randint(1, config["vocab"], (B, T))
    lengths = torch.tensor([5, 3, 1])
    tokens[torch.arange(T)[None, :] >= lengths[:, None]] = 0
    targets = torch.randint(0, config["vocab"], (B, T))
    targets[torch.arange(T)[None, :] >= lengths[:, None]] = -100
    logits = model(tokens, lengths)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, config["vocab"]),
                                             targets.reshape(-1), ignore_index=-100)
    loss.backward()
    os.makedirs(OUT, exist_ok=True)
    meta = {k: str(v) for k, v in config.items()}
    save(os.path.join(OUT, "model.safetensors"),
         {k: v.detach().numpy() for k, v in model.state_dict().items()}, metadata=meta)
    save(os.path.join(OUT, "input.safetensors"),
         {"tokens": tokens.numpy(), "lengths": lengths.numpy(), "targets": targets.numpy()})
    expected = {"logits": logits.detach().numpy(), "loss": loss.detach().reshape(1).numpy()}
    for name, p in model.named_parameters():
        expected["grad." + name] = p.grad.numpy()
    save(os.path.join(OUT, "expected.safetensors"), expected)
    # Without lengths (no padding mask), logits only.
    with torch.no_grad():
        free = model(tokens)
    save(os.path.join(OUT, "input_no_lengths.safetensors"), {"tokens": tokens.numpy()})
    save(os.path.join(OUT, "expected_no_lengths.safetensors"), {"logits": free.numpy()})
    print("wrote", OUT)


if __name__ == "__main__":
    main()
