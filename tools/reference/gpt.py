"""The PyTorch twin of dagrad's models::Gpt (models/gpt/gpt.h): a small decoder-only
(causal) language model with the same function, parameter names, initialisation
and checkpoint layout, so that a dagrad checkpoint loads here and gives the same
logits, and a checkpoint saved here loads into dagrad.

Model, for tokens (B, T) int64 with T <= block_size (batch-first, pre-norm):
    x = wte(tokens) + wpe(arange(T));  x = drop(x)
    each block:  x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))
        attn: c_attn gives q, k, v (in that order along the last axis); heads split;
              causal softmax(q k^T / sqrt(dh)); attn_dropout; heads merged; c_proj;
              resid_dropout
        mlp:  dropout(c_proj(gelu(c_fc(x))))   exact GELU, width 4 x dim
    logits = ln_f(x) @ wte.weight^T      lm_head IS transformer.wte.weight (tied)
LayerNorm eps 1e-5. Init (GPT-2's): matrices N(0, 0.02), c_proj.weight
N(0, 0.02 / sqrt(2 layers)), biases 0, LayerNorm weight 1 and bias 0.

Checkpoints are safetensors (tools/goldens/safetensors_io.py) holding the state
dict without lm_head.weight (the tied weight is stored once, as
transformer.wte.weight) and the metadata model=gpt, vocab, block_size, dim,
heads, layers, dropout (strings), as dagrad writes them.

    model = GPT(vocab=256, block_size=64, dim=128, heads=4, layers=4)
    save_checkpoint(model, "model.safetensors")
    model = load_checkpoint("model.safetensors")      # a GPT built from the metadata

Run with /usr/bin/python3 (PyTorch 1.13).
"""
import math
import os
import sys

import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "goldens"))
import safetensors_io  # noqa: E402


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        assert dim % heads == 0, (dim, heads)
        self.heads = heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.heads)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        weights = F.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        y = (self.attn_dropout(weights) @ v).transpose(1, 2).reshape(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, dim, dropout):
        super().__init__()
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * dim, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, dropout)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab=256, block_size=64, dim=128, heads=4, layers=4, dropout=0.0):
        super().__init__()
        self.config = dict(vocab=vocab, block_size=block_size, dim=dim, heads=heads,
                           layers=layers, dropout=dropout)
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, dim),
            wpe=nn.Embedding(block_size, dim),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block(dim, heads, dropout) for _ in range(layers)]),
            ln_f=nn.LayerNorm(dim),
        ))
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # one parameter, two uses
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))
            elif p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, tokens):
        B, T = tokens.shape
        assert T <= self.config["block_size"], (T, self.config["block_size"])
        positions = torch.arange(T, device=tokens.device)
        x = self.transformer.drop(self.transformer.wte(tokens) + self.transformer.wpe(positions))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))

    def metadata(self):
        """The checkpoint metadata dagrad reads (models::GptConfig::FromMetadata)."""
        return {"model": "gpt", **{k: str(v) for k, v in self.config.items()}}

    @staticmethod
    def from_metadata(metadata):
        assert metadata.get("model") == "gpt", metadata
        ints = {k: int(metadata[k]) for k in ("vocab", "block_size", "dim", "heads", "layers")}
        return GPT(**ints, dropout=float(metadata.get("dropout", 0)))

    @torch.no_grad()
    def generate_greedy(self, tokens, n):
        """Appends n greedy tokens to tokens (B, T), the context sliding at block_size."""
        for _ in range(n):
            logits = self(tokens[:, -self.config["block_size"]:])[:, -1]
            tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=1)
        return tokens


def checkpoint_tensors(model):
    """The state dict as a checkpoint stores it: the tied head once."""
    return {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()
            if k != "lm_head.weight"}


def save_checkpoint(model, path):
    safetensors_io.save(path, checkpoint_tensors(model), metadata=model.metadata())


def load_tensors(model, tensors):
    """Loads a checkpoint's tensors (name -> numpy array) into model, all of them."""
    state = {k: torch.from_numpy(v) for k, v in tensors.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert missing == ["lm_head.weight"] and not unexpected, (missing, unexpected)


def load_checkpoint(path):
    """A GPT built from a checkpoint's metadata, holding its weights (eval mode)."""
    tensors, metadata = safetensors_io.load(path)
    model = GPT.from_metadata(metadata)
    load_tensors(model, tensors)
    return model.eval()
