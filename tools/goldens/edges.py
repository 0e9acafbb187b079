"""Goldens at the edges of every op's domain: NaN and +-inf through every
elementwise op and reduction, gradients at 0 (pow, sqrt, log, rsqrt), at
+-inf and at NaN, softmax rows that are fully masked or hold NaN or +inf,
the mean over no elements, and Linear with a 1-D input. Writes
tests/data/goldens/edges.json; the ops' case files (tests/*/*_cases.cc,
DAGRAD_GOLDENS) map each case name to the dagrad builder.

Where dagrad documents a different convention than torch, the convention is
applied here with torch ops, and said so:
  - a softmax row whose every position is masked (keep = false or -inf) is
    zeros, value and gradient (DESIGN.md), where torch gives NaN;
  - Maximum and Minimum send the gradient of a tie, or of a NaN, to a (the
    header says so), where torch splits or duplicates it; their gradient
    cases therefore hold neither ties nor NaN.

    /usr/bin/python3 tools/goldens/edges.py
"""
import torch
import torch.nn.functional as F

from golden_cases import Cases, rand

NAN, INF = float("nan"), float("inf")

# Every special value, signed zeros included, and a few ordinary ones.
SPECIALS = [NAN, INF, -INF, 0.0, -0.0, 1.0, -2.0, 0.5, 3.0, -0.25]


def specials(dtype=torch.float32):
    return torch.tensor(SPECIALS, dtype=torch.float64).to(dtype)


def unary(c):
    ops = {
        "neg": torch.neg, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt,
        "rsqrt": torch.rsqrt, "relu": torch.relu,
        "gelu": lambda x: F.gelu(x, approximate="none"), "tanh": torch.tanh,
        "sigmoid": torch.sigmoid, "sin": torch.sin, "cos": torch.cos,
    }
    for name, f in ops.items():
        c.case(f"{name}_specials", f, {"x": specials()}, grads=("x",))
    c.case("scale_specials", lambda x: x * -2.5, {"x": specials()}, {"factor": -2.5},
           grads=("x",))
    c.case("add_scalar_specials", lambda x: x + 0.75, {"x": specials()}, {"offset": 0.75},
           grads=("x",))
    # Integer, fractional and negative exponents, 0 included (its gradient
    # is 0 everywhere, never 0 * inf).
    for tag, p in (("0", 0.0), ("1", 1.0), ("2", 2.0), ("3", 3.0), ("half", 0.5),
                   ("minus_half", -0.5), ("minus_1", -1.0), ("minus_2", -2.0),
                   ("minus_1_5", -1.5), ("2_5", 2.5)):
        c.case(f"pow_{tag}_specials", lambda x, p=p: torch.pow(x, p), {"x": specials()},
               {"exponent": p}, grads=("x",))
    c.case("pow_0_specials_float64", lambda x: torch.pow(x, 0.0),
           {"x": specials(torch.float64)}, {"exponent": 0.0}, grads=("x",))
    c.case("cast_specials_to_float64", lambda x: x.to(torch.float64), {"x": specials()},
           {"dtype": "float64"}, wide=False)
    big = torch.tensor([1e39, -1e39, NAN, INF, 1e-46, 3.5], dtype=torch.float64)
    c.case("cast_float64_overflow_to_float32", lambda x: x.to(torch.float32), {"x": big},
           {"dtype": "float32"}, wide=False)


def pairs():
    """Every ordered pair of specials, as two flat tensors."""
    vals = [NAN, INF, -INF, 0.0, 1.0, -1.0, 2.5]
    a = torch.tensor([x for x in vals for _ in vals])
    b = torch.tensor([y for _ in vals for y in vals])
    return a, b


