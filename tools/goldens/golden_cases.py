"""Shared helpers for the op golden generators (basic_ops.py, nn_ops.py).

A case runs a torch function on named inputs. Float32 inputs are widened to
float64 first and the outputs rounded back to float32 once, so a golden is
the exactly rounded result rather than torch's own float32 arithmetic: the
tests then measure dagrad's error alone. With `grads`, the case also holds a
random upstream gradient "gy" of the output's shape and, for each input
named in `grads`, "grad_<input>" = the vector-Jacobian product of gy.
"""
import torch

from golden_io import GoldenFile


def rand(*shape, lo=-1.0, hi=1.0, dtype=torch.float32):
    """Uniform values in [lo, hi), drawn in float64 and rounded to dtype."""
    return (torch.rand(shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def randint(*shape, lo=0, hi=4, dtype=torch.int64):
    return torch.randint(lo, hi, shape, dtype=dtype)


class Cases(GoldenFile):
    def case(self, name, fn, inputs, attrs=None, grads=(), wide=True, gy=None):
        """Adds case `name` with outputs out = fn(*inputs.values()) (and gradients,
        seeded with `gy`, else with a random one)."""
        floats = [t.dtype for t in inputs.values() if t.dtype.is_floating_point]
        narrow = floats[0] if floats else None
        run = {}
        for k, t in inputs.items():
            w = t.double() if wide and t.dtype == torch.float32 else t.clone()
            run[k] = w.requires_grad_(k in grads)
        out = fn(*run.values())  # inputs in order, as positional arguments
        outputs = {"out": self._narrow(out, narrow, wide)}
        case_inputs = dict(inputs)
        if grads:
            if gy is None:
                gy = rand(*out.shape, dtype=narrow)
            gs = torch.autograd.grad(out, [run[k] for k in grads],
                                     gy.to(out.dtype))
            case_inputs["gy"] = gy
            for k, g in zip(grads, gs):
                outputs["grad_" + k] = g.to(inputs[k].dtype)
        self.add(name, case_inputs, outputs, attrs)

    @staticmethod
    def _narrow(out, narrow, wide):
        out = out.detach()
        if wide and out.dtype == torch.float64 and narrow is not None:
            return out.to(narrow)
        return out
