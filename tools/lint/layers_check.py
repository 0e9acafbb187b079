#!/usr/bin/env python3
"""Fails when a file includes a header of a layer above its own.

  layers_check.py [ROOT]     ROOT: the repository (default: two levels up)

dagrad is built in layers (CMakeLists.txt), each a library that links only
the layers below it. This check reads every #include "..." of the C++ and
CUDA sources under ROOT and prints each one that reaches up, as

  engine/graph.cc:7: includes "ops/registry.h" (layer ops); layer engine may include engine

It exits 1 when it found one, else 0. Headers outside the layers (absl,
the system) are not checked. ctest runs it (test `layers`), and
tests/layers_check_test.py shows it failing on a tree with an upward include.
"""

import os
import re
import sys

from lint_common import run_main, sources

# The layers, bottom first, and the folders each holds. A path belongs to
# the layer with the longest matching folder, so engine/autodiff/ is the
# autodiff layer, not the engine's.
LAYERS = [
    ("engine", ["engine/"]),  # graph IR, shapes, planner, executor, devices, formats
    ("mpi", ["engine/mpi/"]),  # the MPI communicator
    ("ops", ["ops/"]),  # op definitions, CPU and CUDA kernels, gradient rules
    ("autodiff", ["engine/autodiff/"]),  # Gradients, optimizers, training steps
    ("onnx", ["engine/onnx/"]),  # ONNX import and export
    ("models", ["models/"]),  # attention, transformer, toy tasks and trainer
    ("tools", ["tools/"]),  # the dagrad CLI, benchmarks
    ("tests", ["tests/"]),  # the test suite
]

# Which layers each layer may include: its own and those below it. Written
# out rather than derived, so that the table is the rule a reader checks.
ALLOWED = {
    "engine": {"engine"},
    "mpi": {"engine", "mpi"},
    "ops": {"engine", "ops"},
    "autodiff": {"engine", "ops", "autodiff"},
    "onnx": {"engine", "ops", "autodiff", "onnx"},
    "models": {"engine", "ops", "autodiff", "models"},
    "tools": {"engine", "mpi", "ops", "autodiff", "onnx", "models", "tools"},
    "tests": {"engine", "mpi", "ops", "autodiff", "onnx", "models", "tools", "tests"},
}

SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh")
TOP_FOLDERS = sorted({f.split("/")[0] for _, folders in LAYERS for f in folders})
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(path):
    """Returns the layer of a repository-relative path, or None."""
    best, best_len = None, -1
    for name, folders in LAYERS:
        for folder in folders:
            if path.startswith(folder) and len(folder) > best_len:
                best, best_len = name, len(folder)
    return best


def upward_includes(root):
    """Returns one message per include that reaches a higher layer."""
    problems = []
    for path in sources(root, TOP_FOLDERS, SOURCE_SUFFIXES):
        own = layer_of(path)
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for line_no, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = layer_of(m.group(1))
                if target is None or target in ALLOWED[own]:
                    continue
                may = ", ".join(n for n, _ in LAYERS if n in ALLOWED[own])
                problems.append(f'{path}:{line_no}: includes "{m.group(1)}" (layer {target}); '
                                f"layer {own} may include {may}")
    return problems


def main(argv):
    return run_main(argv, "layers_check.py", upward_includes, "upward include(s)",
                    "no upward include")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
