"""One single-op ONNX model with its inputs: what the differential test runs.

A Case names its op and opset, its nodes (onnx.helper.make_node), the graph
inputs it feeds (name -> numpy array) and its `consts`: tensors an exporter
stores beside the graph (a Pow exponent, a Reshape shape, a Dropout ratio).
Each const-bearing case is written twice, as onnx-simplifier and PyTorch
write such tensors: once as graph initializers ("init") and once as Constant
nodes ("const").

    case = Case("Pow/opset13", [node("Pow", ["x", "e"])], {"x": x},
                consts={"onnx::Pow_1": np.array(2.0, np.float32)}, opset=13)
    for variant, model in case.models(): ...
"""
import re
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

NP_TO_ONNX = {np.dtype(np.float32): onnx.TensorProto.FLOAT,
              np.dtype(np.float64): onnx.TensorProto.DOUBLE,
              np.dtype(np.float16): onnx.TensorProto.FLOAT16,
              np.dtype(np.int64): onnx.TensorProto.INT64,
              np.dtype(np.int32): onnx.TensorProto.INT32,
              np.dtype(np.int16): onnx.TensorProto.INT16,
              np.dtype(np.int8): onnx.TensorProto.INT8,
              np.dtype(np.uint8): onnx.TensorProto.UINT8,
              np.dtype(np.bool_): onnx.TensorProto.BOOL,
              # safetensors_io's BFLOAT16: numpy has no bfloat16, only its bits
              np.dtype([("bfloat16", "<u2")]): onnx.TensorProto.BFLOAT16}


def short(dtype):
    """A dtype's short name for case names: "float32", "int64", "bool"."""
    return np.dtype(dtype).name


def node(op, inputs, outputs=("y",), **attrs):
    """A default-domain node; `attrs` as onnx.helper.make_node takes them."""
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


@dataclass
class Case:
    name: str                       # "Op/what", unique; Op is the ONNX op tested
    nodes: list
    inputs: dict                    # graph inputs: name -> array
    consts: dict = field(default_factory=dict)  # initializers or Constant nodes
    opset: int = 17
    outputs: tuple = ("y",)
    ort_opset: int = 0              # ONNX Runtime's opset, when ONNX has the op later
    ulps: float = 2                 # relative float tolerance, in units of the dtype's epsilon
    atol: float = 0.0               # absolute float tolerance (results that cancel)
    signed_zero: bool = True        # -0.0 and 0.0 must agree with ONNX Runtime's
    reference: bool = True          # False: ONNX Runtime has no answer (it traps); dagrad must not crash
    invalid: bool = False           # ONNX Runtime refuses it; dagrad must too, cleanly
    oracle: object = None           # inputs -> {output: array}, used instead of ONNX Runtime where
                                    # that is wrong or dagrad deliberately differs (the case says why)

    @property
    def op(self):
        return self.name.split("/")[0]

    def variants(self):
        return ["init", "const"] if self.consts else ["plain"]

    def file_stem(self, variant):
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{self.name}.{variant}")

    def model(self, variant, opset=0):
        """The ModelProto of `variant` at the case's opset (or `opset`)."""
        nodes = list(self.nodes)
        initializers = []
        for name, value in self.consts.items():
            tensor = numpy_helper.from_array(np.asarray(value), name)
            if variant == "init":
                initializers.append(tensor)
            else:
                nodes.insert(0, helper.make_node("Constant", [], [name], value=tensor))
        inputs = [helper.make_tensor_value_info(n, NP_TO_ONNX[a.dtype], a.shape)
                  for n, a in self.inputs.items()]
        outputs = [onnx.ValueInfoProto(name=n) for n in self.outputs]
        graph = helper.make_graph(nodes, self.name, inputs, outputs, initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset or self.opset)],
                                  producer_name="onnx_differential_test")
        model.ir_version = 8
        return model

    def describe(self, variant):
        """One line per node, the inputs' dtypes and shapes, and the consts' values."""
        lines = [f"opset {self.opset}, {variant}"]
        for n in self.nodes:
            attrs = ", ".join(f"{a.name}={helper.get_attribute_value(a)!r}" for a in n.attribute)
            lines.append(f"  {n.op_type}({', '.join(n.input)}) -> {', '.join(n.output)}"
                         + (f" [{attrs}]" if attrs else ""))
        for n, a in self.inputs.items():
            lines.append(f"  input {n}: {a.dtype} {list(a.shape)} = {a.ravel()[:16].tolist()}")
        for n, a in self.consts.items():
            a = np.asarray(a)
            lines.append(f"  const {n}: {a.dtype} {list(a.shape)} = {a.ravel()[:8].tolist()}")
        return "\n".join(lines)
