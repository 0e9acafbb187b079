"""Goldens for dagrad's optimizers from torch.optim (SGD, Adam, AdamW) with
gradient clipping and parameter groups (each with its own weight decay and
a learning-rate scale, "lr_scale", that multiplies the step's rate), over
three steps of loss = sum(w1 * a) + sum(w2^2 * b); AdamW with clipping
over batches of varying size (one optimizer, as a ShapeFamily trains with
one step per shape), and with gradients accumulated over micro-batches;
and torch.nn.utils.clip_grad_norm_ on its own.

    /usr/bin/python3 tools/goldens/optim.py
"""
import torch

from golden_io import GoldenFile

LRS = [0.1, 0.05, 0.02]


def run(name, make_opt, clip, out, dtype=torch.float64):
    torch.manual_seed(1)
    w1 = torch.randn(3, 4, dtype=dtype)
    w2 = torch.randn(5, dtype=dtype)
    a = torch.randn(3, 4, dtype=dtype)
    b = torch.rand(5, dtype=dtype) + 0.5
    inputs = {"w1": w1.clone(), "w2": w2.clone(), "a": a, "b": b}
    p1, p2 = w1.clone().requires_grad_(), w2.clone().requires_grad_()
    opt = make_opt([p1, p2])
    outputs = {}
    for step, lr in enumerate(LRS, start=1):
        for group in opt.param_groups:
            group["lr"] = lr * group.get("lr_scale", 1.0)
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
    # Groups: w1 (a matrix) decayed, w2 (a vector) not, as DecayMatrices.
    run("adamw_decay_matrices",
        lambda p: torch.optim.AdamW([{"params": [p[0]], "weight_decay": 0.1},
                                     {"params": [p[1]], "weight_decay": 0.0}], lr=0.1), 0.0, out)
    run("adam_groups_lr_scale_clip",
        lambda p: torch.optim.Adam([{"params": [p[0]], "weight_decay": 0.05},
                                    {"params": [p[1]], "lr_scale": 0.25}], lr=0.1), 0.8, out)
    run("sgd_groups_lr_scale",
        lambda p: torch.optim.SGD([{"params": [p[0]], "lr_scale": 2.0},
                                   {"params": [p[1]], "weight_decay": 0.3}],
                                  lr=0.1, momentum=0.9), 0.0, out)
    # float32: 1 - beta is taken in double and then rounded, as Python does.
    run("adam_l2_f32", lambda p: torch.optim.Adam(p, lr=0.1, weight_decay=0.01), 0.0, out,
        torch.float32)
    run("adamw_f32", lambda p: torch.optim.AdamW(p, lr=0.1, weight_decay=0.1), 0.0, out,
        torch.float32)
    varying_batches(out)
    accumulated_micro_batches(out)
    clip_grad_norm(out)
    out.write()


def mlp_start(seed):
    """The (w1, b1, w2) of cross_entropy(tanh(x @ w1 + b1) @ w2, y), float64."""
    torch.manual_seed(seed)
    return {"w1": torch.randn(4, 3, dtype=torch.float64),
            "b1": torch.randn(3, dtype=torch.float64),
            "w2": torch.randn(3, 5, dtype=torch.float64)}


def mlp_loss(params, x, y):
    hidden = torch.tanh(x @ params["w1"] + params["b1"])
    return torch.nn.functional.cross_entropy(hidden @ params["w2"], y)


def accumulated_micro_batches(out):
    """Two AdamW steps (weight decay 0.1, clipped at 0.5), each after
    backward() on three micro-batches of 4, 3 and 2 rows whose losses are
    scaled by 1/3, as nanoGPT accumulates."""
    start = mlp_start(4)
    inputs = {name: t.clone() for name, t in start.items()}
    params = {name: t.clone().requires_grad_() for name, t in start.items()}
    opt = torch.optim.AdamW(params.values(), lr=0.1, weight_decay=0.1)
    outputs = {}
    for step, lr in enumerate([0.1, 0.05], start=1):
        opt.param_groups[0]["lr"] = lr
        opt.zero_grad()
        for micro, rows in enumerate([4, 3, 2], start=1):
            x = torch.randn(rows, 4, dtype=torch.float64)
            y = torch.randint(0, 5, (rows,))
            inputs[f"x_{step}_{micro}"], inputs[f"y_{step}_{micro}"] = x, y
            (mlp_loss(params, x, y) / 3).backward()
        norm = torch.nn.utils.clip_grad_norm_(list(params.values()), 0.5)
        opt.step()
        outputs[f"grad_norm_{step}"] = norm.detach().reshape(())
        for name, p in params.items():
            outputs[f"{name}_{step}"] = p.detach().clone()
    out.add("adamw_clip_accumulated", inputs, outputs, {"lrs": [0.1, 0.05], "micro": [4, 3, 2]})


def varying_batches(out):
    """One AdamW (weight decay 0.1, clipped at 0.5) over five batches of 4, 3,
    4, 2 and 3 rows of cross_entropy(tanh(x @ w1 + b1) @ w2, y)."""
    start = mlp_start(3)
    inputs = {name: t.clone() for name, t in start.items()}
    params = {name: t.clone().requires_grad_() for name, t in start.items()}
    opt = torch.optim.AdamW(params.values(), lr=0.1, weight_decay=0.1)
    batches, lrs = [4, 3, 4, 2, 3], [0.1, 0.05, 0.08, 0.02, 0.04]
    outputs = {}
    for step, (rows, lr) in enumerate(zip(batches, lrs), start=1):
        x = torch.randn(rows, 4, dtype=torch.float64)
        y = torch.randint(0, 5, (rows,))
        inputs[f"x_{step}"], inputs[f"y_{step}"] = x, y
        opt.param_groups[0]["lr"] = lr
        opt.zero_grad()
        loss = mlp_loss(params, x, y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(list(params.values()), 0.5)
        opt.step()
        outputs[f"loss_{step}"] = loss.detach().reshape(())
        outputs[f"grad_norm_{step}"] = norm.detach().reshape(())
        for name, p in params.items():
            outputs[f"{name}_{step}"] = p.detach().clone()
    out.add("adamw_clip_varying_batch", inputs, outputs, {"lrs": lrs, "batches": batches})


def clip_grad_norm(out):
    """clip_grad_norm_ on float64 and float32 gradients, clipped and not."""
    torch.manual_seed(2)
    for name, dtype, max_norm in (("clip_grad_norm_f64", torch.float64, 0.5),
                                  ("clip_grad_norm_f32", torch.float32, 0.5),
                                  ("clip_grad_norm_below_max", torch.float64, 100.0)):
        g1 = torch.randn(4, 3, dtype=torch.float64).to(dtype)
        g2 = torch.randn(6, dtype=torch.float64).to(dtype)
        p1, p2 = torch.zeros_like(g1), torch.zeros_like(g2)
        p1.grad, p2.grad = g1.clone(), g2.clone()
        norm = torch.nn.utils.clip_grad_norm_([p1, p2], max_norm)
        out.add(name, {"g1": g1, "g2": g2},
                {"norm": norm.detach().double().reshape(()), "clipped_g1": p1.grad,
                 "clipped_g2": p2.grad}, {"max_norm": max_norm})


if __name__ == "__main__":
    main()
