#!/usr/bin/env python3
"""Shows tools/lint/layers_check.py failing on an upward include.

  layers_check_test.py path/to/layers_check.py

Builds small trees in a temporary folder and runs the check on each: a
tree whose includes all point down passes; trees where the engine includes
ops/, the ops include ops/autodiff/, or the models include tools/ fail,
naming the file, the line and the header; so do an installed header that
includes an internal one, a library file in a folder that no layer holds,
and a test in a layer's test folder (tests/engine/, tests/support/, ...)
that includes a higher layer or its test folder. Exits 0 when every case
behaves.
"""

import sys

from lint_check_cases import expect_cases

# Files every tree has, each including only what its layer may.
CLEAN = {
    "engine/graph.h": '#include "engine/shape.h"\n',
    "engine/shape.h": "",
    "engine/cuda/cuda_device.cc": '#include "engine/graph.h"\n',
    "ops/registry.h": '#include "engine/graph.h"\n',
    "ops/autodiff/autodiff.cc": '#include "ops/registry.h"\n#include "absl/types/span.h"\n',
    "models/toy/transformer.cc": '#include "ops/autodiff/autodiff.h"\n',
    "tools/cli/main.cc": '#include "models/toy/transformer.h"\n',
    "tests/fuzz/graph_fuzzer.cc": '#include "tools/cli/command.h"\n',
    "tests/support/test_util.h": '#include "engine/graph.h"\n',
    "tests/ops/graph_test.cc": '#include "ops/registry.h"\n#include "tests/support/test_util.h"\n',
    "tests/autodiff/support/op_case.h": '#include "tools/bench/op_timing.h"\n',
    "tests/models/gpt_test.cc": '#include "tests/autodiff/support/op_case.h"\n',
    "tests/cli/cli_test.cc": '#include "tools/cli/command.h"\n',
}

# (file, its text, what the report must say): each an upward include.
UPWARD = [
    ("engine/cuda/cuda_device.cc", '#include "engine/graph.h"\n#include "ops/cuda/registry.h"\n',
     'engine/cuda/cuda_device.cc:2: includes "ops/cuda/registry.h" (layer ops)'),
    ("ops/registry.h", '#include "ops/autodiff/autodiff.h"\n',
     'ops/registry.h:1: includes "ops/autodiff/autodiff.h" (layer autodiff)'),
    ("models/toy/transformer.cc", '  #  include "tools/cli/command.h"\n',
     'models/toy/transformer.cc:1: includes "tools/cli/command.h" (layer tools)'),
    # An installed header that includes one that is not installed.
    ("ops/registry.h", '#include "ops/cpu/internal/gemm.h"\n',
     'ops/registry.h:1: includes "ops/cpu/internal/gemm.h", which is not installed'),
    # A test folder that includes a higher layer, or a higher test folder.
    ("tests/engine/shape_test.cc", '#include "engine/shape.h"\n#include "ops/registry.h"\n',
     'tests/engine/shape_test.cc:2: includes "ops/registry.h" (layer ops); tests of layer engine'),
    ("tests/ops/graph_test.cc", '#include "tests/autodiff/support/op_case.h"\n',
     'tests/ops/graph_test.cc:1: includes "tests/autodiff/support/op_case.h" (layer autodiff)'),
    ("tests/support/test_util.h", '#include "models/toy/transformer.h"\n',
     'tests/support/test_util.h:1: includes "models/toy/transformer.h" (layer models)'),
    # A library folder that the layer table does not name.
    ("ops/extra/helper.cc", '#include "engine/graph.h"\n',
     "ops/extra/helper.cc: its folder is in no layer"),
]


def main(argv):
    return expect_cases(argv[1], CLEAN, UPWARD)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
