"""Cases of the importer's elementwise ops (ops/onnx/import_ops_math.cc).

Binary ops run on every pair of edge values (a column against a row:
(n, 1) with (n,) -> (n, n)), so NaN, +-inf, -0.0 and the integer extremes
meet each other, and on operands of different ranks (0-d, one-element
tensors of higher rank, empty ones).
"""
import functools

import numpy as np

from case import Case, node, short
from values import I64, edge_values, positive, regular, specials

FLOATS = (np.float32, np.float64)
INTS = (np.int32, np.int64)
# Pairs of shapes that broadcast: across ranks, 0-d, one element, empty.
BROADCASTS = [((3,), (2, 1, 3)), ((), (2, 3)), ((1, 1, 1), (3,)), ((2, 1), (1, 3)),
              ((0, 3), (1, 3)), ((1,), ()), ((4, 1, 2), (1, 1))]



def all_pairs(op, dtype, opset, values=None, rhs=None, **kw):
    """`op` on every pair of edge values of `dtype`."""
    a = edge_values(dtype) if values is None else values
    b = a if rhs is None else rhs
    return Case(f"{op}/pairs_{short(dtype)}_opset{opset}", [node(op, ["a", "b"])],
                {"a": a.reshape(-1, 1), "b": b}, opset=opset, **kw)


def broadcasts(op, dtype, opset, make=regular):
    cases = []
    for sa, sb in BROADCASTS:
        name = f"{op}/broadcast_{'x'.join(map(str, sa)) or 'scalar'}_with_{'x'.join(map(str, sb)) or 'scalar'}"
        cases.append(Case(name, [node(op, ["a", "b"])],
                          {"a": regular(dtype, sa), "b": make(dtype, sb, start=5)}, opset=opset))
    return cases


def const_operand(op, dtype, opset, value):
    """The second operand an initializer or Constant of rank 2 holding one element."""
    return Case(f"{op}/const_operand_{short(dtype)}", [node(op, ["a", f"onnx::{op}_1"])],
                {"a": edge_values(dtype)}, consts={f"onnx::{op}_1": np.full((1, 1), value, dtype)},
                opset=opset)


def arithmetic():
    cases = []
    for op, opsets in [("Add", (7, 14)), ("Sub", (7, 14)), ("Mul", (7, 14))]:
        for opset in opsets:
            cases += [all_pairs(op, t, opset) for t in FLOATS + INTS]
        cases += broadcasts(op, np.float32, 14) + [const_operand(op, np.float32, 14, -0.0),
                                                    const_operand(op, np.int64, 14, 2**53 + 1)]
    for opset in (7, 14):
        cases += [all_pairs("Div", t, opset) for t in FLOATS]
        # Integer division by 0, or of the lowest value by -1, traps (SIGFPE) in
        # ONNX Runtime as in C: the divisors leave out 0 and -1 (test_robustness
        # runs those on dagrad alone).
        cases += [all_pairs("Div", t, opset, rhs=np.array(
            [v for v in edge_values(t) if v not in (0, -1)], t)) for t in INTS]
    cases += broadcasts("Div", np.float32, 14, make=positive)
    return cases


def comparisons():
    cases = []
    for op, opsets, dtypes in [
            ("Equal", (7,), INTS + (np.bool_,)), ("Equal", (11, 13), FLOATS + INTS + (np.bool_,)),
            ("Less", (7,), FLOATS), ("Less", (9, 13), FLOATS + INTS),
            ("Greater", (7,), FLOATS), ("Greater", (9, 13), FLOATS + INTS),
            ("LessOrEqual", (12, 16), FLOATS + INTS), ("GreaterOrEqual", (12, 16), FLOATS + INTS)]:
        cases += [all_pairs(op, t, opset) for opset in opsets for t in dtypes]
    for op in ("Equal", "Less", "LessOrEqual", "GreaterOrEqual"):
        cases += broadcasts(op, np.float32, 13 if op in ("Equal", "Less") else 16)
    for op in ("And", "Or"):
        cases += [all_pairs(op, np.bool_, 7)] + broadcasts(op, np.bool_, 7)
    cases.append(Case("Not/bool", [node("Not", ["x"])], {"x": np.array([[True, False]])}, opset=1))
    cases.append(Case("Not/scalar", [node("Not", ["x"])], {"x": np.array(True)}, opset=1))
    return cases