def binary(c):
    a, b = pairs()
    for name, f in (("add", torch.add), ("sub", torch.sub), ("mul", torch.mul),
                    ("div", torch.div)):
        c.case(f"{name}_specials", f, {"a": a, "b": b}, grads=("a", "b"))
    for name, f in (("maximum", torch.maximum), ("minimum", torch.minimum),
                    ("equal", torch.eq), ("less", torch.lt), ("greater", torch.gt)):
        c.case(f"{name}_specials", f, {"a": a, "b": b})
    # NaN on either side, at either position in a broadcast row.
    c.case("maximum_nan_broadcast", torch.maximum,
           {"a": torch.tensor([[NAN, 1.0, 2.0], [1.0, NAN, 2.0]]), "b": torch.tensor([0.5, 3.0, NAN])})
    distinct_a = torch.tensor([INF, -INF, 0.0, 1.0, -1.0, 2.5, -INF, 3.0])
    distinct_b = torch.tensor([1.0, 0.0, -INF, INF, -2.0, 2.0, INF, -INF])
    for name, f in (("maximum", torch.maximum), ("minimum", torch.minimum)):
        c.case(f"{name}_infinities_grad", f, {"a": distinct_a, "b": distinct_b},
               grads=("a", "b"))
    cond = torch.tensor([True, False, True, False])
    c.case("where_specials", torch.where,
           {"cond": cond, "a": torch.tensor([NAN, NAN, INF, 1.0]),
            "b": torch.tensor([1.0, 2.0, NAN, -INF])}, grads=("a", "b"))


def reduce(c):
    # Rows (last axis) and columns (axis 0) with a NaN first, in the middle
    # or last, +-inf, inf + -inf, and all -inf.
    rows = torch.tensor([[NAN, 1.0, 2.0, 0.5], [1.0, NAN, 2.0, 0.5], [1.0, 2.0, 0.5, NAN],
                         [INF, 1.0, -2.0, 0.0], [-INF, 1.0, -2.0, 0.0], [INF, -INF, 1.0, 0.0],
                         [-INF, -INF, -INF, -INF], [1.0, 3.0, -1.0, 3.0]])
    x3 = rows.reshape(2, 4, 4)

    def red(f, axes):
        return lambda x: f(x) if not axes else f(x, dim=tuple(axes))
    for op, f in (("sum", torch.sum), ("mean", torch.mean), ("max", torch.amax)):
        c.case(f"{op}_specials_rows", red(f, [-1]), {"x": rows},
               {"axes": [-1], "keepdims": False}, grads=("x",))
        c.case(f"{op}_specials_columns", red(f, [0]), {"x": rows.t().contiguous()},
               {"axes": [0], "keepdims": False}, grads=("x",))
        c.case(f"{op}_specials_middle", red(f, [1]), {"x": x3},
               {"axes": [1], "keepdims": False}, grads=("x",))
        c.case(f"{op}_specials_non_contiguous", red(f, [0, 2]), {"x": x3},
               {"axes": [0, 2], "keepdims": False}, grads=("x",))
        c.case(f"{op}_specials_all", red(f, []), {"x": rows},
               {"axes": [], "keepdims": False})
    # Over no elements: the sum is 0 and the mean NaN (0 / 0), rows and columns.
    empty = torch.zeros(0, 3)
    for op, f in (("sum", torch.sum), ("mean", torch.mean)):
        c.case(f"{op}_empty_columns", red(f, [0]), {"x": empty},
               {"axes": [0], "keepdims": False})
        c.case(f"{op}_empty_rows", red(f, [-1]), {"x": empty.t().contiguous()},
               {"axes": [-1], "keepdims": False})


def masked_softmax(x, keep):
    """dagrad's convention: positions with keep = false are -inf; a row with
    no finite-or-NaN position left (all masked or -inf) is zeros."""
    z = x.masked_fill(~keep, -INF)
    dead = (z == -INF).all(dim=-1, keepdim=True)
    # Dead rows go through softmax as zeros, so that no NaN of theirs reaches
    # the gradient through where's unselected branch.
    y = torch.softmax(z.masked_fill(dead, 0.0), dim=-1)
    return torch.where(dead, torch.zeros_like(y), y)


