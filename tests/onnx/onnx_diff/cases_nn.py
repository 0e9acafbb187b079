"""Cases of Pow, the matrix products, softmax, reductions, layer norm,
dropout, ArgMax/ArgMin, Trilu, Gelu and the erf-GELU fusion
(ops/onnx/import_ops_math.cc, import_ops_nn.cc, import_gelu.cc).
"""
import math

import numpy as np

from case import Case, node, short
from values import I64, edge_values, regular, specials

FLOATS = (np.float32, np.float64)
F = np.float32
# Softmax rows: one ordinary, one with +inf, one with -inf, one with NaN,
# one whose differences overflow.
ROWS = np.array([[0.5, -1.0, 2.0, 0.0], [1.0, np.inf, 0.0, -1.0], [-np.inf, 0.0, -np.inf, 1.0],
                 [np.nan, 1.0, 2.0, 3.0], [3e38, -3e38, 3e38, 0.0]], F)
MASKED = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0]], F)


def pow_cases():
    cases = []
    for opset in (7, 12, 13, 15):
        for e in (2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 0.0):
            for t in FLOATS:
                cases.append(Case(f"Pow/{short(t)}_pow_{e}_opset{opset}", [node("Pow", ["x", "onnx::Pow_1"])],
                                  {"x": specials(t)}, consts={"onnx::Pow_1": np.array(e, t)}, opset=opset))
    for e_type in (np.int64, np.int32, np.float64):
        cases.append(Case(f"Pow/exponent_{short(e_type)}", [node("Pow", ["x", "onnx::Pow_1"])],
                          {"x": specials(F)}, consts={"onnx::Pow_1": np.array(3, e_type)}, opset=13))
    # The exponent's shape broadcasts with x's like any operand's.
    for name, x_shape, e_shape in [("x_3_e_2x1x1", (3,), (2, 1, 1)), ("x_3x1_e_empty", (3, 1), (0,)),
                                   ("x_scalar_e_1", (), (1,)), ("x_2x3_e_1x1", (2, 3), (1, 1))]:
        cases.append(Case(f"Pow/broadcast_{name}", [node("Pow", ["x", "onnx::Pow_1"])],
                          {"x": regular(F, x_shape)}, consts={"onnx::Pow_1": np.full(e_shape, 2.0, F)},
                          opset=13))
    cases.append(Case("Pow/exponents_differ", [node("Pow", ["x", "onnx::Pow_1"])],
                      {"x": regular(F, (2,))}, consts={"onnx::Pow_1": np.array([2.0, 3.0], F)}, opset=13))
    cases.append(Case("Pow/exponent_an_input", [node("Pow", ["x", "e"])],
                      {"x": specials(F), "e": np.array(2.0, F)}, opset=13))
    cases.append(Case("Pow/int64_base", [node("Pow", ["x", "onnx::Pow_1"])],
                      {"x": np.array([-3, 2, 5], np.int64)}, consts={"onnx::Pow_1": np.array(2, np.int64)},
                      opset=13))
    return cases



def matmuls():
    cases = []
    shapes = [("2x3_3x4", (2, 3), (3, 4)), ("vec_mat", (3,), (3, 4)), ("mat_vec", (2, 3), (3,)),
              ("vec_vec", (3,), (3,)), ("batched_broadcast", (2, 1, 2, 3), (4, 3, 5)),
              ("empty_k", (2, 0), (0, 3)), ("batch_vec", (2, 2, 3), (3,))]
    for opset in (9, 13):
        for t in FLOATS:
            for name, sa, sb in shapes:
                cases.append(Case(f"MatMul/{name}_{short(t)}_opset{opset}", [node("MatMul", ["a", "b"])],
                                  {"a": regular(t, sa), "b": regular(t, sb, 3)}, opset=opset))
    x = specials(F)[:4].reshape(2, 2)  # NaN, inf, -inf, -0.0: what reaches a sum of products
    cases.append(Case("MatMul/specials", [node("MatMul", ["a", "b"])],
                      {"a": x, "b": np.array([[0.0, 1.0], [1.0, -0.0]], F)}, opset=13))
    cases.append(Case("MatMul/int32", [node("MatMul", ["a", "b"])],
                      {"a": regular(np.int32, (2, 3)), "b": regular(np.int32, (3, 2))}, opset=13))
    return cases


