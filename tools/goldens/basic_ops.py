"""Goldens for dagrad's basic ops: ops/unary.cc, ops/binary.cc, ops/reduce.cc,
ops/shape_ops.cc, ops/matmul.cc and ops/cumsum.cc. Writes
tests/data/goldens/basic_ops.json;
the ops' case files (tests/*/*_cases.cc, DAGRAD_GOLDENS) map each case name
to the dagrad builder.

    /usr/bin/python3 tools/goldens/basic_ops.py
"""
import torch
import torch.nn.functional as F

from golden_cases import Cases, rand, randint


def binary(c):
    c.case("add_broadcast", lambda a, b: a + b, {"a": rand(2, 3, 4), "b": rand(3, 1)},
           grads=("a", "b"))
    c.case("sub_broadcast_leading", lambda a, b: a - b, {"a": rand(4), "b": rand(2, 3, 4)})
    c.case("mul_broadcast_both", lambda a, b: a * b, {"a": rand(2, 1, 4), "b": rand(3, 1)},
           grads=("a", "b"))
    c.case("div_broadcast", lambda a, b: a / b,
           {"a": rand(2, 3), "b": rand(3, lo=0.5, hi=1.5)}, grads=("a", "b"))
    c.case("maximum_broadcast", torch.maximum, {"a": rand(3, 4), "b": rand(4)})
    c.case("minimum_same_shape", torch.minimum, {"a": rand(3, 4), "b": rand(3, 4)})
    c.case("add_int64", lambda a, b: a + b,
           {"a": randint(2, 3, lo=-50, hi=50), "b": randint(3, lo=-50, hi=50)})
    c.case("mul_float64", lambda a, b: a * b,
           {"a": rand(2, 3, dtype=torch.float64), "b": rand(2, 1, dtype=torch.float64)})
    # Small integer values, so that comparisons see ties.
    ties = {"a": randint(3, 4).float(), "b": randint(4).float()}
    c.case("equal_broadcast", torch.eq, ties)
    c.case("less_broadcast", torch.lt, ties)
    c.case("greater_broadcast", torch.gt, ties)
    c.case("less_int64", torch.lt, {"a": randint(2, 3), "b": randint(2, 1)})
    bools = {"a": randint(2, 3, hi=2).bool(), "b": randint(3, hi=2).bool()}
    c.case("logical_and_broadcast", torch.logical_and, bools)
    c.case("logical_or_broadcast", torch.logical_or, bools)
    c.case("logical_not", torch.logical_not, {"a": randint(2, 3, hi=2).bool()})
    # Every quadrant, the axes and the signed zeros (atan2(0, -0) = pi).
    edges = torch.tensor([-2.0, -0.5, -0.0, 0.0, 0.5, 2.0])
    c.case("atan2_quadrants", torch.atan2, {"y": edges.reshape(6, 1), "x": edges})