def unary(op, opsets, dtypes=FLOATS, ulps=2, atol=0.0, signed_zero=True, shapes=True, tag="", **attrs):
    cases = []
    for opset in opsets:
        for t in dtypes:
            cases.append(Case(f"{op}/edges{tag}_{short(t)}_opset{opset}", [node(op, ["x"], **attrs)],
                              {"x": edge_values(t)}, opset=opset, ulps=ulps, atol=atol,
                              signed_zero=signed_zero))
    t = dtypes[0]
    for shape in [(), (0,), (2, 1, 3)] if shapes else []:
        cases.append(Case(f"{op}/shape_{'x'.join(map(str, shape)) or 'scalar'}",
                          [node(op, ["x"], **attrs)], {"x": regular(t, shape)}, opset=opsets[-1],
                          ulps=ulps, atol=atol, signed_zero=signed_zero))
    return cases


def unaries():
    cases = unary("Exp", (6, 13)) + unary("Log", (6, 13))
    cases += unary("Sqrt", (6, 13)) + unary("Reciprocal", (6, 13))
    # ONNX Runtime's Tanh flushes tanh(1e-45) to 0 (dagrad keeps the
    # denormal, as libm does).
    cases += unary("Tanh", (6, 13), atol=1e-44)
    # ONNX Runtime's Sigmoid is 200 (float32, MLAS) and 400 (float64)
    # epsilons off at -7.25, where dagrad is within an ulp of
    # 1 / (1 + exp(7.25)) = 7.0967039910058816e-4.
    cases += unary("Sigmoid", (6, 13), ulps=512)
    # ONNX Runtime's float64 sin(3) is 4 epsilons (relative) below libm's,
    # which is correctly rounded.
    cases += unary("Sin", (7,), ulps=8) + unary("Cos", (7,), ulps=8)
    # ONNX Runtime has no float64 Erf or Softplus.
    cases += unary("Erf", (13,), dtypes=(np.float32,), ulps=8)
    cases += unary("Softplus", (1,), dtypes=(np.float32,), ulps=8) + unary("Abs", (13,))
    # max(x, 0) may give either zero for -0.0 (IEEE maxNum).
    cases += unary("Relu", (6, 13), signed_zero=False) + unary("Relu", (14,), dtypes=INTS, shapes=False)
    # ONNX Runtime has no float64 LeakyRelu before opset 16.
    cases += unary("LeakyRelu", (6,), dtypes=(np.float32,), shapes=False) + unary("LeakyRelu", (16,))
    cases += unary("LeakyRelu", (16,), shapes=False, tag="_alpha_-0.5", alpha=-0.5)
    cases += [Case("LeakyRelu/alpha_0", [node("LeakyRelu", ["x"], alpha=0.0)],
                   {"x": specials(np.float32)}, opset=16)]
    cases += unary("Neg", (6, 13), dtypes=FLOATS + INTS)
    cases += unary("Identity", (1, 13, 16), dtypes=FLOATS + INTS + (np.bool_,))
    return cases


def numpy_fold(f, names):
    return lambda inputs: {"y": functools.reduce(f, [inputs[n] for n in names])}


