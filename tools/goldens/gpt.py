"""Goldens for models::Gpt (tests/models/gpt_test.cc) from the reference model
tools/reference/gpt.py, under tests/data/goldens/gpt/:
  model.safetensors     a checkpoint written by the reference (save_checkpoint):
                        the tied weight once, metadata model=gpt and the config
  input.safetensors     tokens int64 (B, T) and targets int64 (B, T), -100 ignored
  expected.safetensors  logits (B, T, vocab), loss (1,) the mean cross-entropy
                        over non-ignored targets, and grad.<name> for every
                        checkpoint tensor (the tied weight's: both uses summed),
                        all in eval mode (no dropout); greedy (B, T + 12) the
                        reference's greedy continuation of tokens
Parameters are perturbed from the GPT-2 init (biases and norms non-trivial) so
that every one of them matters.

    /usr/bin/python3 tools/goldens/gpt.py                     # write the goldens
    /usr/bin/python3 tools/goldens/gpt.py --check CKPT OUT    # a dagrad checkpoint
      CKPT and the `dagrad eval` output OUT for input.safetensors: loads CKPT
      with the reference and checks its logits against OUT's within 1e-4.
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import gpt as reference  # noqa: E402
from safetensors_io import load, save  # noqa: E402

OUT = os.path.join(HERE, "..", "..", "tests", "data", "goldens", "gpt")
CONFIG = dict(vocab=256, block_size=8, dim=16, heads=2, layers=2, dropout=0.1)
GREEDY_TOKENS = 12


def make_model():
    torch.manual_seed(15)
    model = reference.GPT(**CONFIG)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.uniform_(-0.3, 0.3)
                if "ln_" in name and name.endswith("weight"):
                    p.add_(1.0)
            else:
                p.mul_(10.0)  # larger than GPT-2's init: attention far from uniform
    return model.eval()


def main():
    model = make_model()
    B, T = 3, 6
    tokens = torch.randint(0, CONFIG["vocab"], (B, T))
    targets = torch.randint(0, CONFIG["vocab"], (B, T))
    targets[0, 1] = targets[2, 4] = targets[2, 5] = -100
    logits = model(tokens)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, CONFIG["vocab"]),
                                             targets.reshape(-1), ignore_index=-100)
    loss.backward()
    os.makedirs(OUT, exist_ok=True)
    reference.save_checkpoint(model, os.path.join(OUT, "model.safetensors"))
    save(os.path.join(OUT, "input.safetensors"),
         {"tokens": tokens.numpy(), "targets": targets.numpy()})
    expected = {"logits": logits.detach().numpy(), "loss": loss.detach().reshape(1).numpy(),
                "greedy": model.generate_greedy(tokens, GREEDY_TOKENS).numpy()}
    for name, p in model.named_parameters():  # the tied weight once, as wte
        expected["grad." + name] = p.grad.numpy()
    save(os.path.join(OUT, "expected.safetensors"), expected)
    print("wrote", OUT)


def check(checkpoint, output):
    model = reference.load_checkpoint(checkpoint)
    inputs, _ = load(os.path.join(OUT, "input.safetensors"))
    with torch.no_grad():
        logits = model(torch.from_numpy(inputs["tokens"])).numpy()
    theirs, _ = load(output)
    error = np.abs(logits - theirs["logits"]).max() / max(1e-6, np.abs(logits).max())
    print("max relative logits difference", error)
    return 0 if error <= 1e-4 else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2], sys.argv[3]))
    main()
