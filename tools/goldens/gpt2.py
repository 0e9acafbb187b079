"""Goldens for models::Gpt2 (tests/models/gpt2_model_test.cc) in a
configuration the transformers fixture (tests/data/hf_gpt2_tiny) does not
cover: odd heads (n_embd 30, n_head 5), n_inner 70, layer_norm_epsilon 1e-3
and the exact GELU (activation_function "gelu"). The model is GPT-2 as
transformers' modeling_gpt2 computes it (Conv1D: x @ W + b with W stored
(in, out); q, k, v packed along c_attn's output; pre-norm blocks; the head
tied to wte), written here in PyTorch. Under tests/data/goldens/gpt2_odd/,
as a Hugging Face directory and its fixture:
  config.json, model.safetensors   GPT2LMHeadModel's layout and names
  forward_backward.safetensors     input_ids, labels (-100 ignored), logits,
                                   loss (HF's shifted mean) and grad.<name>

    /usr/bin/python3 tools/goldens/gpt2.py                   # write the goldens
    /usr/bin/python3 tools/goldens/gpt2.py --check-fixture   # this reference
      on the transformers fixture tests/data/hf_gpt2_tiny: its logits, loss and
      gradients within 1e-5, 1e-6 and 1e-4 (relative) of transformers'.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from safetensors_io import load, save

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "tests", "data")
OUT = os.path.join(DATA, "goldens", "gpt2_odd")
FIXTURE = os.path.join(DATA, "hf_gpt2_tiny")
ACTIVATIONS = {"gelu": F.gelu, "gelu_new": lambda x: F.gelu(x, approximate="tanh")}
CONFIG = {"model_type": "gpt2", "vocab_size": 50, "n_positions": 12, "n_embd": 30,
          "n_head": 5, "n_layer": 2, "n_inner": 70, "layer_norm_epsilon": 1e-3,
          "activation_function": "gelu", "tie_word_embeddings": True}


class Conv1D(torch.nn.Module):
    def __init__(self, nx, nf):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(nx, nf) * 0.2)
        self.bias = torch.nn.Parameter(torch.empty(nf).uniform_(-0.3, 0.3))

    def forward(self, x):
        return x @ self.weight + self.bias


class Attention(torch.nn.Module):
    def __init__(self, e, heads):
        super().__init__()
        self.heads = heads
        self.c_attn, self.c_proj = Conv1D(e, 3 * e), Conv1D(e, e)

    def forward(self, x):
        B, T, E = x.shape
        q, k, v = (t.reshape(B, T, self.heads, -1).transpose(1, 2)
                   for t in self.c_attn(x).split(E, dim=2))
        w = q @ k.transpose(-1, -2) / math.sqrt(E // self.heads)
        w = w.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        return self.c_proj((w.softmax(-1) @ v).transpose(1, 2).reshape(B, T, E))


class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        e = c["n_embd"]
        self.ln_1 = torch.nn.LayerNorm(e, eps=c["layer_norm_epsilon"])
        self.attn = Attention(e, c["n_head"])
        self.ln_2 = torch.nn.LayerNorm(e, eps=c["layer_norm_epsilon"])
        self.mlp = torch.nn.Module()
        inner = c.get("n_inner") or 4 * e
        self.mlp.c_fc, self.mlp.c_proj = Conv1D(e, inner), Conv1D(inner, e)
        self.act = ACTIVATIONS[c["activation_function"]]

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp.c_proj(self.act(self.mlp.c_fc(self.ln_2(x))))


class Gpt2(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = torch.nn.Module()
        t = self.transformer
        t.wte = torch.nn.Embedding(c["vocab_size"], c["n_embd"])
        t.wpe = torch.nn.Embedding(c["n_positions"], c["n_embd"])
        t.h = torch.nn.ModuleList(Block(c) for _ in range(c["n_layer"]))
        t.ln_f = torch.nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        with torch.no_grad():
            for name, p in self.named_parameters():
                if "ln_" in name:  # LayerNorms away from 1 and 0
                    p.uniform_(0.7, 1.3) if name.endswith("weight") else p.uniform_(-0.3, 0.3)

    def forward(self, ids):
        t = self.transformer
        x = t.wte(ids) + t.wpe(torch.arange(ids.shape[1]))
        for block in t.h:
            x = block(x)
        return t.ln_f(x) @ t.wte.weight.T


def forward_backward(model, ids, labels):
    logits = model(ids)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                           labels[:, 1:].reshape(-1), ignore_index=-100)
    loss.backward()
    expected = {"input_ids": ids.numpy(), "labels": labels.numpy(),
                "logits": logits.detach().numpy(), "loss": loss.detach().reshape(1).numpy()}
    for name, p in model.named_parameters():
        expected["grad." + name] = p.grad.numpy()
    return expected


def main():
    torch.manual_seed(40)
    model = Gpt2(CONFIG)
    ids = torch.randint(0, CONFIG["vocab_size"], (2, CONFIG["n_positions"]))
    labels = ids.clone()
    labels[1, :4] = -100
    expected = forward_backward(model, ids, labels)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2, sort_keys=True)
        f.write("\n")
    save(os.path.join(OUT, "model.safetensors"),
         {name: p.detach().numpy() for name, p in model.named_parameters()}, {"format": "pt"})
    save(os.path.join(OUT, "forward_backward.safetensors"), expected)
    print("wrote", OUT)


def check_fixture():
    with open(os.path.join(FIXTURE, "config.json")) as f:
        model = Gpt2(json.load(f))
    weights, _ = load(os.path.join(FIXTURE, "model.safetensors"))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
    want, _ = load(os.path.join(FIXTURE, "forward_backward.safetensors"))
    got = forward_backward(model, torch.from_numpy(want["input_ids"]),
                           torch.from_numpy(want["labels"]))
    worst = 0.0
    for name, value in got.items():
        error = abs(value - want[name]).max()
        bound = 1e-5 if name == "logits" else 1e-6 if name == "loss" else 0
        if name.startswith("grad."):
            error, bound = error / abs(want[name]).max(), 1e-4
        print(f"{name}: {error:.3g}")
        worst = max(worst, error / bound) if bound else worst
    return 0 if worst <= 1 else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--check-fixture"]:
        sys.exit(check_fixture())
    main()