def softmax(c):
    x = torch.tensor([[NAN, 1.0, 2.0], [1.0, 2.0, NAN], [INF, 0.0, 1.0], [INF, INF, 0.0],
                      [-INF, 0.0, 1.0], [-INF, -INF, -INF], [0.5, -1.0, 2.0],
                      [3.0, NAN, -INF], [NAN, NAN, NAN], [NAN, -INF, -INF]])
    keep = torch.tensor([[True, True, True], [True, True, False], [True, True, True],
                         [True, True, True], [True, True, True], [True, True, True],
                         [False, False, False], [True, False, True], [True, True, True],
                         [True, True, True]])
    c.case("softmax_specials_masked", masked_softmax, {"x": x, "keep": keep}, grads=("x",))
    c.case("log_softmax_specials", lambda t: torch.log_softmax(t, dim=-1), {"x": x},
           grads=("x",))
    targets = torch.tensor([1, 0, 1, 2, 0, 1, 0, 2, 1, 0])
    c.case("cross_entropy_specials_none",
           lambda t, y: F.cross_entropy(t, y, reduction="none"),
           {"logits": x, "targets": targets}, {"reduction": "none"}, grads=("logits",))
    finite = torch.tensor([[0.0, -INF, 1.0], [-INF, 2.0, -INF], [1.0, 1.0, -INF]])
    c.case("cross_entropy_neg_inf_logits",
           lambda t, y: F.cross_entropy(t, y), {"logits": finite,
                                                "targets": torch.tensor([0, 1, 1])},
           {"reduction": "mean"}, grads=("logits",))
    ln = torch.tensor([[NAN, 1.0, 2.0, 0.0], [INF, 1.0, 2.0, 0.0], [-INF, 1.0, 2.0, 0.0],
                       [1.0, -2.0, 0.5, 3.0]])
    c.case("layer_norm_specials", lambda t: F.layer_norm(t, (4,), eps=1e-5), {"x": ln},
           {"eps": 1e-5}, grads=("x",))


def linear(c):
    c.case("linear_1d_input", F.linear,
           {"input": rand(4), "weight": rand(3, 4), "bias": rand(3)},
           grads=("input", "weight", "bias"))
    c.case("linear_1d_input_no_bias", F.linear, {"input": rand(5), "weight": rand(2, 5)},
           grads=("input", "weight"))


def added(c):
    """Cases of ops added since: last, since each case draws its gy from the
    file's one random stream, so a case put earlier would change the inputs
    of every case after it."""
    c.case("abs_specials", torch.abs, {"x": specials()}, grads=("x",))
    # x^p at x = 0 and p = 0, where pow's gradient formulas are 0 * inf:
    # torch's are 0 there (pow_backward_self, pow_backward_exponent).
    zeros = torch.tensor([0.0, 0.0, 0.0, -0.0, 0.0, 2.0, float("inf"), 0.0])
    powers = torch.tensor([2.0, 0.5, 0.0, 0.0, -1.0, 0.0, 0.0, float("nan")])
    c.case("pow_tensor_zeros", torch.pow, {"x": zeros, "p": powers}, grads=("x", "p"))
    # A NaN or infinite seed at x = 0 (and at x = NaN, whose sign is 0) is
    # NaN: g sign(x) is a product, which hides nothing.
    c.case("abs_nonfinite_seed", torch.abs, {"x": torch.tensor([0.0, -0.0, NAN, 2.0, -3.0])},
           grads=("x",), gy=torch.tensor([NAN, INF, 1.0, NAN, 2.0]))
    # g (p x^(p-1)) in float32, in torch's order: g p overflows where
    # x^(p-1) is 0, which the product with g must meet first.
    c.case("pow_tensor_overflowing_seed", torch.pow,
           {"x": torch.tensor([0.5, 0.9, 0.0]), "p": torch.tensor([200.0, 1000.0, 1e30])},
           grads=("x", "p"), wide=False, gy=torch.tensor([1e37, 1e36, 1e10]))
    # gelu'' of the tanh form (the gradient of gelu'): where 1 - tanh^2
    # cancels (x = 5) and where it is 0 beside an overflowing u'^2.
    c.case("gelu_tanh_second_derivative", gelu_tanh_derivative,
           {"x": torch.tensor([5.0, 1e8, 1e10, -1e10, 0.0, 1.0, -2.0, 3.5, -6.0])},
           grads=("x",))


def gelu_tanh_derivative(x):
    y = F.gelu(x, approximate="tanh")
    return torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)[0]


def main():
    c = Cases("edges", seed=0)
    unary(c)
    binary(c)
    reduce(c)
    softmax(c)
    linear(c)
    added(c)
    c.write()


if __name__ == "__main__":
    main()