def variadic():
    cases = []
    # Max and Min may give either zero for max(-0.0, 0.0) (IEEE maxNum).
    # ONNX Runtime has no float64 Mean.
    for op, dtypes, signed_zero in [("Sum", FLOATS, True), ("Mean", (np.float32,), True),
                                    ("Max", FLOATS, False), ("Min", FLOATS, False)]:
        for opset in (8, 13):
            cases += [all_pairs(op, t, opset, signed_zero=signed_zero) for t in dtypes]
            cases.append(Case(f"{op}/one_input_opset{opset}", [node(op, ["a"])],
                              {"a": specials(np.float32)}, opset=opset))
        cases.append(Case(f"{op}/three_ranks", [node(op, ["a", "b", "c"])],
                          {"a": regular(np.float32, (2, 1, 1)), "b": regular(np.float32, (3, 1), 4),
                           "c": regular(np.float32, (4,), 9)}, opset=13))
        cases.append(Case(f"{op}/with_scalar", [node(op, ["a", "b"])],
                          {"a": specials(np.float32), "b": np.array(0.5, np.float32)}, opset=13,
                          signed_zero=signed_zero))
    # ONNX Runtime's int64 Max and Min get values with bit 31 set wrong
    # (Max(0, 2^31) = 0, Min(0, 2^31) = 2^31): numpy is the oracle.
    for op, f in (("Max", np.maximum), ("Min", np.minimum)):
        cases += [all_pairs(op, t, 13, oracle=numpy_fold(f, "ab")) for t in INTS]
    return cases


def where():
    cases = []
    for opset in (9, 16):
        for t in FLOATS + INTS:  # ONNX Runtime has no bool Where
            x = edge_values(t)
            cond = np.array([True, False, True]).reshape(3, 1)
            cases.append(Case(f"Where/edges_{short(t)}_opset{opset}",
                              [node("Where", ["c", "t", "f"])],
                              {"c": cond, "t": x, "f": x[:1].reshape(())}, opset=opset))
    cases.append(Case("Where/broadcast_three_ranks", [node("Where", ["c", "t", "f"])],
                      {"c": np.array([True, False]).reshape(2, 1, 1),
                       "t": regular(np.float32, (3, 1)), "f": regular(np.float32, (4,), 7)},
                      opset=16))
    return cases


def cast_source(src, dst):
    """Edge values of `src` that `dst` can hold: casting NaN, inf or an
    out-of-range float to an integer is undefined in ONNX (and in C)."""
    x = edge_values(src)
    if np.issubdtype(src, np.floating) and np.issubdtype(dst, np.integer):
        info = np.iinfo(dst)
        with np.errstate(invalid="ignore"):
            keep = np.isfinite(x) & (x > info.min) & (x < info.max)
        x = np.concatenate([x[keep], np.array([-2.7, 2.7, 2.5, -0.5, 1e6], src)])
    return x


def casts():
    cases = []
    dtypes = FLOATS + INTS + (np.bool_,)
    codes = {np.float32: 1, np.float64: 11, np.int32: 6, np.int64: 7, np.bool_: 9}
    for opset in (6, 13):
        for src in dtypes:
            for dst in dtypes:
                cases.append(Case(f"Cast/{short(src)}_to_{short(dst)}_opset{opset}",
                                  [node("Cast", ["x"], to=codes[dst])],
                                  {"x": cast_source(src, dst)}, opset=opset))
    for src in dtypes:
        for dst in dtypes:
            cases.append(Case(f"CastLike/{short(src)}_like_{short(dst)}",
                              [node("CastLike", ["x", "like"])],
                              {"x": cast_source(src, dst), "like": np.zeros((2,), dst)}, opset=15))
    return cases


def clip_case(name, x, opset, lo=None, hi=None, oracle=None, **attrs):
    inputs, consts = ["x"], {}
    for i, bound in enumerate((lo, hi)):
        if bound is None:
            inputs.append("")
        else:
            inputs.append(f"onnx::Clip_{i + 1}")
            consts[f"onnx::Clip_{i + 1}"] = bound
    while inputs[-1] == "":
        inputs.pop()
    # Clip is a max and a min: either zero may come out for -0.0 (IEEE maxNum).
    return Case(f"Clip/{name}", [node("Clip", inputs, **attrs)], {"x": x}, consts=consts,
                opset=opset, signed_zero=False, oracle=oracle)


