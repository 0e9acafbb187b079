#!/usr/bin/env python3
"""Shows tools/lint/layers_check.py failing on an upward include.

  layers_check_test.py path/to/layers_check.py

Builds small trees in a temporary folder and runs the check on each: a
tree whose includes all point down passes; trees where the engine includes
ops/, the ops include engine/autodiff/, or the models include tools/ fail,
naming the file, the line and the header. Exits 0 when every case behaves.
"""

import sys

from lint_check_cases import expect_cases

# Files every tree has, each including only what its layer may.
CLEAN = {
    "engine/graph.h": '#include "engine/shape.h"\n',
    "engine/shape.h": "",
    "engine/cuda/cuda_device.cc": '#include "engine/graph.h"\n',
    "ops/registry.h": '#include "engine/graph.h"\n',
    "engine/autodiff/autodiff.cc": '#include "ops/registry.h"\n#include "absl/types/span.h"\n',
    "models/transformer.cc": '#include "engine/autodiff/autodiff.h"\n',
    "tools/cli/main.cc": '#include "models/transformer.h"\n',
    "tests/graph_test.cc": '#include "tools/cli/command.h"\n',
}

# (file, its text, what the report must say): each an upward include.
UPWARD = [
    ("engine/cuda/cuda_device.cc", '#include "engine/graph.h"\n#include "ops/cuda/registry.h"\n',
     'engine/cuda/cuda_device.cc:2: includes "ops/cuda/registry.h" (layer ops)'),
    ("ops/registry.h", '#include "engine/autodiff/autodiff.h"\n',
     'ops/registry.h:1: includes "engine/autodiff/autodiff.h" (layer autodiff)'),
    ("models/transformer.cc", '  #  include "tools/cli/command.h"\n',
     'models/transformer.cc:1: includes "tools/cli/command.h" (layer tools)'),
]


def main(argv):
    return expect_cases(argv[1], CLEAN, UPWARD)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
