"""Goldens for dagrad's cross-entropy and log-softmax (ops/loss.h,
ops/softmax.h), from PyTorch.

Run: /usr/bin/python3 tools/goldens/loss.py  ->  tests/data/goldens/loss.json

Cross-entropy cases store logits (..., C) (float64), targets (the logits'
leading shape; torch wants (N, C), so both are flattened to rows first),
the loss "y" (torch.nn.functional.cross_entropy with the case's reduction,
ignore_index and label_smoothing) and "dlogits", the gradient of sum(y * g) for the stored
upstream gradient "g". Not here: every target ignored with reduction
"mean", where torch 1.13 gives NaN and dagrad defines 0 (tests check it by
hand). Log-softmax cases store x, g, y and dx.
"""
import torch
import torch.nn.functional as F

from golden_io import GoldenFile


def main():
    f = GoldenFile("loss", seed=77)

    def cross_entropy(name, shape, targets, reduction, ignore_index=-100, spread=2.0,
                      label_smoothing=0.0):
        logits = (torch.randn(shape, dtype=torch.float64) * spread).requires_grad_()
        classes = shape[-1]
        y = F.cross_entropy(logits.reshape(-1, classes), targets.reshape(-1).long(),
                            reduction=reduction, ignore_index=ignore_index,
                            label_smoothing=label_smoothing)
        if reduction == "none":
            y = y.reshape(targets.shape)
        g = torch.randn(y.shape, dtype=torch.float64)
        (y * g).sum().backward()
        f.add(name, {"logits": logits, "targets": targets, "g": g},
              {"y": y, "dlogits": logits.grad},
              {"reduction": reduction, "ignore_index": ignore_index,
               "label_smoothing": label_smoothing})

    rows = torch.tensor([3, 0, -100, 4, 1, 2])
    cross_entropy("ce_mean_ignore", (6, 5), rows, "mean")
    cross_entropy("ce_sum_ignore", (6, 5), rows, "sum")
    cross_entropy("ce_none_ignore", (6, 5), rows, "none")
    # (B, T, C) logits with int32 targets and a custom ignore_index.
    tokens = torch.tensor([[1, 0, 2, 2], [3, 2, 0, 1]], dtype=torch.int32)
    cross_entropy("ce_3d_mean_ignore_class_2", (2, 4, 4), tokens, "mean", ignore_index=2)
    cross_entropy("ce_3d_none_ignore_class_2", (2, 4, 4), tokens, "none", ignore_index=2)
    cross_entropy("ce_large_logits", (3, 7), torch.tensor([6, 0, 3]), "mean", spread=50.0)

    def log_softmax(name, shape, spread):
        x = (torch.randn(shape, dtype=torch.float64) * spread).requires_grad_()
        y = torch.log_softmax(x, dim=-1)
        g = torch.randn(shape, dtype=torch.float64)
        (y * g).sum().backward()
        f.add(name, {"x": x, "g": g}, {"y": y, "dx": x.grad})

    log_softmax("log_softmax_2d", (3, 4), 1.0)
    log_softmax("log_softmax_3d_wide_range", (2, 3, 6), 30.0)
    # Label smoothing (drawn after the cases above, which keep their values).
    cross_entropy("ce_mean_ignore_smoothed", (6, 5), rows, "mean", label_smoothing=0.1)
    cross_entropy("ce_3d_none_ignore_class_2_smoothed", (2, 4, 4), tokens, "none",
                  ignore_index=2, label_smoothing=0.25)
    f.write()


if __name__ == "__main__":
    main()
