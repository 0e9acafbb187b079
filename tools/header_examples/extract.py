#!/usr/bin/env python3
"""Writes a layer's header examples as tests, and fails on one it cannot place.

  extract.py ROOT LAYER OUT.cc    writes OUT.cc: one test per example of
                                  LAYER's public headers (the build does this)
  extract.py ROOT                 checks every header's examples, writes nothing

The doc comments of dagrad's public headers show examples as comment lines
indented by three spaces or more:

  //   Value y = Gather(x, idx, 1);                   // (4, 2, 3, 6)

A block of such lines is an example when one of its lines, less a trailing
// comment, ends in ';', '{' or '}', or in ')' before a comment (a call shown
with its value: "Max(a, b)  // 3"); the others are formulas and shapes.
Lists in prose ("- ...", "1. ...") are not examples either, nor the blocks
of NOT_EXAMPLES (code-like text that is not a program: a layout, a formula).

Each example becomes a test, HeaderExample.<header>_<line>, whose body is the
block, line for line, in a fresh temporary directory, inside a setup: a
struct of tests/<layer>/support/header_example_setups.h whose members (a
graph `g`, inputs `x`, `tokens`, an executor, a file on disk) are in scope. The block
runs in the layer's `Default` setup unless its first line names another:

  //   // setup: Checkpoint
  //   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, ReadCheckpoint("ckpt.safetensors"));

The test fails when the block returns an error or its setup's Finish() does
(the graph's first error), and is skipped on Unavailable (a GPU, Graphviz,
what the machine lacks). `#line` directives point the compiler at the
header, so an example that does not compile fails the build naming the
header's line. A block this script cannot place (one naming an unknown
setup, or whose braces never close) fails the extraction, and so the build,
naming the header and line.
"""

import glob
import os
import re
import sys

# The headers whose examples run (the public ones, and a few internal), by
# the layer whose test binary runs them: the lowest that the examples' own
# includes allow (engine examples build their graphs from ops and
# differentiate them, so they run with the ops').
LAYERS = {
    "autodiff": ["engine/*.h", "engine/plan/*.h", "engine/io/*.h", "engine/dot/*.h", "engine/view/*.h",
                 "engine/device/*.h", "engine/cuda/cuda_device.h", "ops/*.h",
                 "ops/autodiff/*.h", "ops/math/*.h", "ops/cpu/*.h",
                 # Internal headers whose examples a kernel's author reads.
                 "engine/plan/internal/plan_memory.h", "ops/cpu/internal/*.h"],
    "onnx": ["ops/onnx/import.h", "ops/onnx/onnx_tensor.h"],
    "models": ["models/*.h", "models/*/*.h"],
}
EXAMPLE_LINE = re.compile(r"^\s*//   (.*)$")
TRAILING_COMMENT = re.compile(r"\s*//.*$")
PROSE_LIST = re.compile(r"^(- |\d+\. )")  # a list in prose: "- ...", "1. ..."
SETUP_MARKER = re.compile(r"^// setup: (\w+)$")
SETUP_STRUCT = re.compile(r"^struct (\w+)\b", re.MULTILINE)
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


def headers(root, layer):
    """The layer's public headers, relative to root, sorted."""
    paths = {p for g in LAYERS[layer] for p in glob.glob(os.path.join(root, g))}
    return sorted(os.path.relpath(p, root) for p in paths)


def depth(lines):
    """How many more braces the lines open than close (comments aside)."""
    code = "".join(TRAILING_COMMENT.sub("", line) for line in lines)
    return code.count("{") - code.count("}")


def examples(root, header):
    """Yields (line, [lines], error) for each example of the header: a block,
    joined with the blocks after it while its braces stay open (a class
    declared across two comments); error names a block whose braces never
    close."""
    with open(os.path.join(root, header), encoding="utf-8") as f:
        text = f.read()
    pending = None
    for start, lines in blocks(text):
        if pending:
            pending[1].extend(lines)
        elif is_example(lines) and (header, lines[0]) not in NOT_EXAMPLES:
            pending = (start, list(lines))
        else:
            continue
        if depth(pending[1]) <= 0:
            yield pending[0], pending[1], None
            pending = None
    if pending:
        yield pending[0], pending[1], f"{header}:{pending[0]}: the example's braces never close"


def setups(root, layer):
    """The setups a block of the layer may name: the structs of its setup file."""
    path = os.path.join(root, "tests", layer, "support", "header_example_setups.h")
    if not os.path.exists(path):
        return set()
    with open(path, encoding="utf-8") as f:
        return set(SETUP_STRUCT.findall(f.read()))


def test_name(header, line):
    return re.sub(r"\W", "_", header[:-2]) + f"_{line}"


def test_source(header, line, lines, setup):
    body = [f"#line {line} \"{header}\""] + ["    " + code for code in lines]
    return "\n".join([
        f"struct {test_name(header, line)} : {setup} {{",
        f"  static constexpr const char* kWhere = \"{header}:{line}\";",
        "  absl::Status Run() {",
        *body,
        "    return Finish();",
        "  }",
        "};",
        f"TEST(HeaderExample, {test_name(header, line)}) {{",
        f"  RunHeaderExample<{test_name(header, line)}>();",
        "}",
        ""])


def layer_tests(root, layer):
    """Returns (the layer's generated source, [errors])."""
    known = setups(root, layer)
    parts, errors, includes = [], [], []
    for header in headers(root, layer):
        for line, lines, error in examples(root, header):
            if error:
                errors.append(error)
                continue
            marker = SETUP_MARKER.match(lines[0])
            setup = marker.group(1) if marker else "Default"
            if setup not in known:
                errors.append(f"{header}:{line}: the example's setup '{setup}' is not a struct of "
                              f"tests/{layer}/support/header_example_setups.h")
                continue
            if header not in includes:
                includes.append(header)
            parts.append(test_source(header, line, lines, setup))
    source = "\n".join([
        f"// Generated by tools/header_examples/extract.py from the examples of the",
        f"// {layer} layer's public headers: edit the headers, not this file.",
        *[f"#include \"{h}\"" for h in includes],
        f"#include \"tests/{layer}/support/header_example_setups.h\"",
        "",
        "namespace dagrad::examples {",
        "namespace {",
        "",
        *parts,
        "}  // namespace",
        "}  // namespace dagrad::examples",
        ""])
    return source, errors


def main(argv):
    if len(argv) not in (2, 4):
        print(__doc__)
        return 2
    root = argv[1]
    errors = []
    for layer in ([argv[2]] if len(argv) == 4 else LAYERS):
        source, layer_errors = layer_tests(root, layer)
        errors += layer_errors
        if len(argv) == 4 and not errors:
            with open(argv[3], "w", encoding="utf-8") as f:
                f.write(source)
    for error in errors:
        print(error)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
