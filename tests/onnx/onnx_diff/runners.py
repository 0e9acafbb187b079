"""Writes the cases' models and inputs, and runs them in batches: every model
under ONNX Runtime in one node process (tools/onnx/ort_batch.js), under
dagrad in one process, each model in both modes (tests/onnx_eval_batch.cc,
restarted after a crash with the models left), and the few refusals under
`dagrad eval`.

    jobs = write_jobs(cases, work)
    ort = run_ort(ort_batch_js, jobs, work)           # key -> Result
    dagrad = run_dagrad(driver, jobs, work)           # (key, mode) -> Result
"""
import json
import os
import struct
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import onnx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "goldens"))
import safetensors_io  # noqa: E402

MODES = ("fed", "folded")  # fed: as `dagrad eval` does; folded: inputs known at import
TIMEOUT_S = 120  # for one batch process, which takes seconds: past it, a model hangs


@dataclass
class Job:
    key: str        # the model's file stem, unique
    case: object
    variant: str
    model: str      # what dagrad imports
    ort_model: str  # what ONNX Runtime runs (the same file unless the case sets ort_opset)
    input: str


@dataclass
class Result:
    status: str     # "ok", "error" or "crash"
    path: str = ""  # the outputs, when ok
    code: str = ""  # absl's status code name, for a dagrad error
    message: str = ""

    def outputs(self):
        return safetensors_io.load(self.path)[0]


def scratch_parent():
    """Where the thousands of small files go: memory (/dev/shm) when there is some."""
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def save_inputs(path, tensors):
    """safetensors_io.save, keeping 0-d arrays 0-d (np.ascontiguousarray,
    which it uses, makes them (1,))."""
    safetensors_io.save(path, {n: np.atleast_1d(a) for n, a in tensors.items()})
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        for name, a in tensors.items():
            header[name]["shape"] = list(np.shape(a))
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (n - len(text))  # the same length or shorter: no shape grew
        f.seek(8)
        f.write(text)


def write_jobs(cases, work):
    jobs, seen = [], set()
    for case in cases:
        if case.name in seen:
            raise ValueError(f"two cases are named {case.name}")
        seen.add(case.name)
        stem = case.file_stem("in")
        inputs = os.path.join(work, f"{stem}.safetensors")
        save_inputs(inputs, case.inputs)
        for variant in case.variants():
            key = case.file_stem(variant)
            model = os.path.join(work, f"{key}.onnx")
            onnx.save(case.model(variant), model)
            ort_model = model
            if case.ort_opset:
                ort_model = os.path.join(work, f"{key}.ort.onnx")
                onnx.save(case.model(variant, case.ort_opset), ort_model)
            jobs.append(Job(key, case, variant, model, ort_model, inputs))
    return jobs


def parse_line(line):
    """`ok NAME`, `error NAME [CODE] MESSAGE` -> (NAME, status, rest)."""
    status, _, rest = line.partition(" ")
    name, _, rest = rest.partition(" ")
    return name, status, rest


def run_ort(ort_batch_js, jobs, work):
    manifest = os.path.join(work, "ort.manifest")
    with open(manifest, "w") as f:
        for j in jobs:
            if j.case.reference:
                f.write(f"{j.key}\t{j.ort_model}\t{j.input}\t{os.path.join(work, j.key + '.ort.safetensors')}\n")
    proc = subprocess.run(["node", ort_batch_js, manifest], capture_output=True, text=True, timeout=TIMEOUT_S)
    if proc.returncode != 0:
        raise RuntimeError(f"ort_batch.js exited {proc.returncode}:\n{proc.stderr}")
    results = {}
    for line in proc.stdout.splitlines():
        name, status, rest = parse_line(line)
        results[name] = Result(status, os.path.join(work, name + ".ort.safetensors"), message=rest)
    return results


def run_driver_once(driver, entries, manifest):
    """(exit code, or "hang" past TIMEOUT_S; its lines; its stderr)."""
    with open(manifest, "w") as f:
        f.writelines("\t".join(e) + "\n" for e in entries)
    env = dict(os.environ, DAGRAD_NUM_THREADS="1")
    try:
        proc = subprocess.run(driver + [manifest], capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        text = lambda b: (b or b"").decode() if isinstance(b, bytes) else (b or "")  # noqa: E731
        return "hang", text(e.stdout).splitlines(), text(e.stderr)
    return proc.returncode, proc.stdout.splitlines(), proc.stderr


def run_dagrad(driver, jobs, work, modes=MODES):
    """Each job in each mode; a crash or a hang is recorded against the model
    that was running, and the driver restarts with the ones after it."""
    entries = [(f"{j.key}@{m}", m, j.model, j.input, os.path.join(work, f"{j.key}.{m}.safetensors"))
               for j in jobs for m in modes]
    paths = {e[0]: e[4] for e in entries}
    results = {}
    while entries:
        rc, lines, stderr = run_driver_once(driver, entries, os.path.join(work, "dagrad.manifest"))
        started = None
        for line in lines:
            name, status, rest = parse_line(line)
            if status == "start":
                started = name
                continue
            code, _, message = rest.partition(" ") if status == "error" else ("", "", "")
            results[name] = Result(status, paths[name], code, message)
            started = None
        if rc == 0:
            break
        if started is None:
            raise RuntimeError(f"onnx_eval_batch exited {rc} outside a model:\n{stderr}")
        results[started] = Result("crash", message=f"{'hung' if rc == 'hang' else f'exit {rc}'}: "
                                                   f"{stderr.strip()[-500:]}")
        names = [e[0] for e in entries]
        entries = entries[names.index(started) + 1:]
    return {tuple(k.rsplit("@", 1)): v for k, v in results.items()}


def cli_output(job, work):
    return os.path.join(work, f"{job.key}.cli.safetensors")


def run_cli(cli, job, work):
    """`dagrad eval --model` on one job: (exit code, stderr); its outputs
    are at cli_output(job, work)."""
    out = cli_output(job, work)
    proc = subprocess.run(cli + ["eval", f"--model={job.model}", f"--input={job.input}", f"--output={out}"],
                          capture_output=True, text=True, env=dict(os.environ, DAGRAD_NUM_THREADS="1"),
                          timeout=TIMEOUT_S)
    return proc.returncode, proc.stderr.strip()