def unary(c):
    x = rand(3, 4, lo=-3, hi=3)
    pos = rand(3, 4, lo=0.2, hi=3)
    c.case("neg", torch.neg, {"x": x})
    c.case("exp", torch.exp, {"x": x}, grads=("x",))
    c.case("log", torch.log, {"x": pos}, grads=("x",))
    c.case("sqrt", torch.sqrt, {"x": pos}, grads=("x",))
    c.case("rsqrt", torch.rsqrt, {"x": pos}, grads=("x",))
    c.case("pow_square", lambda x: torch.pow(x, 2.0), {"x": x}, {"exponent": 2.0})
    c.case("pow_cube", lambda x: torch.pow(x, 3.0), {"x": x}, {"exponent": 3.0},
           grads=("x",))
    c.case("pow_fractional", lambda x: torch.pow(x, -1.5), {"x": pos}, {"exponent": -1.5},
           grads=("x",))
    c.case("scale", lambda x: x * -2.5, {"x": x}, {"factor": -2.5})
    c.case("add_scalar", lambda x: x + 0.75, {"x": x}, {"offset": 0.75})
    c.case("relu", torch.relu, {"x": x}, grads=("x",))
    c.case("gelu_exact", lambda x: F.gelu(x, approximate="none"), {"x": x}, grads=("x",))
    c.case("tanh", torch.tanh, {"x": x}, grads=("x",))
    c.case("sigmoid", torch.sigmoid, {"x": x}, grads=("x",))
    c.case("sin", torch.sin, {"x": x}, grads=("x",))
    c.case("cos", torch.cos, {"x": x}, grads=("x",))
    c.case("sin_float64", torch.sin, {"x": rand(5, lo=-3, hi=3, dtype=torch.float64)})
    # Both tails and the threshold 20 (softplus is x above it).
    c.case("softplus_tails", F.softplus, {"x": torch.linspace(-40, 40, 17)})

    # The backward kernels, against torch's own vector-Jacobian products.
    def vjp(f):
        def run(x, g):
            x = x.detach().requires_grad_(True)
            return torch.autograd.grad(f(x), x, g)[0]
        return run
    c.case("relu_grad", vjp(torch.relu), {"x": x, "g": rand(3, 4)})
    c.case("gelu_grad", vjp(lambda t: F.gelu(t, approximate="none")),
           {"x": x, "g": rand(3, 4)})

    # Casts: float to int truncates toward zero; float to bool is x != 0.
    signed = torch.tensor([-2.75, -1.5, -0.25, 0.0, 0.5, 1.0, 2.9, 7.25])
    c.case("cast_float32_to_int64", lambda x: x.to(torch.int64), {"x": signed},
           {"dtype": "int64"}, wide=False)
    c.case("cast_float32_to_int32", lambda x: x.to(torch.int32), {"x": signed},
           {"dtype": "int32"}, wide=False)
    c.case("cast_float32_to_bool", lambda x: x.to(torch.bool), {"x": signed},
           {"dtype": "bool"}, wide=False)
    c.case("cast_float32_to_float64", lambda x: x.to(torch.float64), {"x": x},
           {"dtype": "float64"}, wide=False)
    c.case("cast_float64_to_float32", lambda x: x.to(torch.float32),
           {"x": rand(3, 4, dtype=torch.float64)}, {"dtype": "float32"}, wide=False)
    c.case("cast_int64_to_float32", lambda x: x.to(torch.float32),
           {"x": randint(6, lo=-100, hi=100)}, {"dtype": "float32"}, wide=False)
    c.case("cast_bool_to_float32", lambda x: x.to(torch.float32),
           {"x": randint(6, hi=2).bool()}, {"dtype": "float32"}, wide=False)


def reduce(c):
    x = rand(2, 3, 4)
    # dagrad's empty axis list means every axis.
    def red(f, axes, keep):
        return lambda x: f(x) if not axes else f(x, dim=tuple(axes), keepdim=keep)
    for op, f in (("sum", torch.sum), ("mean", torch.mean), ("max", torch.amax)):
        for suffix, axes, keep in (("all", [], False), ("last", [-1], False),
                                   ("leading_keepdims", [0, 1], True),
                                   ("non_contiguous", [0, 2], False),
                                   ("middle_keepdims", [1], True)):
            c.case(f"{op}_{suffix}", red(f, axes, keep), {"x": x},
                   {"axes": axes, "keepdims": keep},
                   grads=("x",) if suffix in ("last", "non_contiguous") else ())
    c.case("sum_int64", lambda x: torch.sum(x, dim=1), {"x": randint(3, 5, lo=-9, hi=9)},
           {"axes": [1], "keepdims": False})
    # Tied maxima share the gradient equally (torch.amax's rule).
    c.case("max_ties", lambda x: torch.amax(x, dim=1),
           {"x": torch.tensor([[3.0, 1.0, 3.0, 2.0], [0.5, 0.5, 0.5, -1.0]])},
           {"axes": [1], "keepdims": False}, grads=("x",))


def shape(c):
    c.case("reshape_infer", lambda x: x.reshape(3, -1, 2), {"x": rand(2, 6)},
           {"shape": [3, -1, 2]}, grads=("x",))
    c.case("permute_4d", lambda x: x.permute(0, 2, 3, 1), {"x": rand(2, 3, 4, 5)},
           {"perm": [0, 2, 3, 1]}, grads=("x",))
    c.case("permute_int64", lambda x: x.permute(1, 0), {"x": randint(2, 3)}, {"perm": [1, 0]})
    c.case("broadcast_to", lambda x: torch.broadcast_to(x, (2, 3, 4)), {"x": rand(3, 1)},
           {"shape": [2, 3, 4]}, grads=("x",))
    c.case("concat_middle_axis", lambda a, b: torch.cat([a, b, a], dim=1),
           {"a": rand(2, 1, 3), "b": rand(2, 2, 3)}, {"axis": 1}, grads=("a", "b"))
    c.case("concat_bool_first_axis", lambda a, b: torch.cat([a, b], dim=0),
           {"a": randint(1, 3, hi=2).bool(), "b": randint(2, 3, hi=2).bool()}, {"axis": 0})

    def sl(axis, start, end, step):
        return lambda x: x[(slice(None),) * axis + (slice(start, end, step),)]
    for name, shp, (axis, start, end, step) in (
            ("slice_step", (3, 7), (1, 1, 6, 2)),
            ("slice_negative_start_clamped_end", (5, 3), (0, -3, 100, 1)),
            ("slice_middle_axis_step3", (2, 8, 3), (1, 0, 8, 3))):
        # The gradient of a slice is unslice: zeros with gy written back.
        c.case(name, sl(axis, start, end, step), {"x": rand(*shp)},
               {"axis": axis, "start": start, "end": end, "step": step}, grads=("x",))


