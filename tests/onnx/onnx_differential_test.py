#!/usr/bin/env python3
"""Every op of dagrad's ONNX import table against ONNX Runtime, on edge values.

  onnx_differential_test.py DAGRAD_CLI ONNX_EVAL_BATCH ORT_BATCH_JS [FILTER]

For each op of the table (ops/onnx/import_ops_*.cc, and the erf-GELU
fusion of import_gelu.cc; an op without a case fails) the cases of
tests/onnx/onnx_diff/cases_*.py build single-op models at the opsets where the
op's semantics changed, on inputs that hold NaN, +-inf, -0.0 and the integer
extremes (INT64_MIN/MAX, 2^53 + 1, INT32's bounds), on operands of different
ranks (0-d, one-element tensors of higher rank, empty ones), with their
stored tensors (exponents, shapes, ratios, bounds) once as initializers, as
onnx-simplifier writes them, and once as Constant nodes. ONNX Runtime runs
every model (tools/onnx/ort_batch.js, one process); dagrad runs each twice
in one process (tests/onnx_eval_batch.cc): with the inputs fed at run time,
by `dagrad eval --model`'s own function, and with them known at import, so
that the importer folds the op. Both must equal ONNX Runtime's outputs
(tests/onnx/onnx_diff/compare.py), or the case's own oracle where ONNX Runtime
is wrong or dagrad differs on purpose (each case says why). On the first
model of each op, `dagrad eval --model` itself must give the same bytes.

A refusal is a failure unless tests/onnx/onnx_diff/refusals.py lists it; each
listed refusal must still happen, and under `dagrad eval` it must be exit
code 2 with a one-line message. Models ONNX Runtime refuses
(tests/onnx/onnx_diff/cases_invalid.py) dagrad must refuse so too. A dagrad crash
is a failure. Each failure prints the model, its inputs and the elements
that differ. FILTER (a regular expression) keeps the cases whose names it
matches. Exits 77 (skipped) with the reason when node or onnxruntime-node is
missing.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx_diff"))
import need_onnx  # noqa: E402,F401  (first: it may run this again under /usr/bin/python3)
import refusals  # noqa: E402
import runners  # noqa: E402
from compare import compare  # noqa: E402
from suite import all_cases  # noqa: E402


OPS_ONNX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "ops", "onnx")


def untested_ops(cases):
    """The op types of the import table (ops/onnx/import_ops_*.cc) that no
    case runs: each must have one."""
    table = set()
    for path in glob.glob(os.path.join(OPS_ONNX, "import_ops_*.cc")):
        with open(path) as f:
            table |= set(re.findall(r'\{"([A-Z][A-Za-z]+)",', f.read()))
    if not table:
        return ["no op table found under ops/onnx"]
    return sorted(table - {c.op for c in cases})


def ort_missing(ort_batch_js):
    if shutil.which("node") is None:
        return "node is not installed (bash tools/setup.sh --onnx)"
    probe = subprocess.run(["node", "-e", "require('onnxruntime-node')"],
                           cwd=os.path.dirname(ort_batch_js), capture_output=True)
    return "" if probe.returncode == 0 else "onnxruntime-node is not installed (bash tools/setup.sh --onnx)"


def judge_invalid(ort, got):
    problems = []
    if ort is not None and ort.status == "ok":
        problems.append("  ONNX Runtime runs this case, which should be invalid: fix the case")
    if got.status == "ok":
        problems.append(f"  dagrad ran a model ONNX Runtime refuses ({ort.message if ort else ''})")
    return problems


def judge(job, mode, ort, got):
    """The problems of one (model, mode) run: [] when it is as expected."""
    case = job.case
    expected = refusals.expected(case.name, job.variant, mode)
    if got.status == "crash":
        return [f"  dagrad crashed: {got.message}"]
    if not case.reference:
        return []  # a result or a clean error, whichever
    if case.invalid:
        return judge_invalid(ort, got)
    if got.status == "error":
        if expected and re.search(expected.message, got.message):
            return []
        why = "an unlisted refusal" if not expected else f"not the listed refusal /{expected.message}/"
        return [f"  dagrad refused ({why}): {got.code} {got.message}"]
    if expected:
        return [f"  listed as refused ({expected.why}), but dagrad ran it: remove it from refusals.py"]
    if case.oracle:
        return compare(case, case.oracle(case.inputs), got.outputs(), "the case's oracle")
    if ort is None or ort.status != "ok":
        return [f"  ONNX Runtime refused the case: {ort.message if ort else 'no result'}"]
    return compare(case, ort.outputs(), got.outputs())


def check_cli(cli, job, work):
    """A refusal under `dagrad eval`: exit 2 and a one-line message."""
    rc, err = runners.run_cli(cli, job, work)
    if rc == 2 and err.startswith("dagrad eval: ") and len(err.splitlines()) == 1:
        return []
    return [f"  dagrad eval --model exited {rc} (want 2, a usage error) with: {err[-300:]!r}"]


def cli_agrees(cli, jobs, dagrad, work):
    """`dagrad eval --model` gives the driver's fed outputs, bit for bit, on
    the first model of each op that runs (the driver is the CLI's path)."""
    problems, seen = [], set()
    for job in jobs:
        got = dagrad[(job.key, "fed")]
        if job.case.op in seen or got.status != "ok":
            continue
        seen.add(job.case.op)
        rc, err = runners.run_cli(cli, job, work)
        if rc != 0:
            problems.append(f"FAIL {job.case.name} [{job.variant}]: dagrad eval exited {rc}: {err}")
            continue
        want, cli_out = got.outputs(), runners.Result("ok", runners.cli_output(job, work)).outputs()
        if sorted(want) != sorted(cli_out) or any(want[n].tobytes() != cli_out[n].tobytes() for n in want):
            problems.append(f"FAIL {job.case.name} [{job.variant}]: dagrad eval's outputs differ from onnx_eval_batch's")
    print(f"dagrad eval --model agrees with onnx_eval_batch on {len(seen) - len(problems)} of {len(seen)} ops")
    return problems


def report(jobs, ort, dagrad, cli, work):
    failures = defaultdict(list)  # op -> [text]
    runs = defaultdict(int)
    for job in jobs:
        for mode in runners.MODES:
            runs[job.case.op] += 1
            got = dagrad[(job.key, mode)]
            problems = judge(job, mode, ort.get(job.key), got)
            if not problems and got.status == "error" and mode == "fed":
                problems = check_cli(cli, job, work)
            if problems:
                failures[job.case.op].append("\n".join(
                    [f"FAIL {job.case.name} [{job.variant}, {mode}]", job.case.describe(job.variant)] + problems))
    for op in sorted(runs):
        print(f"{op}: {runs[op]} runs, {len(failures[op])} failed")
    for op in sorted(failures):
        for text in failures[op]:
            print(text)
    return sum(len(v) for v in failures.values())


def main(argv):
    cli, driver, ort_batch_js = argv[1].split(), argv[2].split(), argv[3]
    pattern = re.compile(argv[4] if len(argv) > 4 else "")
    missing = ort_missing(ort_batch_js)
    if missing:
        print(f"skipped: {missing}")
        return 77
    cases = [c for c in all_cases() if pattern.search(c.name)]
    unknown, untested = [], []
    if len(argv) <= 4:
        unknown, untested = refusals.unmatched([c.name for c in cases]), untested_ops(cases)
    with tempfile.TemporaryDirectory(dir=runners.scratch_parent()) as work:
        t0 = time.time()
        jobs = runners.write_jobs(cases, work)
        t1 = time.time()
        ort = runners.run_ort(ort_batch_js, jobs, work)
        t2 = time.time()
        dagrad = runners.run_dagrad(driver, jobs, work)
        t3 = time.time()
        failed = report(jobs, ort, dagrad, cli, work)
        mismatched = cli_agrees(cli, jobs, dagrad, work)
    for problem in mismatched:
        print(problem)
    failed += len(mismatched)
    print(f"{len(cases)} cases, {len(jobs)} models, {2 * len(jobs)} dagrad runs: writing {t1 - t0:.1f} s, "
          f"ONNX Runtime {t2 - t1:.1f} s, dagrad {t3 - t2:.1f} s")
    for entry in unknown:
        print(f"FAIL refusals.py lists {entry!r}, which matches no case")
    for op in untested:
        print(f"FAIL the import table's {op} has no case in tests/onnx/onnx_diff/")
    bad = failed + len(unknown) + len(untested)
    print(f"{bad} failures" if bad else "all runs agree with ONNX Runtime")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
