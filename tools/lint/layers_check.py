#!/usr/bin/env python3
"""Fails when a file includes a header of a layer above its own, or an
installed header includes one that is not installed.

  layers_check.py [ROOT]     ROOT: the repository (default: two levels up)

dagrad is built in layers (CMakeLists.txt), each a library that links only
the layers below it. This check reads every #include "..." of the C++ and
CUDA sources under ROOT and prints each one that reaches up, as

  engine/graph.cc:7: includes "ops/registry.h" (layer ops); layer engine may include engine

A test file under a layer's test folder (tests/engine/, tests/ops/, ...)
is held to its layer the same way, as

  tests/engine/x_test.cc:3: includes "ops/registry.h" (layer ops); tests of layer engine may include engine

It exits 1 when it found one, else 0. Headers outside the layers (absl,
the system) are not checked. ctest runs it (test `layers`), and
tests/lint/layers_check_test.py shows it failing on a tree with an upward include.
"""

import os
import re
import sys

from lint_common import run_main, sources

# The layers, bottom first, and the folders each holds: a folder is one
# layer, or one subsystem of a layer. A library file in a folder named
# nowhere here is a problem too, so a new folder must be given its layer.
# tools/ and tests/ take in everything below them.
LAYERS = [
    ("engine", ["engine/",  # graph IR, tensors, the executor
                "engine/plan/", "engine/plan/internal/",  # planner, memory budget
                "engine/io/",  # files: checkpoints, safetensors
                "engine/dot/",  # Graphviz export
                "engine/view/", "engine/view/internal/",  # the graph viewer, traces
                "engine/device/",  # devices, host memory, communicators
                "engine/cuda/"]),  # the CUDA device
    ("mpi", ["engine/mpi/"]),  # the MPI communicator
    ("ops", ["ops/", "ops/internal/",  # op definitions, one family a file pair
             "ops/math/",  # scalar math CPU and CUDA kernels share
             "ops/cpu/", "ops/cpu/internal/",  # the CPU runtime
             "ops/cpu/kernels/",  # per-ISA kernels
             "ops/cuda/"]),  # CUDA kernels
    # Autodiff and ONNX walk the ops' rules and definitions, so they sit
    # beside the ops, above them.
    ("autodiff", ["ops/autodiff/"]),  # Gradients, optimizers, precision
    ("onnx", ["ops/onnx/"]),  # ONNX import and export
    ("models", ["models/",  # tasks, trainers, the umbrella header
                "models/nn/",  # layers (dagrad::nn)
                "models/gpt/",  # the GPT, its trainer and generator
                "models/gpt2/",  # Hugging Face's GPT-2: config, model, checkpoints
                "models/toy/",  # the toy transformer and tasks
                "models/plot/"]),  # SVG charts of a run (dagrad::plot)
    ("tools", ["tools/"]),  # the dagrad CLI, benchmarks
    ("tests", ["tests/"]),  # the test suite
]
OPEN_LAYERS = {"tools", "tests"}

# Which layers each layer may include: its own and those below it. Written
# out rather than derived, so that the table is the rule a reader checks.
ALLOWED = {
    "engine": {"engine"},
    "mpi": {"engine", "mpi"},
    "ops": {"engine", "ops"},
    "autodiff": {"engine", "ops", "autodiff"},
    "onnx": {"engine", "ops", "onnx"},
    "models": {"engine", "ops", "autodiff", "models"},
    "tools": {"engine", "mpi", "ops", "autodiff", "onnx", "models", "tools"},
    "tests": {"engine", "mpi", "ops", "autodiff", "onnx", "models", "tools", "tests"},
}

# The test folders mirror the layers (tests/CMakeLists.txt): each is built
# into one binary linked against the layers written here, and may include
# their headers and the test folders of those layers (tests/support/ is the
# engine's). Other folders under tests/ (the lint tests, fuzzers, MPI, the
# install consumer) take in everything.
TEST_FOLDERS = {
    "tests/support/": "engine",
    "tests/engine/": "engine",
    "tests/ops/": "ops",
    "tests/autodiff/": "autodiff",
    "tests/onnx/": "onnx",
    "tests/models/": "models",
    "tests/cli/": "tools",
}
TEST_ALLOWED = {
    "engine": {"engine"},
    "ops": {"engine", "ops"},
    "autodiff": {"engine", "ops", "autodiff"},
    # ONNX tests that differentiate an imported model link autodiff beside it.
    "onnx": {"engine", "ops", "autodiff", "onnx"},
    # Exporting the library's models to ONNX takes both.
    "models": {"engine", "ops", "autodiff", "onnx", "models"},
    "tools": {"engine", "mpi", "ops", "autodiff", "onnx", "models", "tools"},
}
# The op cases reach dagrad_bench's timing mode through this header-only
# hook of engine types (tools/bench/op_timing.h says why).
TEST_HOOKS = {"tools/bench/op_timing.h"}

SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh")
TOP_FOLDERS = sorted({f.split("/")[0] for _, folders in LAYERS for f in folders})
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(path):
    """Returns the layer of a repository-relative path, or None."""
    folder = path.rsplit("/", 1)[0] + "/"
    for name, folders in LAYERS:
        if folder in folders or (name in OPEN_LAYERS and path.startswith(folders[0])):
            return name
    return None


def test_layer_of(path):
    """Returns the layer of a file under a test folder (TEST_FOLDERS), or
    None."""
    for folder, layer in TEST_FOLDERS.items():
        if path.startswith(folder):
            return layer
    return None


def upward_test_include(path, line_no, header):
    """Returns the message for a test file's include of a layer, or test
    folder, above its own, or None."""
    own = test_layer_of(path)
    target = test_layer_of(header) if header.startswith("tests/") else layer_of(header)
    if own is None or target is None or target in TEST_ALLOWED[own] or header in TEST_HOOKS:
        return None
    may = ", ".join(n for n, _ in LAYERS if n in TEST_ALLOWED[own])
    return (f'{path}:{line_no}: includes "{header}" (layer {target}); tests of layer {own} '
            f"may include {may}")


def is_internal(path):
    """Whether a header is the library's own, not installed: under an
    internal/ folder, or a per-ISA kernel's or a CUDA kernel's (the CUDA
    device's public header aside)."""
    return ("/internal/" in path or path.startswith(("ops/cpu/kernels/", "ops/cuda/"))
            or (path.startswith("engine/cuda/") and path != "engine/cuda/cuda_device.h"))


def upward_includes(root):
    """Returns one message per include that reaches a higher layer."""
    problems = []
    for path in sources(root, TOP_FOLDERS, SOURCE_SUFFIXES):
        own = layer_of(path)
        if own is None:
            problems.append(f"{path}: its folder is in no layer (tools/lint/layers_check.py)")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for line_no, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                test_problem = upward_test_include(path, line_no, m.group(1))
                if test_problem:
                    problems.append(test_problem)
                    continue
                if (is_internal(m.group(1)) and path.endswith(".h") and not is_internal(path)
                        and own not in OPEN_LAYERS):
                    problems.append(f'{path}:{line_no}: includes "{m.group(1)}", which is not '
                                    "installed, from a header that is")
                    continue
                target = layer_of(m.group(1))
                if target is None or target in ALLOWED[own]:
                    continue
                may = ", ".join(n for n, _ in LAYERS if n in ALLOWED[own])
                problems.append(f'{path}:{line_no}: includes "{m.group(1)}" (layer {target}); '
                                f"layer {own} may include {may}")
    return problems


def main(argv):
    return run_main(argv, "layers_check.py", upward_includes, "layering problem(s)",
                    "no upward include, no installed header including an internal one")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