def gemms():
    cases = []
    a, b = regular(F, (2, 3)), regular(F, (3, 4), 5)
    for opset in (7, 11, 13):
        for c_shape in [(), (4,), (2, 1), (2, 4), (1, 4)]:
            cases.append(Case(f"Gemm/c_{'x'.join(map(str, c_shape)) or 'scalar'}_opset{opset}",
                              [node("Gemm", ["a", "b", "c"], alpha=0.5, beta=-2.0)],
                              {"a": a, "b": b, "c": regular(F, c_shape, 9)}, opset=opset))
    cases += [Case("Gemm/transposed", [node("Gemm", ["a", "b", "c"], transA=1, transB=1)],
                   {"a": a.T.copy(), "b": b.T.copy(), "c": regular(F, (4,))}, opset=13),
              Case("Gemm/no_c", [node("Gemm", ["a", "b"])], {"a": a, "b": b}, opset=13),
              Case("Gemm/beta_0_nan_c", [node("Gemm", ["a", "b", "c"], beta=0.0)],
                   {"a": a, "b": b, "c": np.full((4,), np.nan, F)}, opset=13),
              Case("Gemm/float64", [node("Gemm", ["a", "b", "c"])],
                   {"a": a.astype(np.float64), "b": b.astype(np.float64), "c": np.ones((1,))}, opset=13),
              Case("Gemm/c_initializer", [node("Gemm", ["a", "b", "onnx::Gemm_1"])],
                   {"a": a, "b": b}, consts={"onnx::Gemm_1": regular(F, (4,))}, opset=13)]
    return cases


def torch_log_softmax(x):
    """log_softmax along the last axis as torch computes it."""
    with np.errstate(invalid="ignore"):
        m = x.max(axis=-1, keepdims=True)
        return (x - m) - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def log_softmax_float64():
    """dagrad computes (x - max) - log(sum), as torch does, where ONNX
    Runtime's float64 kernel may round differently: a few epsilons. A row
    holding +inf is NaN throughout in torch and dagrad (the golden
    log_softmax_specials of tools/goldens/edges.py pins it for dagrad's op),
    but -inf at its finite entries in ONNX Runtime: there torch's formula in
    numpy is the oracle."""
    rows = ROWS.astype(np.float64)
    inf_row = (rows == np.inf).any(axis=-1)
    return [Case("LogSoftmax/float64", [node("LogSoftmax", ["x"])], {"x": rows[~inf_row]}, opset=13, ulps=4),
            Case("LogSoftmax/float64_inf_row", [node("LogSoftmax", ["x"])], {"x": rows[inf_row]}, opset=13,
                 oracle=lambda i: {"y": torch_log_softmax(i["x"])})]


def softmaxes():
    cases = []
    x3 = regular(F, (2, 3, 4))
    for op in ("Softmax", "LogSoftmax"):
        # x - max - log(sum) cancels: an ulp of the O(1) inputs, absolute.
        atol = 2.4e-7 if op == "LogSoftmax" else 0.0
        for opset, axes in [(11, (0, 1, 2, -1, -3)), (13, (0, 1, -1))]:
            for axis in axes:
                cases.append(Case(f"{op}/axis_{axis}_opset{opset}", [node(op, ["x"], axis=axis)],
                                  {"x": x3}, opset=opset, atol=atol))
            cases.append(Case(f"{op}/specials_opset{opset}", [node(op, ["x"])], {"x": ROWS}, opset=opset,
                              atol=atol))
        if op == "Softmax":
            cases.append(Case(f"{op}/float64", [node(op, ["x"])], {"x": ROWS.astype(np.float64)}, opset=13))
        else:
            cases += log_softmax_float64()
        # A row of -inf is NaN under ONNX Runtime; dagrad's Softmax gives it
        # zeros on purpose (DESIGN.md: "A softmax row with every position
        # masked yields zeros ..., never NaN"), its LogSoftmax NaN.
        oracle = None
        if op == "Softmax":
            oracle = lambda i: {"y": np.array([[0, 0, 0], [1 / (1 + np.e), 0, np.e / (1 + np.e)]], F)}  # noqa: E731
        cases.append(Case(f"{op}/masked_row", [node(op, ["x"])], {"x": MASKED}, opset=13, atol=atol,
                          oracle=oracle))
        cases.append(Case(f"{op}/default_axis_opset11", [node(op, ["x"])], {"x": x3}, opset=11, atol=atol))
    return cases


