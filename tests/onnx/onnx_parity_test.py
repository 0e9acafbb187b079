#!/usr/bin/env python3
"""`dagrad export`'s models under ONNX Runtime give `dagrad eval`'s logits.

  onnx_parity_test.py DAGRAD_CLI ORT_RUN_JS DATA_DIR

For the toy transformer (DATA_DIR/toy_eval/model.safetensors, with lengths)
and the GPT (DATA_DIR/goldens/gpt/model.safetensors), exports the model once,
checks it with onnx.checker and its interface (inputs tokens [and lengths]
with symbolic batch and sequence, output logits, PyTorch's parameter names
as initializers, no Dropout), then runs it under ONNX Runtime at two batch
sizes and sequence lengths and compares the logits with `dagrad eval`'s on
the same tokens: the largest difference must be <= 1e-5. Exits 77 (skipped)
with the reason when node or onnxruntime-node is missing.
"""

import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
except ImportError as missing:
    # numpy and onnx are Debian's (python3-numpy, python3-onnx): run under
    # /usr/bin/python3 when another python3 comes first on the PATH.
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print(f"skipped: {missing} (bash tools/setup.sh installs python3-onnx)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "goldens"))
import safetensors_io  # noqa: E402

TOLERANCE = 1e-5


def run(*cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {result.returncode}:\n{result.stderr}")
    return result


def check_interface(path, with_lengths, parameter_names):
    model = onnx.load(path)
    onnx.checker.check_model(model)
    failures = []
    inputs = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
              for i in model.graph.input}
    want = {"tokens": ["batch", "sequence"]}
    if with_lengths:
        want["lengths"] = ["batch"]
    if inputs != want:
        failures.append(f"inputs {inputs}, want {want}")
    outputs = [(o.name, [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim])
               for o in model.graph.output]
    if len(outputs) != 1 or outputs[0][0] != "logits" or outputs[0][1][:2] != ["batch", "sequence"]:
        failures.append(f"outputs {outputs}, want logits (batch, sequence, vocab)")
    initializers = {i.name for i in model.graph.initializer}
    missing = sorted(set(parameter_names) - initializers)
    if missing:
        failures.append(f"parameters not initializers under their names: {missing}")
    if model.opset_import[0].version != 17:
        failures.append(f"opset {model.opset_import[0].version}, want 17")
    ops = {n.op_type for n in model.graph.node}
    if "Dropout" in ops:
        failures.append("a Dropout node at inference")
    return failures


def parity(cli, ort_run, checkpoint, model, metadata, with_lengths, work):
    """Two batch sizes and sequence lengths (the longest the model takes) on one file."""
    failures = []
    rng = np.random.default_rng(0)
    vocab = int(metadata["vocab"])
    longest = int(metadata.get("max_len", metadata.get("block_size")))
    for batch, seq in [(2, 3), (5, longest)]:
        tensors = {"tokens": rng.integers(0, vocab, (batch, seq)).astype(np.int64)}
        if with_lengths:
            tensors["lengths"] = rng.integers(1, seq + 1, (batch,)).astype(np.int64)
        tag = f"{os.path.splitext(os.path.basename(model))[0]} {batch}x{seq}"
        stem = os.path.join(work, tag.replace(" ", "_"))
        inputs, dagrad_out, ort_out = (f"{stem}.{kind}.safetensors" for kind in ("in", "dagrad", "ort"))
        safetensors_io.save(inputs, tensors)
        run(*cli, "eval", f"--checkpoint={checkpoint}", f"--input={inputs}",
            f"--output={dagrad_out}")
        run("node", ort_run, f"--model={model}", f"--input={inputs}", f"--output={ort_out}")
        want = safetensors_io.load(dagrad_out)[0]["logits"]
        got = safetensors_io.load(ort_out)[0]["logits"]
        diff = float(np.abs(want - got).max()) if want.shape == got.shape else float("inf")
        print(f"{tag}: logits {got.shape}, max |ORT - dagrad eval| = {diff:.3g}")
        if not diff <= TOLERANCE:
            failures.append(f"{tag}: max difference {diff} > {TOLERANCE} (shapes {want.shape}, "
                            f"{got.shape})")
    return failures


def main(argv):
    cli, ort_run, data = argv[1].split(), argv[2], argv[3]
    if shutil.which("node") is None:
        print("skipped: node is not installed (bash tools/setup.sh --onnx)")
        return 77
    probe = subprocess.run(["node", "-e", "require('onnxruntime-node')"],
                           cwd=os.path.dirname(ort_run), capture_output=True)
    if probe.returncode != 0:
        print("skipped: onnxruntime-node is not installed (bash tools/setup.sh --onnx)")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as work:
        for name, checkpoint, with_lengths in [
                ("toy", os.path.join(data, "toy_eval", "model.safetensors"), True),
                ("gpt", os.path.join(data, "goldens", "gpt", "model.safetensors"), False)]:
            model = os.path.join(work, f"{name}.onnx")
            run(*cli, "export", f"--checkpoint={checkpoint}", f"--out={model}")
            params, metadata = safetensors_io.load(checkpoint)
            failures += [f"{name}: {f}" for f in check_interface(model, with_lengths, params)]
            failures += parity(cli, ort_run, checkpoint, model, metadata, with_lengths, work)
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
