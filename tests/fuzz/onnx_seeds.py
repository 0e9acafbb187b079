#!/usr/bin/env python3
"""Writes the seeds of tests/fuzz/corpus/onnx that this script names.

  /usr/bin/python3 tests/fuzz/onnx_seeds.py tests/fuzz/corpus/onnx

Two kinds (tests/fuzz/onnx_fuzzer.cc reads both):
  external-*  a model whose initializer w lies in external data, framed as
              "DGXD" <model size, 4 bytes little-endian> <model> <data.bin>
              so that the fuzzer imports it from a folder holding data.bin,
              a FIFO, links in and out of the folder and a subfolder: valid
              data, offsets and lengths at and beyond the file's end, and
              each hostile location;
  init-*      a model whose node takes, from an initializer, what the
              importer must know to build it: Pow's exponent, Dropout's
              ratio, Range's bounds, Trilu's k, and ConstantOfShape's shape
              (with an int64 value).
The other seeds (test_*.onnx, regression-*) come from ONNX's node tests and
from what the fuzzer found.
"""

import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WEIGHTS = np.arange(1, 7, dtype=np.float32).reshape(2, 3) / 2  # 0.5 .. 3


def model(nodes, inputs, initializers, opset=13):
    graph = helper.make_graph(
        nodes, "seed", inputs,
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="onnx_seeds.py").SerializeToString()


def x_input(elem=TensorProto.FLOAT, dims=(2, 3)):
    return helper.make_tensor_value_info("x", elem, list(dims))


def external_model(location, offset=None, length=None):
    """x (2, 3) + w (2, 3) -> Relu -> y, with w's data at `location`."""
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3])
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = w.external_data.add()
            entry.key, entry.value = key, str(value)
    nodes = [helper.make_node("Add", ["x", "w"], ["xw"]), helper.make_node("Relu", ["xw"], ["y"])]
    return model(nodes, [x_input()], [w])


def framed(model_bytes, data):
    return b"DGXD" + struct.pack("<I", len(model_bytes)) + model_bytes + data


def external_seeds():
    w = WEIGHTS.tobytes()
    pad = b"\x00" * 8
    cases = {
        "valid": (("data.bin", 0, 24), w),
        "offset": (("data.bin", 8, 24), pad + w),
        "to-the-end": (("data.bin", 8, None), pad + w),
        "offset-at-the-end": (("data.bin", 24, None), w),
        "offset-beyond": (("data.bin", 100, 24), w),
        "length-beyond": (("data.bin", 0, 48), w),
        "offset-overflows": (("data.bin", 2**63 - 1, 24), w),
        "offset-negative": (("data.bin", -1, 24), w),
        "missing": (("missing.bin", 0, 24), w),
        "fifo": (("fifo.bin", 0, 24), w),
        "link-inside": (("link.bin", 0, 24), w),
        "link-outside": (("outside.bin", 0, 24), w),
        "link-device": (("zero.bin", 0, 24), w),
        "link-dangling": (("dangling.bin", 0, 24), w),
        "directory": (("sub", 0, 24), w),
        "dotdot": (("../data.bin", 0, 24), w),
        "absolute": (("/etc/passwd", 0, 24), w),
    }
    seeds = {f"external-{name}": framed(external_model(*ref), data)
             for name, (ref, data) in cases.items()}
    seeds["external-in-memory"] = external_model("data.bin", 0, 24)  # no frame: refused
    return seeds


def scalar(name, elem, value):
    return helper.make_tensor(name, elem, [], [value])


def init_seeds():
    """Float initializers are constants when named by a node path with '/'
    (ops/onnx/import.h); the others would be trainable parameters."""
    f, i64, f64 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.DOUBLE
    x = x_input()

    def node(op, inputs, constants, opset=13, **attrs):
        names = [name for name, _, _ in constants]
        return model([helper.make_node(op, inputs + names, ["y"], **attrs)],
                     [x] if inputs else [],
                     [scalar(name, elem, value) for name, elem, value in constants], opset)

    def bounds(elem, start, limit, delta):
        return [("/range/start", elem, start), ("/range/limit", elem, limit),
                ("/range/delta", elem, delta)]

    seeds = {
        "pow-exponent": node("Pow", ["x"], [("/pow/exponent", f, 3.0)]),
        "pow-exponent-double": node("Pow", ["x"], [("/pow/exponent", f64, 1e300)]),
        "dropout-ratio": node("Dropout", ["x"], [("/dropout/ratio", f, 0.25)]),
        "range-int64": node("Range", [], bounds(i64, -3, 10, 3)),
        "range-float": node("Range", [], bounds(f, 0.5, 2.5, 0.5)),
        "range-huge": node("Range", [], bounds(i64, -2**62, 2**62, 1)),
        "trilu-k": node("Trilu", ["x"], [("k", i64, 1)], opset=14),
        "trilu-lower-k": node("Trilu", ["x"], [("k", i64, -1)], opset=14, upper=0),
    }
    value = helper.make_tensor("value", i64, [1], [-7])
    seeds["constantofshape-int64"] = model(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"], value=value)], [],
        [numpy_helper.from_array(np.array([2, 3], dtype=np.int64), "shape")])
    return {f"init-{name}": data for name, data in seeds.items()}


def main(argv):
    out = argv[1]
    for name, data in {**external_seeds(), **init_seeds()}.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
