"""Cases of the importer's shape ops and constant makers
(ops/onnx/import_ops_shape.cc, import_ops_constant.cc).
"""
import numpy as np
from onnx import helper, numpy_helper

from case import Case, node
from values import I32, I64, edge_values, regular, specials

F = np.float32
X = regular(F, (2, 3, 4))


def ints(*v, dtype=np.int64):
    return np.array(v, dtype)


def shape_ops():
    cases = [Case("Shape/rank3", [node("Shape", ["x"])], {"x": X}, opset=13),
             Case("Shape/scalar", [node("Shape", ["x"])], {"x": np.array(1.0, F)}, opset=13),
             Case("Size/rank3", [node("Size", ["x"])], {"x": X}, opset=13),
             Case("Size/empty", [node("Size", ["x"])], {"x": np.zeros((2, 0), F)}, opset=13)]
    for start, end in [(1, None), (-1, None), (0, -1), (-10, 10), (2, 1), (None, -2), (int(I64.min), int(I64.max))]:
        attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
        cases.append(Case(f"Shape/start_{start}_end_{end}", [node("Shape", ["x"], **attrs)], {"x": X},
                          opset=15))
    return cases


def reshapes():
    cases = []
    for opset in (5, 13, 14):
        for shape in [(-1,), (4, -1), (0, 12), (0, 0, -1), (2, 3, 2, 2), (24, 1)]:
            cases.append(Case(f"Reshape/{'_'.join(map(str, shape))}_opset{opset}",
                              [node("Reshape", ["x", "onnx::Reshape_1"])], {"x": X},
                              consts={"onnx::Reshape_1": ints(*shape)}, opset=opset))
    cases += [Case("Reshape/allowzero_empty", [node("Reshape", ["x", "onnx::Reshape_1"], allowzero=1)],
                   {"x": np.zeros((0, 3), F)}, consts={"onnx::Reshape_1": ints(3, 0)}, opset=14),
              Case("Reshape/to_scalar", [node("Reshape", ["x", "onnx::Reshape_1"])],
                   {"x": np.ones((1, 1), F)}, consts={"onnx::Reshape_1": ints()}, opset=13),
              Case("Reshape/int64_extremes", [node("Reshape", ["x", "onnx::Reshape_1"])],
                   {"x": edge_values(np.int64)}, consts={"onnx::Reshape_1": ints(3, 5)}, opset=13)]
    return cases


def flattens():
    cases = []
    for opset in (9, 11, 13):
        for axis in (0, 1, 2, 3) + ((-1, -3) if opset >= 11 else ()):
            cases.append(Case(f"Flatten/axis_{axis}_opset{opset}", [node("Flatten", ["x"], axis=axis)],
                              {"x": X}, opset=opset))
    return cases


def transposes():
    cases = [Case("Transpose/default", [node("Transpose", ["x"])], {"x": X}, opset=13),
             Case("Transpose/rank1", [node("Transpose", ["x"])], {"x": regular(F, (3,))}, opset=13),
             Case("Transpose/int64", [node("Transpose", ["x"], perm=[1, 0])],
                  {"x": edge_values(np.int64).reshape(3, 5)}, opset=13)]
    for perm in ([1, 0, 2], [2, 0, 1], [0, 1, 2]):
        cases.append(Case(f"Transpose/perm_{'_'.join(map(str, perm))}", [node("Transpose", ["x"], perm=perm)],
                          {"x": X}, opset=13))
    return cases


def axes_case(op, name, x, opset, axes):
    """Axes an attribute before opset 13, an input from 13 (or absent)."""
    if axes is None:
        return Case(f"{op}/{name}_opset{opset}", [node(op, ["x"])], {"x": x}, opset=opset)
    if opset < 13:
        return Case(f"{op}/{name}_opset{opset}", [node(op, ["x"], axes=axes)], {"x": x}, opset=opset)
    return Case(f"{op}/{name}_opset{opset}", [node(op, ["x", f"onnx::{op}_1"])], {"x": x},
                consts={f"onnx::{op}_1": ints(*axes)}, opset=opset)


def squeezes():
    cases = []
    x = regular(F, (1, 3, 1, 2))
    for opset in (11, 13):
        cases += [axes_case("Squeeze", "all", x, opset, None), axes_case("Squeeze", "axis0", x, opset, [0]),
                  axes_case("Squeeze", "negative", x, opset, [-2]),
                  axes_case("Squeeze", "two", x, opset, [0, 2]),
                  axes_case("Squeeze", "to_scalar", np.ones((1, 1), F), opset, None)]
        cases += [axes_case("Unsqueeze", "front", x, opset, [0]),
                  axes_case("Unsqueeze", "back", x, opset, [-1]),
                  axes_case("Unsqueeze", "two", x, opset, [0, 5]),
                  axes_case("Unsqueeze", "unsorted", x, opset, [3, -6]),
                  axes_case("Unsqueeze", "scalar", np.array(2.0, F), opset, [0]),
                  axes_case("Unsqueeze", "int64", edge_values(np.int64), opset, [1])]
    return cases