def matmul(c):
    def mm(ta, tb):
        return lambda a, b: (a.transpose(-1, -2) if ta else a) @ (b.transpose(-1, -2) if tb else b)
    for name, sa, sb, ta, tb in (
            ("matmul_plain", (3, 4), (4, 2), False, False),
            ("matmul_transpose_a", (4, 3), (4, 2), True, False),
            ("matmul_transpose_b", (2, 3, 4), (2, 5, 4), False, True),
            ("matmul_transpose_both", (2, 4, 3), (5, 4), True, True),
            ("matmul_shared_rhs", (2, 3, 3, 4), (4, 2), False, False),
            ("matmul_shared_lhs", (3, 4), (2, 4, 2), False, False),
            ("matmul_batch_broadcast", (2, 1, 3, 4), (1, 3, 4, 2), False, False)):
        c.case(name, mm(ta, tb), {"a": rand(*sa), "b": rand(*sb)},
               {"transpose_a": ta, "transpose_b": tb}, grads=("a", "b"))
    c.case("matmul_float64", mm(False, True),
           {"a": rand(2, 3, dtype=torch.float64), "b": rand(4, 3, dtype=torch.float64)},
           {"transpose_a": False, "transpose_b": True})
    c.case("linear_bias", F.linear, {"input": rand(2, 3, 4), "weight": rand(5, 4),
                                     "bias": rand(5)}, grads=("input", "weight", "bias"))
    c.case("linear_no_bias", F.linear, {"input": rand(3, 4), "weight": rand(2, 4)},
           grads=("input", "weight"))


def onnx_ops(c):
    """The ops ONNX's Erf and Pow (an exponent per element) import as; last, so
    that the cases above draw the values they always drew."""
    c.case("erf", torch.erf, {"x": rand(3, 4, lo=-3, hi=3)}, grads=("x",))
    c.case("pow_tensor_broadcast", torch.pow,
           {"x": rand(3, 4, lo=0.2, hi=3), "p": rand(4, lo=-2, hi=3)}, grads=("x", "p"))


def scans(c):
    """cumsum (torch.cumsum), with ONNX CumSum's exclusive and reverse
    written out by flips and shifts; last, as onnx_ops."""
    def cumsum(axis, exclusive=False, reverse=False):
        def f(x):
            y = torch.flip(x, [axis]) if reverse else x
            y = torch.cumsum(y, axis)
            if exclusive:
                y = torch.cat([torch.zeros_like(y.narrow(axis, 0, 1)),
                               y.narrow(axis, 0, y.shape[axis] - 1)], axis)
            return torch.flip(y, [axis]) if reverse else y
        return f
    for name, axis, exclusive, reverse in (("cumsum_inclusive", 1, False, False),
                                           ("cumsum_exclusive", -1, True, False),
                                           ("cumsum_reverse", 0, False, True),
                                           ("cumsum_exclusive_reverse", 2, True, True)):
        c.case(name, cumsum(axis, exclusive, reverse), {"x": rand(3, 4, 5)},
               {"axis": axis, "exclusive": exclusive, "reverse": reverse}, grads=("x",))
    c.case("cumsum_int64", cumsum(0), {"x": randint(5, 3, lo=-50, hi=50)},
           {"axis": 0, "exclusive": False, "reverse": False})


def detach(c):
    """x * x.detach(): the value of x squared, the gradient of x alone;
    last, so that the cases above keep their draws."""
    c.case("detach_product", lambda x: x * x.detach(), {"x": rand(3, 4)}, grads=("x",))


def main():
    c = Cases("basic_ops", seed=0)
    binary(c)
    unary(c)
    reduce(c)
    shape(c)
    matmul(c)
    onnx_ops(c)
    scans(c)
    detach(c)
    c.write()


if __name__ == "__main__":
    main()
