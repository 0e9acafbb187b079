#!/usr/bin/env python3
"""Fails when an example in a public header is not compiled by a test.

  header_examples.py [ROOT]     ROOT: the repository (default: two levels up)

The doc comments of dagrad's public headers (engine/, ops/,
models/ and their subfolders) show examples as comment lines indented by
three spaces or more:

  //   Value y = Gather(x, idx, 1);                   // (4, 2, 3, 6)

A block of such lines is an example when one of its lines, less a trailing
// comment, ends in ';', '{' or '}', or in ')' before a comment (a call shown
with its value: "Max(a, b)  // 3"); the others are formulas and shapes.
Lists in prose ("- ...", "1. ...") are not examples either.
Every example must appear, line for line (leading and trailing blanks
aside), in one of tests/*/header_examples_*_test.cc (the folder of the
header's layer), in an op's case (tests/*/*_cases.cc: an op's example may be a line of the config that runs
it), or, for models/nn/*.h, in tests/models/nn_layers_test.cc; all of them compile
and run it. This check prints each example that none holds, as

  ops/gather.h:45: example not in tests/*/header_examples_*_test.cc:
      Value table = ...

and exits 1, else 0. ctest runs it (test `header_examples`), and
tests/lint/header_examples_lint_test.py shows it failing.
"""

import glob
import os
import re
import sys

HEADER_GLOBS = ["engine/*.h", "engine/plan/*.h", "engine/io/*.h", "engine/dot/*.h",
                "engine/device/*.h", "ops/autodiff/*.h", "engine/cuda/cuda_device.h",
                "ops/onnx/import.h", "ops/onnx/onnx_tensor.h", "ops/onnx/run.h",
                "ops/*.h", "ops/math/*.h", "ops/cpu/*.h", "models/*.h", "models/*/*.h"]
# The tests that hold the examples: the header examples tests, the op cases
# (an op added to a family writes its example in the config of its case),
# and the nn layers' own (tests/models/nn_layers_test.cc copies the models/nn/*.h
# examples).
TEST_GLOBS = ["tests/*/header_examples_*_test.cc", "tests/*/*_cases.cc",
              "tests/models/nn_layers_test.cc"]
TEST_GLOB = "tests/*/header_examples_*_test.cc"  # where a new example goes
EXAMPLE_LINE = re.compile(r"^\s*//   (.*)$")
TRAILING_COMMENT = re.compile(r"\s*//.*$")
PROSE_LIST = re.compile(r"^(- |\d+\. )")  # a list in prose: "- ...", "1. ..."
# Blocks that look like code but are not programs (a computation's
# definition, a file layout, an options literal with the shapes it gives):
# (header, first line).
NOT_EXAMPLES = {
    ("ops/dropout.h", "key     = (k0, k1) = (low, high 32 bits of RunContext::seed, the"),
    ("engine/io/safetensors.h", "8 bytes    N, the header length, little-endian unsigned"),
    ("models/nn/attention.h", "{.embed_dim = 8, .num_heads = 2, .add_bias_kv = true}"),
    ("models/nn/attention.h",
     "{.embed_dim = 8, .num_heads = 2, .add_bias_kv = true, .add_zero_attn = true}"),
    ("models/nn/attention.h", "{.embed_dim = 8, .num_heads = 2, .batch_first = false}"),
}


def blocks(text):
    """Yields (line number, [lines]) for each run of indented comment lines."""
    run, start = [], 0
    for number, line in enumerate(text.split("\n") + [""], 1):
        match = EXAMPLE_LINE.match(line)
        if match:
            if not run:
                start = number
            run.append(match.group(1))
        elif run:
            yield start, run
            run = []


def is_example(lines):
    if PROSE_LIST.match(lines[0]):
        return False
    for line in lines:
        code = TRAILING_COMMENT.sub("", line).rstrip()
        if code.endswith((";", "{", "}")) or (code.endswith(")") and code != line.rstrip()):
            return True
    return False


def contains(haystack, needle):
    """Whether the list `needle` occurs as a contiguous run in `haystack`."""
    n = len(needle)
    return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))


def missing_examples(root):
    """Returns [(header, line, lines)] for each example no test holds."""
    tests = []
    for path in sorted(p for g in TEST_GLOBS for p in glob.glob(os.path.join(root, g))):
        with open(path, encoding="utf-8") as f:
            tests.append([line.strip() for line in f.read().split("\n")])
    missing = []
    for pattern in HEADER_GLOBS:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            header = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for start, lines in blocks(text):
                if not is_example(lines) or (header, lines[0]) in NOT_EXAMPLES:
                    continue
                stripped = [line.strip() for line in lines]
                if not any(contains(test, stripped) for test in tests):
                    missing.append((header, start, lines))
    return missing


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    missing = missing_examples(root)
    for header, start, lines in missing:
        print(f"{header}:{start}: example not in {TEST_GLOB}:")
        for line in lines:
            print(f"    {line}")
    if missing:
        print(f"{len(missing)} header example(s) are compiled by no test: copy each "
              f"into a HEADER_EXAMPLE of {TEST_GLOB} (tests/support/header_examples.h), "
              f"or an op's into a config of its case (tests/*/*_cases.cc)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
