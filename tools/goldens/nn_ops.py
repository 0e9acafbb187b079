"""Goldens for dagrad's layer_norm, gather/embedding, where, fill, arange,
gelu, argmax and topk (ops/layer_norm.cc, ops/gather.cc, ops/select.cc,
ops/fill.cc, ops/gelu.cc, ops/sampling.cc). Writes
tests/data/goldens/nn_ops.json; the ops' case files (tests/*/*_cases.cc,
DAGRAD_GOLDENS) map each case name to the dagrad builder.

    /usr/bin/python3 tools/goldens/nn_ops.py
"""
import torch
import torch.nn.functional as F

from golden_cases import Cases, rand, randint


def layer_norm(c):
    def ln(eps):
        def run(x, weight=None, bias=None):
            return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)
        return run
    c.case("layer_norm_affine_3d", ln(1e-5),
           {"x": rand(2, 3, 8, lo=-2, hi=2), "gamma": rand(8, lo=0.5, hi=1.5),
            "beta": rand(8)}, {"eps": 1e-5}, grads=("x", "gamma", "beta"))
    c.case("layer_norm_plain", ln(1e-5), {"x": rand(4, 6, lo=-3, hi=3)}, {"eps": 1e-5},
           grads=("x",))
    c.case("layer_norm_gamma_only", lambda x, w: ln(1e-3)(x, w),
           {"x": rand(3, 5), "gamma": rand(5, lo=0.5, hi=1.5)}, {"eps": 1e-3},
           grads=("x", "gamma"))
    c.case("layer_norm_beta_only", lambda x, b: ln(1e-5)(x, None, b),
           {"x": rand(3, 5), "beta": rand(5)}, {"eps": 1e-5}, grads=("x", "beta"))
    # A large mean and a small spread: E[x^2] - E[x]^2 would cancel badly.
    c.case("layer_norm_large_mean", ln(1e-5), {"x": 1000 + rand(2, 16, lo=-0.5, hi=0.5)},
           {"eps": 1e-5})
    # A constant row: variance 0, the output is beta.
    c.case("layer_norm_constant_row", ln(1e-5),
           {"x": torch.full((2, 4), 3.0), "gamma": rand(4), "beta": rand(4)}, {"eps": 1e-5},
           grads=("x", "gamma", "beta"))
    c.case("layer_norm_float64", ln(1e-6),
           {"x": rand(3, 7, dtype=torch.float64), "gamma": rand(7, dtype=torch.float64),
            "beta": rand(7, dtype=torch.float64)}, {"eps": 1e-6},
           grads=("x", "gamma", "beta"))
    c.case("layer_norm_wide_rows", ln(1e-5), {"x": rand(3, 300, lo=-4, hi=4)},
           {"eps": 1e-5}, grads=("x",))


def take(params, indices, axis):
    """numpy.take through torch.index_select: params.shape[:axis] +
    indices.shape + params.shape[axis+1:]."""
    axis %= params.dim()
    flat = torch.index_select(params, axis, indices.reshape(-1).long())
    return flat.reshape(params.shape[:axis] + indices.shape + params.shape[axis + 1:])


def gather(c):
    # Repeated indices: their gradients accumulate (scatter_add).
    c.case("gather_axis0_repeats", lambda p, i: take(p, i, 0),
           {"params": rand(5, 3), "indices": torch.tensor([4, 0, 4, 2, 4])},
           {"axis": 0}, grads=("params",))
    c.case("gather_middle_axis_int32", lambda p, i: take(p, i, 1),
           {"params": rand(2, 5, 3), "indices": torch.tensor([[1, 3, 1], [0, 1, 4]],
                                                             dtype=torch.int32)},
           {"axis": 1}, grads=("params",))
    c.case("gather_last_axis_negative", lambda p, i: take(p, i, -1),
           {"params": rand(3, 4), "indices": torch.tensor([3, 3, 0, 1, 3])},
           {"axis": -1}, grads=("params",))
    c.case("gather_scalar_index", lambda p, i: p.select(1, int(i)),
           {"params": rand(2, 4, 3), "indices": torch.tensor(2)}, {"axis": 1},
           grads=("params",))
    c.case("gather_int64_params", lambda p, i: take(p, i, 0),
           {"params": randint(4, 2, lo=-9, hi=9), "indices": torch.tensor([[3, 0], [3, 1]])},
           {"axis": 0})
    # torch.gather picks along an axis per element; with the index expanded
    # over the other axes it is a take along that axis, a cross-check of take.
    p, i = rand(3, 6), torch.tensor([5, 0, 5, 2])
    expanded = torch.gather(p, 1, i.expand(3, 4))
    assert torch.equal(expanded, take(p, i, 1))
    c.case("gather_matches_torch_gather", lambda p, i: torch.gather(p, 1, i.expand(3, 4)),
           {"params": p, "indices": i}, {"axis": 1})
    c.case("embedding", lambda t, ids: F.embedding(ids, t),
           {"table": rand(6, 4), "ids": torch.tensor([[1, 5, 1], [0, 1, 2]])},
           grads=("table",))