def concats():
    cases = []
    for opset in (4, 11, 13):
        axes = (0, 1, 2) + ((-1, -3) if opset >= 11 else ())
        for axis in axes:
            cases.append(Case(f"Concat/axis_{axis}_opset{opset}", [node("Concat", ["a", "b", "c"], axis=axis)],
                              {"a": X, "b": regular(F, (2, 3, 4), 24), "c": regular(F, (2, 3, 4), 48)},
                              opset=opset))
    cases += [Case("Concat/empty_part", [node("Concat", ["a", "b"], axis=0)],
                   {"a": np.zeros((0, 3), F), "b": regular(F, (2, 3))}, opset=13),
              Case("Concat/one_input", [node("Concat", ["a"], axis=0)], {"a": regular(F, (2, 3))}, opset=13),
              Case("Concat/int64_extremes", [node("Concat", ["a", "b"], axis=0)],
                   {"a": edge_values(np.int64), "b": ints(7)}, opset=13),
              Case("Concat/bool", [node("Concat", ["a", "b"], axis=1)],
                   {"a": np.array([[True], [False]]), "b": np.array([[False, False], [True, True]])}, opset=13),
              Case("Concat/specials_const", [node("Concat", ["a", "onnx::Concat_1"], axis=0)],
                   {"a": specials(F)}, consts={"onnx::Concat_1": specials(F)}, opset=13)]
    return cases


def splits():
    cases = []
    x = regular(F, (2, 6))
    for opset in (11, 13):
        three = ("y", "z", "w")
        cases.append(Case(f"Split/equal_opset{opset}", [node("Split", ["x"], three, axis=1)], {"x": x},
                          opset=opset, outputs=three))
        for sizes in ([1, 5], [0, 6], [3, 3]):
            name = f"Split/sizes_{'_'.join(map(str, sizes))}_opset{opset}"
            if opset < 13:
                cases.append(Case(name, [node("Split", ["x"], ("y", "z"), axis=-1, split=sizes)], {"x": x},
                                  opset=opset, outputs=("y", "z")))
            else:
                cases.append(Case(name, [node("Split", ["x", "onnx::Split_1"], ("y", "z"), axis=-1)], {"x": x},
                                  consts={"onnx::Split_1": ints(*sizes)}, opset=opset, outputs=("y", "z")))
    cases.append(Case("Split/axis0_one_output", [node("Split", ["x"], ("y",), axis=0)], {"x": x}, opset=13))
    cases.append(Case("Split/int64", [node("Split", ["x"], ("y", "z", "w"))], {"x": edge_values(np.int64)},
                      opset=13, outputs=("y", "z", "w")))
    return cases


def slice_case(name, x, starts, ends, axes=None, steps=None, opset=13, dtype=np.int64):
    inputs, consts = ["x"], {}
    for i, (arg, v) in enumerate([("starts", starts), ("ends", ends), ("axes", axes), ("steps", steps)]):
        if v is None:
            inputs.append("")
            continue
        inputs.append(f"onnx::Slice_{i + 1}")
        consts[f"onnx::Slice_{i + 1}"] = np.array(v, dtype)
    while inputs[-1] == "":
        inputs.pop()
    return Case(f"Slice/{name}_opset{opset}", [node("Slice", inputs)], {"x": x}, consts=consts, opset=opset)


def slices():
    x = regular(F, (4, 5))
    big, low = I64.max, I64.min
    cases = [Case("Slice/attrs_opset9", [node("Slice", ["x"], starts=[1, 0], ends=[3, big], axes=[0, 1])],
                  {"x": x}, opset=9),
             Case("Slice/attrs_no_axes_opset9", [node("Slice", ["x"], starts=[-3], ends=[-1])],
                  {"x": x}, opset=9)]
    for opset in (10, 13):
        cases += [slice_case("basic", x, [1], [3], [0], opset=opset),
                  slice_case("to_int64_max", x, [1], [big], [1], opset=opset),
                  slice_case("from_int64_min", x, [low], [2], [0], opset=opset),
                  slice_case("reverse_all", x, [-1], [low], [1], [-1], opset=opset),
                  slice_case("reverse_step2", x, [big], [-big], [0], [-2], opset=opset),
                  slice_case("step3", x, [0], [5], [1], [3], opset=opset),
                  slice_case("negative_axes", x, [-2, 1], [big, -1], [-1, -2], opset=opset),
                  slice_case("empty", x, [3], [1], [0], opset=opset),
                  slice_case("out_of_range_start", x, [10], [20], [1], opset=opset),
                  slice_case("int32_args", x, [I32.min], [I32.max], [1], [1], opset=opset, dtype=np.int32),
                  slice_case("reverse_int32", x, [I32.max], [I32.min], [0], [-1], opset=opset, dtype=np.int32),
                  slice_case("no_axes", x, [1, 1], [3, 4], opset=opset),
                  slice_case("step_int64_max", x, [1], [big], [1], [big], opset=opset),
                  slice_case("step_int64_min", x, [-1], [low], [0], [low], opset=opset)]
    cases.append(slice_case("int64_values", edge_values(np.int64), [2], [-2], [0], [3]))
    return cases


