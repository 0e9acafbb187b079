"""Models ONNX Runtime refuses, mostly for an integer attribute or input at
an extreme (an axis of INT64_MIN, a shape of INT64_MAX, an index past the
end, sizes whose sum overflows): dagrad must refuse each with a clean error
(exit code 2 under `dagrad eval`), never crash, hang or answer.
"""
import numpy as np
from case import Case, node
from values import I64, regular

F = np.float32
X = regular(F, (2, 3))
LOW, HIGH = int(I64.min), int(I64.max)


def bad(name, nodes, inputs, opset=13, **kw):
    return Case(f"{name.split('/')[0]}/invalid_{name.split('/')[1]}", nodes, inputs, opset=opset,
                invalid=True, **kw)


def axis_cases():
    cases = []
    # (ONNX Runtime runs Softmax with an axis out of range.)
    for op, attrs in [("Flatten", {"axis": LOW}), ("Concat", {"axis": HIGH}),
                      ("ArgMax", {"axis": LOW}), ("ArgMin", {"axis": HIGH}),
                      ("Gather", {"axis": HIGH}), ("Split", {"axis": LOW}), ("Transpose", {"perm": [0, HIGH]}),
                      ("ReduceMax", {"axes": [HIGH]}), ("ReduceMean", {"axes": [LOW]}), ("ReduceMin", {"axes": [HIGH]}),
                      ("LayerNormalization", {"axis": LOW})]:
        inputs = {"x": X}
        names = ["x"]
        if op == "Gather":
            inputs["i"] = np.array([0], np.int64)
            names.append("i")
        if op == "LayerNormalization":
            inputs["s"] = np.ones((3,), F)
            names.append("s")
        opset = 17 if op == "LayerNormalization" else 13
        cases.append(bad(f"{op}/axis_extreme", [node(op, names, **attrs)], inputs, opset=opset))
    for op in ("Squeeze", "Unsqueeze", "ReduceSum"):
        cases.append(bad(f"{op}/axes_extreme", [node(op, ["x", "onnx::Axes_1"])], {"x": X},
                         consts={"onnx::Axes_1": np.array([LOW], np.int64)}))
    return cases


def shape_cases():
    big = lambda *v: {"onnx::Shape_1": np.array(v, np.int64)}  # noqa: E731
    return [bad("Reshape/shape_int64_max", [node("Reshape", ["x", "onnx::Shape_1"])], {"x": X}, consts=big(HIGH)),
            bad("Reshape/two_minus_ones", [node("Reshape", ["x", "onnx::Shape_1"])], {"x": X}, consts=big(-1, -1)),
            bad("Expand/shape_int64_max", [node("Expand", ["x", "onnx::Shape_1"])], {"x": X},
                consts=big(HIGH, 1)),
            bad("Expand/shape_negative", [node("Expand", ["x", "onnx::Shape_1"])], {"x": X}, consts=big(-1, 3)),
            bad("ConstantOfShape/shape_2p40_squared", [node("ConstantOfShape", ["onnx::Shape_1"])], {},
                consts=big(2**40, 2**40)),
            bad("ConstantOfShape/shape_negative", [node("ConstantOfShape", ["onnx::Shape_1"])], {},
                consts=big(2, -3)),
            bad("Split/sizes_overflow", [node("Split", ["x", "onnx::Shape_1"], ("y", "z"), axis=1)], {"x": X},
                consts=big(HIGH, 4), outputs=("y", "z")),
            bad("Split/sizes_negative", [node("Split", ["x", "onnx::Shape_1"], ("y", "z"), axis=1)], {"x": X},
                consts=big(-1, 4), outputs=("y", "z")),
            bad("Range/int64_max_elements", [node("Range", ["onnx::R_1", "onnx::R_2", "onnx::R_3"])], {},
                consts={"onnx::R_1": np.array(0, np.int64), "onnx::R_2": np.array(HIGH, np.int64),
                        "onnx::R_3": np.array(1, np.int64)}, opset=11),
            bad("Range/delta_zero", [node("Range", ["onnx::R_1", "onnx::R_2", "onnx::R_3"])], {},
                consts={"onnx::R_1": np.array(0, np.int64), "onnx::R_2": np.array(5, np.int64),
                        "onnx::R_3": np.array(0, np.int64)}, opset=11)]


def index_cases():
    cases = []
    for name, idx in [("past_end", [3]), ("int64_min", [LOW]), ("int64_max", [HIGH]), ("before_start", [-4])]:
        i = np.array(idx, np.int64)
        cases.append(bad(f"Gather/index_{name}", [node("Gather", ["x", "onnx::Gather_1"], axis=1)], {"x": X},
                         consts={"onnx::Gather_1": i}))
        # Computed at run time, the index reaches the kernel, which must check it.
        cases.append(bad(f"Gather/index_{name}_as_input", [node("Gather", ["x", "i"], axis=1)], {"x": X, "i": i}))
    cases.append(bad("Slice/step_zero", [node("Slice", ["x", "onnx::S_1", "onnx::S_2", "onnx::S_3", "onnx::S_4"])],
                     {"x": X}, consts={"onnx::S_1": np.array([0], np.int64), "onnx::S_2": np.array([2], np.int64),
                                       "onnx::S_3": np.array([0], np.int64), "onnx::S_4": np.array([0], np.int64)}))
    return cases


def type_cases():
    # Equal of bools compares them as integers (import_ops_math.cc): a bool
    # beside an int32 must still be refused.
    return [bad("Cast/to_type_999", [node("Cast", ["x"], to=999)], {"x": X}),
            bad("Equal/bool_and_int32", [node("Equal", ["a", "b"])],
                {"a": np.array([True, False]), "b": np.array([1, 0], np.int32)})]


def all_cases():
    return axis_cases() + shape_cases() + index_cases() + type_cases()
