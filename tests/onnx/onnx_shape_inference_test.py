#!/usr/bin/env python3
"""dagrad's output shapes and dtypes after import equal ONNX's shape inference.

  onnx_shape_inference_test.py ONNX_EVAL_BATCH FIXTURES_DIR [NODE_TESTS_DIR]

For every model of the differential suite (tests/onnx/onnx_diff/), every ONNX
fixture in FIXTURES_DIR (tests/data/onnx: torch exports, their symbolic
sizes made concrete), and, when installed, ONNX's own node tests
(NODE_TESTS_DIR, default /usr/share/libonnx-testdata/data, on their first
data set), dagrad imports and runs the model (tests/onnx_eval_batch.cc,
with its inputs fed at run time and, again, known at import), and each
output's dtype, rank and every dimension that
onnx.shape_inference.infer_shapes (data propagation on, the file's own
output shapes cleared first) infers must equal dagrad's. A model dagrad
does not run is not compared (the differential test and
Libonnx/OnnxNodeTests judge those); the counts say how many. Exits 77
(skipped) without python3-onnx.
"""
import glob
import os
import sys
import tempfile
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx_diff"))
import need_onnx  # noqa: E402,F401  (first: it may run this again under /usr/bin/python3)
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper, shape_inference  # noqa: E402

import runners  # noqa: E402
from case import NP_TO_ONNX  # noqa: E402
from suite import all_cases  # noqa: E402
from values import positive, regular  # noqa: E402

NODE_TESTS = "/usr/share/libonnx-testdata/data"
SIZES = {"batch": 2, "seq": 3}  # the fixtures' symbolic sizes; any other is 2


def concrete_inputs(model):
    """Sizes for the symbolic dims of `model`'s inputs, set in the model, and
    ordinary values of those shapes (small non-negative integers: token ids)."""
    initializers = {t.name for t in model.graph.initializer}
    tensors = {}
    for info in model.graph.input:
        if info.name in initializers:
            continue
        for d in info.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                d.dim_value = SIZES.get(d.dim_param, 2)
        shape = tuple(d.dim_value for d in info.type.tensor_type.shape.dim)
        dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[info.type.tensor_type.elem_type]
        tensors[info.name] = (positive(dtype, shape) - 1 if np.issubdtype(dtype, np.integer)
                              else regular(dtype, shape))
    return tensors


def node_test_inputs(directory, model):
    """The first data set's inputs, by the model's input names; None when one
    is not a tensor (a sequence, an optional) or has an element type dagrad
    lacks (safetensors cannot carry it here)."""
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    if any(not i.type.HasField("tensor_type") for i in inputs):
        return None
    tensors = {}
    for i, name in enumerate(i.name for i in inputs):
        proto = onnx.TensorProto()
        with open(os.path.join(directory, "test_data_set_0", f"input_{i}.pb"), "rb") as f:
            proto.ParseFromString(f.read())
        array = numpy_helper.to_array(proto)
        if array.dtype not in NP_TO_ONNX or array.dtype in (np.float16, np.int8, np.int16, np.uint8):
            return None
        tensors[name] = array
    return tensors


def fixture_jobs(work, fixtures, node_tests):
    """Jobs for the fixtures and the node tests; (jobs, skipped counts)."""
    jobs, skipped = [], Counter()
    paths = sorted(glob.glob(os.path.join(fixtures, "*.onnx")))
    if os.path.isdir(node_tests):
        paths += sorted(glob.glob(os.path.join(node_tests, "*", "*", "model.onnx")))
    for path in paths:
        model = onnx.load(path)
        is_node_test = path.endswith("model.onnx")
        tensors = (node_test_inputs(os.path.dirname(path), model) if is_node_test
                   else concrete_inputs(model))
        if tensors is None:
            skipped["node tests with an input that is no tensor or of a type dagrad lacks"] += 1
            continue
        key = "fixture_" + os.path.relpath(path, node_tests if is_node_test else fixtures).replace("/", "_")
        stem = os.path.join(work, key)
        onnx.save(model, stem + ".onnx")
        runners.save_inputs(stem + ".in.safetensors", tensors)
        jobs.append(runners.Job(key, None, "plain", stem + ".onnx", stem + ".onnx", stem + ".in.safetensors"))
    return jobs, skipped


def inferred_outputs(path):
    """{output: (elem_type, [dim or None] or None)} by ONNX's inference."""
    model = onnx.load(path)
    for out in model.graph.output:
        out.type.tensor_type.ClearField("shape")
    inferred = shape_inference.infer_shapes(model, data_prop=True)
    result = {}
    for out in inferred.graph.output:
        t = out.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim] if t.HasField("shape") else None
        result[out.name] = (t.elem_type, dims)
    return result


def compare_shapes(job, mode, result, counts):
    try:
        want = inferred_outputs(job.model)
    except Exception as e:  # onnx raises its own InferenceError and ValidationError
        return [f"FAIL {job.key}: ONNX's shape inference rejects the model: {e}"]
    got = result.outputs()
    problems = []
    for name, (elem_type, dims) in want.items():
        array = got.get(name)
        if array is None:
            problems.append(f"FAIL {job.key} [{mode}]: no output '{name}' from dagrad")
            continue
        if elem_type and NP_TO_ONNX.get(array.dtype) != elem_type:
            problems.append(f"FAIL {job.key} [{mode}] '{name}': ONNX infers {onnx.TensorProto.DataType.Name(elem_type)}, "
                            f"dagrad gives {array.dtype}")
        if dims is None:
            counts["outputs whose shape ONNX does not infer"] += 1
            continue
        counts["outputs compared"] += 1
        counts["dims ONNX leaves unknown"] += sum(d is None for d in dims)
        if len(dims) != array.ndim or any(d is not None and d != g for d, g in zip(dims, array.shape)):
            shown = ["?" if d is None else d for d in dims]
            problems.append(f"FAIL {job.key} [{mode}] '{name}': ONNX infers {shown}, dagrad gives {list(array.shape)}")
    return problems


def main(argv):
    driver, fixtures = argv[1].split(), argv[2]
    node_tests = argv[3] if len(argv) > 3 else NODE_TESTS
    failures, counts = [], Counter()
    with tempfile.TemporaryDirectory(dir=runners.scratch_parent()) as work:
        jobs = runners.write_jobs(all_cases(), work)
        extra, skipped = fixture_jobs(work, fixtures, node_tests)
        results = runners.run_dagrad(driver, jobs + extra, work)
        for job in jobs + extra:
            for mode in runners.MODES:
                result = results[(job.key, mode)]
                if result.status != "ok":
                    counts[f"runs dagrad did not complete ({result.status})"] += 1
                    continue
                counts["runs compared"] += 1
                failures += compare_shapes(job, mode, result, counts)
    print(f"{len(jobs)} suite models, {len(extra)} fixtures and ONNX node tests")
    for what, n in sorted((counts + skipped).items()):
        print(f"  {what}: {n}")
    for failure in failures:
        print(failure)
    print(f"{len(failures)} disagreements" if failures else "every inferred shape agrees")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