def where(c):
    c.case("where_broadcast", torch.where,
           {"cond": randint(2, 1, 4, hi=2).bool(), "a": rand(3, 1), "b": rand(4)},
           grads=("a", "b"))
    c.case("where_same_shape", torch.where,
           {"cond": randint(3, 4, hi=2).bool(), "a": rand(3, 4), "b": rand(3, 4)},
           grads=("a", "b"))
    c.case("where_scalar_b", torch.where,
           {"cond": randint(2, 3, hi=2).bool(), "a": rand(2, 3),
            "b": torch.tensor(-1e9)}, grads=("a", "b"))
    c.case("where_int64", torch.where,
           {"cond": randint(5, hi=2).bool(), "a": randint(5, lo=-9, hi=9),
            "b": randint(1, lo=-9, hi=9)})


def fill(c):
    dtypes = {"float32": torch.float32, "float64": torch.float64, "int32": torch.int32,
              "int64": torch.int64, "bool": torch.bool}
    for name, shape, value, dtype in (("fill_float32", [2, 3], -1.5, "float32"),
                                      ("fill_float64_inf", [3], float("-inf"), "float64"),
                                      ("fill_int32", [2, 2], 7.0, "int32"),
                                      ("fill_int64_scalar", [], -3.0, "int64"),
                                      ("fill_bool", [4], 1.0, "bool"),
                                      ("fill_empty", [2, 0], 5.0, "float32")):
        # JSON has no infinities: non-finite attributes are written as strings,
        # as golden_io writes non-finite tensor values.
        attr = value if abs(value) != float("inf") else str(value)
        c.case(name, lambda: torch.full(shape, value, dtype=dtypes[dtype]), {},
               {"shape": shape, "value": attr, "dtype": dtype})
    for name, start, stop, step, dtype in (
            ("arange_int64", 0, 5, 1, "int64"),
            ("arange_int64_step3", -3, 10, 3, "int64"),
            ("arange_int32_negative_step", 5, -4, -2, "int32"),
            # (3.2 - 0.5) / 0.3 = 9.000000000000002: ten elements.
            ("arange_float32_fraction", 0.5, 3.2, 0.3, "float32"),
            ("arange_float64_negative_step", 1.0, 0.0, -0.25, "float64"),
            ("arange_float32_default_step", -2.0, 3.0, 1.0, "float32")):
        c.case(name, lambda: torch.arange(start, stop, step, dtype=dtypes[dtype]), {},
               {"start": start, "stop": stop, "step": step, "dtype": dtype})
    c.case("zeros_like_float32", torch.zeros_like, {"x": rand(2, 3)})
    c.case("ones_like_int64", torch.ones_like, {"x": randint(3, 1)})
    c.case("ones_like_bool", torch.ones_like, {"x": randint(2, 2, hi=2).bool()})


def gelu(c):
    # Both forms, over the range where the float32 kernel switches from its
    # polynomial (|x| < sqrt(2)) to its exp-times-polynomial tail, and far
    # out in the tails (x = -9: gelu ~ -1e-18).
    for form in ("none", "tanh"):
        run = lambda x, form=form: F.gelu(x, approximate=form)
        c.case(f"gelu_{form}_wide", run, {"x": rand(4, 129, lo=-9, hi=9)},
               {"approximate": form}, grads=("x",))
        c.case(f"gelu_{form}_near_switch", run, {"x": rand(3, 64, lo=1.2, hi=1.6)},
               {"approximate": form}, grads=("x",))
        c.case(f"gelu_{form}_float64", run, {"x": rand(5, 7, lo=-4, hi=4, dtype=torch.float64)},
               {"approximate": form}, grads=("x",))


def sampling(c):
    # argmax: the first maximum on ties (integers in [0, 3)), NaN the largest.
    for name, x, axis in (("argmax_rows", rand(5, 17), -1),
                          ("argmax_axis0", rand(6, 4, 3), 0),
                          ("argmax_middle_axis", rand(2, 9, 4), 1),
                          ("argmax_ties_int64", randint(4, 9, hi=3), 1),
                          ("argmax_nan", torch.tensor([[1.0, float("nan"), 3.0, float("nan")],
                                                       [2.0, 5.0, 5.0, -1.0]]), 1)):
        c.case(name, lambda x, axis=axis: torch.argmax(x, dim=axis), {"x": x}, {"axis": axis})
    # topk without ties (torch leaves the order of ties unspecified).
    for name, x, k, axis in (("rows", rand(4, 20), 5, -1),
                             ("middle_axis", rand(3, 10, 2), 4, 1),
                             ("int32", torch.randperm(24).reshape(2, 12).int(), 12, 1),
                             ("float64_axis0", rand(7, 3, dtype=torch.float64), 2, 0),
                             ("k_zero", rand(3, 5), 0, -1)):
        for part in ("values", "indices"):
            c.case(f"topk_{part}_{name}",
                   lambda x, k=k, axis=axis, part=part: getattr(torch.topk(x, k, dim=axis), part),
                   {"x": x}, {"k": k, "axis": axis})


def main():
    c = Cases("nn_ops", seed=0)
    layer_norm(c)
    gather(c)
    where(c)
    fill(c)
    gelu(c)
    sampling(c)
    c.write()


if __name__ == "__main__":
    main()