def gathers():
    x = regular(F, (3, 4))
    cases = []
    for opset in (11, 13):
        for name, idx, axis in [("negative", ints(-1, 0, -3), 0), ("scalar_index", np.array(-1, np.int64), 1),
                                ("matrix_indices", ints(0, 3, -4, 1).reshape(2, 2), 1),
                                ("negative_axis", ints(2, -2), -1), ("int32_indices", ints(-1, 1, dtype=np.int32), 0),
                                ("empty_indices", np.zeros((0,), np.int64), 0)]:
            cases.append(Case(f"Gather/{name}_opset{opset}", [node("Gather", ["x", "onnx::Gather_1"], axis=axis)],
                              {"x": x}, consts={"onnx::Gather_1": idx}, opset=opset))
            cases.append(Case(f"Gather/{name}_as_input_opset{opset}", [node("Gather", ["x", "i"], axis=axis)],
                              {"x": x, "i": idx}, opset=opset))
    cases.append(Case("Gather/int64_data", [node("Gather", ["x", "i"], axis=0)],
                      {"x": edge_values(np.int64), "i": ints(-1, 0, 11, 12)}, opset=13))
    return cases


def gather_elements():
    """torch.gather's picks along each axis, negative and int32 indices, an
    index smaller than the data off the axis, and an empty one."""
    x = regular(F, (3, 4))
    cases = []
    for name, idx, axis in [("axis0", ints(2, 0, -1, 1, 0, -3, 2, 1).reshape(2, 4), 0),
                            ("axis1_negative", ints(-1, 0, 3, -4, 1, 2).reshape(3, 2), 1),
                            ("smaller", ints(1, 0).reshape(1, 2), -1),
                            ("int32", ints(0, 2, 1, dtype=np.int32).reshape(3, 1), 0),
                            ("empty", np.zeros((0, 4), np.int64), 0)]:
        cases.append(Case(f"GatherElements/{name}", [node("GatherElements", ["x", "i"], axis=axis)],
                          {"x": x, "i": idx}, opset=13))
    return cases


def cumsums():
    """CumSum along each axis, each way, the axis a constant of either integer type."""
    cases = []
    x = regular(F, (3, 4))
    for name, axis, exclusive, reverse in [("rows", 0, 0, 0), ("last", -1, 0, 0), ("exclusive", 1, 1, 0),
                                           ("reverse", 0, 0, 1), ("both", 1, 1, 1)]:
        for dtype in (np.int64, np.int32):
            cases.append(Case(f"CumSum/{name}_{np.dtype(dtype).name}",
                              [node("CumSum", ["x", "axis"], exclusive=exclusive, reverse=reverse)],
                              {"x": x}, consts={"axis": np.array(axis, dtype)}, opset=14))
    cases.append(Case("CumSum/int64_values", [node("CumSum", ["x", "axis"])],
                      {"x": regular(np.int64, (2, 5))}, consts={"axis": np.array(1, np.int64)},
                      opset=14))
    return cases


def topks():
    """TopK, largest and smallest, along each axis, ties in index order."""
    cases = []
    x = np.array([[3, 1, 3, -2], [0, 5, 5, 5], [-1, -1, 2, 0]], F)
    for name, axis, largest, k in [("last", -1, 1, 2), ("rows", 0, 1, 3), ("smallest", 1, 0, 3),
                                   ("all", 1, 1, 4)]:
        cases.append(Case(f"TopK/{name}", [node("TopK", ["x", "k"], ["values", "indices"], axis=axis,
                                                largest=largest)],
                          {"x": x}, consts={"k": ints(k)}, outputs=("values", "indices"), opset=11))
    return cases


def expands():
    cases = []
    for name, x_shape, shape in [("rank_up", (3,), (2, 3)), ("ones_to_4", (1, 4), (3, 1)), ("keep", (3,), (1,)),
                                 ("middle", (3, 1), (2, 1, 4)), ("smaller_shape", (2, 3), (3,)),
                                 ("scalar", (), (2, 2)), ("empty_shape", (1,), ()), ("to_empty", (1, 3), (0, 1))]:
        for opset in (8, 13):
            cases.append(Case(f"Expand/{name}_opset{opset}", [node("Expand", ["x", "onnx::Expand_1"])],
                              {"x": regular(F, x_shape)}, consts={"onnx::Expand_1": ints(*shape)}, opset=opset))
    cases.append(Case("Expand/int64", [node("Expand", ["x", "onnx::Expand_1"])],
                      {"x": edge_values(np.int64).reshape(15, 1)}, consts={"onnx::Expand_1": ints(2)}, opset=13))
    return cases