def reduce_case(op, name, x, opset, axes=None, as_input=False, oracle=None, **attrs):
    inputs, consts = ["x"], {}
    if axes is not None and as_input:
        inputs.append(f"onnx::{op}_1")
        consts[f"onnx::{op}_1"] = np.array(axes, np.int64)
    elif axes is not None:
        attrs["axes"] = axes
    # A sum's accumulator starts at +0.0: a sum of -0.0s may be either zero.
    return Case(f"{op}/{name}_opset{opset}", [node(op, inputs, **attrs)], {"x": x}, consts=consts,
                opset=opset, signed_zero=op not in ("ReduceSum", "ReduceMean"), oracle=oracle)


# Integer rows whose sums do not overflow (ONNX leaves that undefined) but
# are no doubles: 2^53 + 5, -2^53 - 3. ONNX Runtime's int64 ReduceSum goes
# through double (2^53 + 5 -> 2^53 + 4), and its int64 max misses values with
# bit 31 set (max(2^31 - 1, 2^31) = 2^31 - 1): numpy is their oracle.
INT64_ROWS = np.array([[2**53, 1, 1, 2**62, -(2**62), 3], [-(2**53) - 1, -1, -1, 0, 2**31, -(2**31)],
                       [0, 1, 2, 2**31 - 1, 2**31, 2**32 + 1]], np.int64)
NUMPY_REDUCE = {"ReduceSum": lambda i: {"y": i["x"].sum(axis=1, keepdims=True)},
                "ReduceMax": lambda i: {"y": i["x"].max(axis=1, keepdims=True)}}


def reductions():
    cases = []
    x = regular(F, (2, 3, 4))
    nan_inf = np.array([[np.nan, 1.0, 2.0], [np.inf, -np.inf, 1.0], [-0.0, -0.0, -0.0],
                        [3e38, 3e38, -1.0]], F)
    for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"):
        input_since = 13 if op == "ReduceSum" else 18
        for opset in (11, 13, 17):
            as_input = opset >= input_since
            for name, axes in [("all", None), ("axis0", [0]), ("last", [-1]), ("two", [0, 2])]:
                for keepdims in (0, 1):
                    cases.append(reduce_case(op, f"{name}_keep{keepdims}", x, opset, axes, as_input,
                                             keepdims=keepdims))
            cases.append(reduce_case(op, "specials", nan_inf, opset, [1], as_input))
        cases.append(reduce_case(op, "empty_axis", np.zeros((0, 3), F), 13, [1], op == "ReduceSum"))
        cases.append(reduce_case(op, "float64", nan_inf.astype(np.float64), 13, [0], op == "ReduceSum"))
        cases.append(reduce_case(op, "int64", INT64_ROWS, 13, [1], op == "ReduceSum",
                                 oracle=NUMPY_REDUCE.get(op)))
        cases.append(reduce_case(op, "int32", edge_values(np.int32).reshape(2, 5), 13, [0],
                                 op == "ReduceSum"))
    for name, axes in [("all", None), ("last", [-1]), ("two", [0, 2])]:
        for keepdims in (0, 1):
            cases.append(reduce_case("ReduceSumSquare", f"{name}_keep{keepdims}", x, 13, axes,
                                     keepdims=keepdims))
    cases.append(reduce_case("ReduceSum", "noop_empty_axes", x, 13, noop_with_empty_axes=1))
    cases.append(reduce_case("ReduceSum", "reduce_empty_to_zero", np.zeros((0, 3), F), 13, [0], True))
    return cases


# Normalised values are O(1) and some cancel to near 0: an ulp of 1.
LN_ATOL = 2.4e-7