def clips():
    x = specials(np.float32)
    f = lambda v: np.array(v, np.float32)  # noqa: E731
    cases = [clip_case("attrs_opset6", x, 6, min=-1.0, max=2.0), clip_case("attr_min_opset6", x, 6, min=-0.0),
             clip_case("no_bounds_opset6", x, 6)]
    for opset in (11, 13):
        cases += [clip_case(f"both_opset{opset}", x, opset, f(-1.0), f(2.0)),
                  clip_case(f"min_only_opset{opset}", x, opset, lo=f(0.0)),
                  clip_case(f"max_only_opset{opset}", x, opset, hi=f(-0.0)),
                  clip_case(f"min_above_max_opset{opset}", x, opset, f(3.0), f(1.0))]
    cases.append(clip_case("float64", specials(np.float64), 13, np.array(-1.0), np.array(1.0)))
    # ONNX Runtime's int64 Clip leaves 2^31 above a bound of 2^24 + 1 (its
    # int64 min and max miss values with bit 31 set): numpy is the oracle.
    for t in INTS:
        lo, hi = np.array(np.iinfo(t).min + 1, t), np.array(2**24 + 1, t)
        cases.append(clip_case(f"{short(t)}_extremes", edge_values(t), 13, lo, hi,
                               oracle=lambda i, lo=lo, hi=hi: {"y": np.clip(i["x"], lo, hi)}))
    hi = np.array(I64.max - 1, np.int64)
    cases.append(clip_case("int64_max_only", edge_values(np.int64), 13, hi=hi,
                           oracle=lambda i: {"y": np.minimum(i["x"], hi)}))
    return cases


def foreign_dtypes():
    """Element types dagrad lacks (ops/onnx/onnx_tensor.h), as inputs,
    outputs and initializers: each a clean refusal."""
    cases = []
    for t in (np.float16, np.uint8, np.int8, np.int16):
        cases.append(Case(f"Identity/{short(t)}", [node("Identity", ["x"])], {"x": np.ones((2,), t)}, opset=13))
    cases += [Case("Add/float16", [node("Add", ["a", "b"])],
                   {"a": np.ones((2,), np.float16), "b": np.ones((2,), np.float16)}, opset=14),
              Case("Cast/float32_to_float16", [node("Cast", ["x"], to=10)], {"x": specials(np.float32)}, opset=13),
              Case("Cast/float32_to_uint8", [node("Cast", ["x"], to=2)], {"x": np.array([1.0, 2.0], np.float32)},
                   opset=13),
              Case("Add/uint8_initializer", [node("Cast", ["onnx::Cast_1"], ["c"], to=1), node("Add", ["a", "c"])],
                   {"a": np.ones((2,), np.float32)}, consts={"onnx::Cast_1": np.array([1, 2], np.uint8)}, opset=13)]
    return cases


def robustness():
    """Integer division by 0 and INT64_MIN / -1 trap in C and in ONNX Runtime,
    whose result ONNX leaves undefined: dagrad alone runs them, and must give
    a result or a clean error, never a crash."""
    cases = []
    for t in INTS:
        low = np.iinfo(t).min
        cases.append(Case(f"Div/{short(t)}_by_zero", [node("Div", ["a", "b"])],
                          {"a": np.array([7, low, 0], t), "b": np.array([0, 0, 0], t)}, opset=14, reference=False))
        cases.append(Case(f"Div/{short(t)}_min_by_minus_one", [node("Div", ["a", "b"])],
                          {"a": np.array([low], t), "b": np.array([-1], t)}, opset=14, reference=False))
    return cases


def all_cases():
    return (arithmetic() + comparisons() + unaries() + variadic() + where() + casts() + clips()
            + foreign_dtypes() + robustness())
