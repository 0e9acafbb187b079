"""Goldens for dagrad's optimizers from torch.optim (SGD, Adam, AdamW) with
gradient clipping, over three steps of loss = sum(w1 * a) + sum(w2^2 * b).

    /usr/bin/python3 tools/goldens/optim.py
"""
import torch

from golden_io import GoldenFile

LRS = [0.1, 0.05, 0.02]


def run(name, make_opt, clip, out):
    torch.manual_seed(1)
    w1 = torch.randn(3, 4, dtype=torch.float64)
    w2 = torch.randn(5, dtype=torch.float64)
    a = torch.randn(3, 4, dtype=torch.float64)
    b = torch.rand(5, dtype=torch.float64) + 0.5
    inputs = {"w1": w1.clone(), "w2": w2.clone(), "a": a, "b": b}
    p1, p2 = w1.clone().requires_grad_(), w2.clone().requires_grad_()
    opt = make_opt([p1, p2])
    outputs = {}
    for step, lr in enumerate(LRS, start=1):
        for group in opt.param_groups:
            group["lr"] = lr
        opt.zero_grad()
        loss = (p1 * a).sum() + (p2 * p2 * b).sum()
        loss.backward()
        if clip > 0:
            norm = torch.nn.utils.clip_grad_norm_([p1, p2], clip)
            outputs[f"grad_norm_{step}"] = norm.detach().reshape(())
        opt.step()
        outputs[f"w1_{step}"] = p1.detach().clone()
        outputs[f"w2_{step}"] = p2.detach().clone()
    out.add(name, inputs, outputs, {"clip": clip, "lrs": LRS})


def main():
    out = GoldenFile("optim")
    run("sgd_momentum", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
        0.0, out)
    run("sgd_nesterov_clip",
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.8, nesterov=True), 0.5, out)
    run("sgd_plain", lambda p: torch.optim.SGD(p, lr=0.1), 0.0, out)
    run("adam_l2", lambda p: torch.optim.Adam(p, lr=0.1, weight_decay=0.01), 0.0, out)
    run("adam_clip", lambda p: torch.optim.Adam(p, lr=0.1, betas=(0.8, 0.99), eps=1e-6), 1.0,
        out)
    run("adamw", lambda p: torch.optim.AdamW(p, lr=0.1, weight_decay=0.1), 0.0, out)
    out.write()


if __name__ == "__main__":
    main()