def layer_norms():
    cases = []
    x = np.concatenate([regular(F, (3, 4)), np.array([[np.nan, 1, 2, 3], [1e15, -1e15, 0, 1]], F)])
    for axis, d in [(-1, (4,)), (1, (4,)), (0, (5, 4)), (-2, (5, 4))]:
        for bias in (True, False):
            inputs = ["x", "onnx::LN_scale"] + (["onnx::LN_bias"] if bias else [])
            consts = {"onnx::LN_scale": regular(F, d, 1)}
            if bias:
                consts["onnx::LN_bias"] = regular(F, d, 3)
            cases.append(Case(f"LayerNormalization/axis_{axis}_bias_{bias}",
                              [node("LayerNormalization", inputs, axis=axis, epsilon=1e-3)],
                              {"x": x}, consts=consts, opset=17, atol=LN_ATOL))
    cases.append(Case("LayerNormalization/mean_and_inv_std",
                      [node("LayerNormalization", ["x", "s"], ["y", "mean", "inv_std"], axis=-1)],
                      {"x": regular(F, (2, 3, 4)), "s": np.ones((4,), F)}, opset=17,
                      outputs=("y", "mean", "inv_std"), atol=LN_ATOL))
    cases.append(Case("LayerNormalization/float64", [node("LayerNormalization", ["x", "s", "b"])],
                      {"x": regular(np.float64, (2, 5)), "s": regular(np.float64, (5,)),
                       "b": regular(np.float64, (5,), 2)}, opset=17, atol=1e-15))
    return cases


def dropouts():
    x = specials(F)
    cases = [Case(f"Dropout/ratio_attr_opset{opset}", [node("Dropout", ["x"], ratio=0.25)],
                  {"x": x}, opset=opset) for opset in (7, 10)]
    for opset in (12, 13):
        cases.append(Case(f"Dropout/ratio_input_opset{opset}", [node("Dropout", ["x", "onnx::Dropout_1"])],
                          {"x": x}, consts={"onnx::Dropout_1": np.array(0.25, F)}, opset=opset))
        cases.append(Case(f"Dropout/no_ratio_opset{opset}", [node("Dropout", ["x"])], {"x": x}, opset=opset))
    cases += [Case("Dropout/ratio_float64", [node("Dropout", ["x", "onnx::Dropout_1"])],
                   {"x": x}, consts={"onnx::Dropout_1": np.array(0.1)}, opset=13),
              Case("Dropout/training_mode_false", [node("Dropout", ["x", "r/ratio", "r/training_mode"])],
                   {"x": x}, consts={"r/ratio": np.array(0.5, F), "r/training_mode": np.array(False)}, opset=13),
              Case("Dropout/mask_output", [node("Dropout", ["x"], ["y", "mask"])], {"x": x}, opset=13,
                   outputs=("y", "mask"))]
    return cases


def arg_extremes():
    cases = []
    ties = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, -5.0, -5.0], [-0.0, 0.0, np.inf, -np.inf]], F)
    for op in ("ArgMax", "ArgMin"):
        for opset in (11, 12, 13):
            for axis in (0, 1, -1):
                for keepdims in (0, 1):
                    cases.append(Case(f"{op}/axis_{axis}_keep{keepdims}_opset{opset}",
                                      [node(op, ["x"], axis=axis, keepdims=keepdims)], {"x": ties}, opset=opset))
            if opset >= 12:
                cases.append(Case(f"{op}/last_index_opset{opset}",
                                  [node(op, ["x"], axis=1, select_last_index=1)], {"x": ties}, opset=opset))
        cases.append(Case(f"{op}/float64", [node(op, ["x"], axis=1)], {"x": ties.astype(np.float64)}, opset=13))
        cases.append(Case(f"{op}/int64", [node(op, ["x"], axis=1)],
                          {"x": edge_values(np.int64).reshape(3, 5)}, opset=13))
        cases.append(Case(f"{op}/rank3_keepdims", [node(op, ["x"], axis=1)], {"x": regular(F, (2, 3, 4))},
                          opset=13))
    return cases