def constant_case(name, opset, **attr):
    return Case(f"Constant/{name}_opset{opset}", [helper.make_node("Constant", [], ["y"], **attr)], {},
                opset=opset)


def constants():
    cases = []
    for t in (F, np.float64, np.int32, np.int64, np.bool_):
        for opset in (9, 13):
            cases.append(constant_case(f"value_{np.dtype(t).name}", opset,
                                       value=numpy_helper.from_array(edge_values(t).reshape(-1, 1))))
    cases += [constant_case("value_scalar", 13, value=numpy_helper.from_array(np.array(-0.0, F))),
              constant_case("value_float", 13, value_float=-0.0),
              constant_case("value_floats", 13, value_floats=[np.nan, np.inf, -0.0, 3e38]),
              constant_case("value_int", 13, value_int=2**53 + 1),
              constant_case("value_ints", 13, value_ints=[I64.min, I64.max, 2**53 + 1]),
              constant_case("value_float16", 13, value=numpy_helper.from_array(np.ones(2, np.float16)))]
    return cases


def constant_of_shapes():
    cases = []
    for name, value in [("default", None), ("nan", np.array([np.nan], F)), ("minus_zero", np.array([-0.0], F)),
                        ("float64", np.array([np.inf])), ("int64_2p53_plus_1", ints(2**53 + 1)),
                        ("int64_max", ints(I64.max)), ("int64_min", ints(I64.min)),
                        ("int32_max", ints(I32.max, dtype=np.int32)), ("bool", np.array([True]))]:
        attrs = {} if value is None else {"value": numpy_helper.from_array(value)}
        for shape in [(2, 3), (), (0,)]:
            cases.append(Case(f"ConstantOfShape/{name}_{'x'.join(map(str, shape)) or 'scalar'}",
                              [node("ConstantOfShape", ["onnx::CoS_1"], **attrs)], {},
                              consts={"onnx::CoS_1": ints(*shape)}, opset=9))
    cases.append(Case("ConstantOfShape/shape_input", [node("ConstantOfShape", ["s"])], {"s": ints(2, 1)},
                      opset=13))
    return cases


def range_case(name, start, limit, delta, dtype, as_input=False):
    """ONNX defines Range by accumulation (start + delta + delta ...), dagrad
    computes start + i delta: floats may differ by an ulp of the limit per
    step. ONNX Runtime counts an int64 range's elements in double (Range(2^53
    - 1, 2^53 + 3, 1) has 5 for it, Range(INT64_MAX - 3, INT64_MAX, 1) none),
    so Python's range is the integers' oracle."""
    names = ["onnx::Range_1", "onnx::Range_2", "onnx::Range_3"]
    values = {n: np.array(v, dtype) for n, v in zip(names, (start, limit, delta))}
    floating = np.issubdtype(dtype, np.floating)
    atol = 8 * np.finfo(dtype).eps * max(abs(start), abs(limit)) if floating else 0.0
    oracle = None if floating else (lambda _: {"y": np.array(range(start, limit, delta), dtype)})
    inputs, consts = (values, {}) if as_input else ({}, values)
    return Case(f"Range/{name}", [node("Range", names)], inputs, consts=consts, opset=11, atol=atol,
                oracle=oracle)


def ranges():
    return [range_case("int64_up", 0, 5, 1, np.int64), range_case("int64_down", 5, 0, -2, np.int64),
            range_case("int64_empty", 5, 0, 1, np.int64),
            range_case("int64_near_max", I64.max - 3, I64.max, 1, np.int64),
            range_case("int64_past_2p53", 2**53 - 1, 2**53 + 3, 1, np.int64),
            range_case("int64_big_step", 0, 2**53 + 3, 2**53 + 1, np.int64),
            range_case("int32", I32.max - 2, I32.max, 1, np.int32),
            range_case("float32", 0.5, 2.0, 0.25, F), range_case("float32_down", 1.0, -1.0, -0.3, F),
            range_case("float64", -1.0, 1.0, 0.4, np.float64),
            range_case("int64_inputs", 2, 9, 3, np.int64, as_input=True)]


def all_cases():
    return (shape_ops() + reshapes() + flattens() + transposes() + squeezes() + concats() + splits()
            + slices() + gathers() + gather_elements() + cumsums() + topks() + expands() + constants() + constant_of_shapes()
            + ranges())
