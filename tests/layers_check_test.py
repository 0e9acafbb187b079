#!/usr/bin/env python3
"""Shows tools/lint/layers_check.py failing on an upward include.

  layers_check_test.py path/to/layers_check.py

Builds small trees in a temporary folder and runs the check on each: a
tree whose includes all point down passes; trees where the engine includes
ops/, the ops include engine/autodiff/, or the models include tools/ fail,
naming the file, the line and the header. Exits 0 when every case behaves.
"""

import os
import subprocess
import sys
import tempfile

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


def run_check(check, files):
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        done = subprocess.run([sys.executable, check, root], capture_output=True, text=True)
        return done.returncode, done.stdout


def main(argv):
    check = argv[1]
    failures = []
    rc, out = run_check(check, CLEAN)
    if rc != 0:
        failures.append(f"clean tree: exit {rc}, expected 0:\n{out}")
    for path, text, expect in UPWARD:
        rc, out = run_check(check, dict(CLEAN, **{path: text}))
        if rc != 1 or expect not in out:
            failures.append(f"{path}: exit {rc}, expected 1 and '{expect}' in:\n{out}")
    for f in failures:
        print("FAIL", f)
    print(f"{len(UPWARD) + 1 - len(failures)} of {len(UPWARD) + 1} cases behave")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