def trilus():
    cases = []
    for shape in [(3, 4), (2, 4, 3), (0, 3)]:
        for t in (F, np.float64, np.int64):
            for upper in (0, 1):
                cases.append(Case(f"Trilu/{'x'.join(map(str, shape))}_{short(t)}_upper{upper}",
                                  [node("Trilu", ["x"], upper=upper)], {"x": regular(t, shape)}, opset=14))
    for k in (1, -1, 3, -5, I64.max, I64.min, 2**53 + 1, -(2**53) - 1):
        for upper in (0, 1):
            cases.append(Case(f"Trilu/k_{k}_upper{upper}", [node("Trilu", ["x", "onnx::Trilu_1"], upper=upper)],
                              {"x": regular(F, (3, 4))}, consts={"onnx::Trilu_1": np.array(k, np.int64)},
                              opset=14))
    return cases


# ONNX Runtime evaluates 0.5 x (1 + erf(x / sqrt 2)) in float32 (its Gelu-20
# too), where 1 + erf cancels for x < 0: off by up to |x| 2^-25 (-0.0155241
# for gelu(-2.5) = -0.01552416), 2.2e-7 at the inputs' -7.25; dagrad's fused
# Gelu is not. It has no float64 Erf.
GELU_ATOL = 2.5e-7


def gelus():
    """ONNX's Gelu is opset 20, past dagrad's 17: ONNX Runtime runs the node at
    opset 20, dagrad the same node at 17."""
    return [Case(f"Gelu/{approximate}", [node("Gelu", ["x"], approximate=approximate)], {"x": specials(F)},
                 opset=17, ort_opset=20, atol=GELU_ATOL) for approximate in ("none", "tanh")]


def gelu_fusion(name, x, opset, const_shape=(), dagrad_order=False, mul_by_inv_sqrt2=False):
    """PyTorch's erf GELU, x * (1 + erf(x / sqrt 2)) * 0.5, or dagrad's export
    of it, (x * 0.5) * (1 + erf(x * (1 / sqrt 2))), its constants of `const_shape`."""
    c = lambda v: np.full(const_shape, v, x.dtype)  # noqa: E731
    scale = (node("Mul", ["x", "k_isqrt2"], ["s"]) if mul_by_inv_sqrt2
             else node("Div", ["x", "k_sqrt2"], ["s"]))
    nodes = [scale, node("Erf", ["s"], ["e"]), node("Add", ["e", "k_one"], ["p"])]
    if dagrad_order:
        nodes += [node("Mul", ["x", "k_half"], ["h"]), node("Mul", ["h", "p"], ["y"])]
    else:
        nodes += [node("Mul", ["x", "p"], ["m"]), node("Mul", ["m", "k_half"], ["y"])]
    consts = {"k_sqrt2": c(math.sqrt(2.0)), "k_isqrt2": c(math.sqrt(0.5)), "k_one": c(1.0), "k_half": c(0.5)}
    consts = {k: v for k, v in consts.items() if any(k in n.input for n in nodes)}
    return Case(f"GeluFusion/{name}", nodes, {"x": x}, consts=consts, opset=opset, atol=GELU_ATOL)


def gelu_fusions():
    x = specials(F)
    cases = [gelu_fusion(f"pytorch_opset{opset}", x, opset) for opset in (9, 13, 17)]
    cases += [gelu_fusion("dagrad_order", x, 17, dagrad_order=True),
              gelu_fusion("mul_by_inv_sqrt2", x, 17, mul_by_inv_sqrt2=True, dagrad_order=True),
              gelu_fusion("consts_rank1", x, 17, const_shape=(1,)),
              gelu_fusion("consts_rank2", x[:5], 17, const_shape=(1, 1)),
              gelu_fusion("consts_rank3_x_2d", regular(F, (2, 3)), 17, const_shape=(1, 1, 1)),
              gelu_fusion("consts_2x1_not_fused", regular(F, (3,)), 17, const_shape=(2, 1))]
    return cases


def all_cases():
    return (pow_cases() + matmuls() + gemms() + softmaxes() + reductions() + layer_norms()
            + dropouts() + arg_extremes() + trilus() + gelus() + gelu_fusions())
