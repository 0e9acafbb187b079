#!/usr/bin/env python3
"""`mpirun -np 2 dagrad train` against `dagrad train`, and its failures.

  train_test.py MPIRUN DAGRAD WORKDIR

1. Equality: a dozen Adam steps with dropout, clipping and variable lengths
   (ignored targets differ per rank) on 2 ranks give the parameters of one
   process within float summation order (and the check can fail: dropping
   dropout moves them 100x further), all but the key third of the attention
   bias, whose gradient is rounding noise (without_key_bias). The same for --task=text: a dozen
   AdamW steps of a byte-level GPT with dropout and clipping.
2. --resume on 2 ranks continues bit-identically (both tasks).
3. A global batch the ranks do not divide (both tasks), ranks given
   different configs, and --data holding other bytes on another rank are
   clear errors.
   So are a fine-tuning run's --data holding other bytes on another rank
   and --replicas given to one rank.
4. SIGTERM to mpirun stops every rank after the same step; rank 0 saves
   it, and --resume continues from it. A stop while rank 0 writes the
   outputs ends the job.
5. SIGKILL of one rank mid-training ends the job, non-zero, within 60 s,
   and its checkpoint loads and resumes.
"""

import array
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

MPIRUN, DAGRAD, WORK = sys.argv[1:4]
FLAGS = ["--dim=32", "--ffn=64", "--heads=2", "--layers=1", "--seq_len=8", "--min_len=3",
         "--batch=8", "--steps=12", "--eval_every=6", "--clip=0.5", "--dropout=0.2",
         "--threads=1"]
TEXT_FLAGS = ["--task=text", "--dim=32", "--heads=2", "--layers=1", "--seq_len=16", "--batch=4",
              "--steps=12", "--eval_every=6", "--optimizer=adamw", "--weight_decay=0.1",
              "--warmup=0", "--clip=0.5", "--dropout=0.2", "--threads=1"]
FAILURES = []
HF_GPT2_TINY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "hf_gpt2_tiny")


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def mpirun(n, args, **kw):
    return [MPIRUN, "-np", str(n), "--oversubscribe", DAGRAD, "train"] + args


def run(cmd, timeout=120, env=None):
    # errors="replace": a GPT's sample may be any bytes.
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout,
                          env=env)


def tensors(path):
    """The float tensors of a safetensors file, by name."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        values = array.array("f" if t["dtype"] == "F32" else "d")
        values.frombytes(data[8 + n + begin:8 + n + end])
        out[name] = values
    return out


def metadata(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))["__metadata__"]


def without_key_bias(name, values):
    """`values` without the key third of an attention's packed q, k, v bias.
    Softmax ignores a constant added to a row, so that third's gradient is 0
    in exact arithmetic: what each run gets is rounding noise, which Adam
    scales up to steps of about the learning rate, different for 1 process
    and for 2 ranks (another summation order), on one CPU more than another.
    """
    if not name.endswith(("in_proj_bias", "attn.c_attn.bias")):
        return values
    third = len(values) // 3
    return values[:third] + values[2 * third:]


def max_diff(a, b):
    ta, tb = tensors(a), tensors(b)
    assert ta.keys() == tb.keys(), (ta.keys(), tb.keys())
    return max(max(abs(x - y) for x, y in zip(without_key_bias(k, ta[k]), without_key_bias(k, tb[k])))
               for k in ta)


def out(name):
    path = os.path.join(WORK, name)
    shutil.rmtree(path, ignore_errors=True)
    return path


def text_flags():
    """TEXT_FLAGS with --data: a few KB of text (the training split needs
    10 windows)."""
    corpus = os.path.join(WORK, "corpus.txt")
    with open(corpus, "w") as f:
        for i in range(120):
            f.write(f"{i}: the quick brown fox jumps over the lazy dog, {i * i % 97} times.\n")
    return TEXT_FLAGS + ["--data=" + corpus]


def equality(task, flags):
    """1 process against 2 ranks for `flags`; the 2 ranks' --out, or None."""
    one, two, plain = out(task + "_one"), out(task + "_two"), out(task + "_no_dropout")
    r1 = run([DAGRAD, "train"] + flags + ["--out=" + one])
    r2 = run(mpirun(2, flags + ["--out=" + two, "--bucket_mb=0.004"]))
    r3 = run([DAGRAD, "train"] + flags + ["--out=" + plain, "--dropout=0"])
    for r in (r1, r2, r3):
        check(r.returncode == 0, f"{task}: train exits 0: " + r.stderr[-500:])
    if any(r.returncode != 0 for r in (r1, r2, r3)):
        return None
    diff = max_diff(one + "/model.safetensors", two + "/model.safetensors")
    moved = max_diff(one + "/model.safetensors", plain + "/model.safetensors")
    print(f"{task}: 2 ranks vs 1: max |diff| {diff:.3g}; without dropout: {moved:.3g}")
    check(diff < 1e-5, f"{task}: 2 ranks train the model of 1 process")
    check(moved > 100 * diff, f"{task}: the check tells dropout masks apart")
    with open(one + "/metrics.csv") as a, open(two + "/metrics.csv") as b:
        rows_a = [line.split(",")[:4] for line in a.read().splitlines()[1:]]
        rows_b = [line.split(",")[:4] for line in b.read().splitlines()[1:]]
    headings = [line for line in r2.stdout.splitlines()
                if line.startswith(("training on", "task text", "sample:"))]
    check(len(headings) == (3 if task == "text" else 1), f"{task}: rank 0 alone prints")
    check(len(rows_a) == len(rows_b) == 2, f"{task}: rank 0 alone wrote metrics.csv's rows")
    same = all(abs(float(x) - float(y)) < 1e-3 for ra, rb in zip(rows_a, rows_b)
               for x, y in zip(ra, rb))
    check(same, f"{task}: the metrics (loss, accuracies) are the job's, not a rank's")
    return two


def resume(task, flags, full):
    split = out(task + "_split")
    r1 = run(mpirun(2, flags + ["--out=" + split, "--bucket_mb=0.004", "--stop_after=6"]))
    r2 = run(mpirun(2, flags + ["--out=" + split, "--bucket_mb=0.004", "--resume"]))
    check(r1.returncode == 0 and r2.returncode == 0,
          f"{task}: stop and --resume exit 0: " + r2.stderr[-500:])
    with open(full + "/model.safetensors", "rb") as a, open(split + "/model.safetensors", "rb") as b:
        check(a.read() == b.read(),
              f"{task}: --resume on 2 ranks ends bit-identical to the run never stopped")


def errors(text):
    for task, flags, odd in (("toy", FLAGS, "--batch=7"), ("text", text, "--batch=5")):
        r = run(mpirun(2, flags + ["--out=" + out(task + "_odd"), odd]))
        check(r.returncode == 2 and "does not split evenly over 2 ranks" in r.stderr,
              f"{task}: an odd global batch is a clear error: " + r.stderr[-300:])
    # The same --data path holding other bytes on rank 1 (run in another
    # directory, as on another machine) is refused.
    dirs = [out("text_data_0"), out("text_data_1")]
    corpus = [f[len("--data="):] for f in text if f.startswith("--data=")][0]
    with open(corpus) as f:
        lines = f.read().splitlines(True)
    for d, changed in zip(dirs, (lines, lines[:-1] + ["the end\n"])):
        os.makedirs(d)
        with open(d + "/corpus.txt", "w") as f:
            f.write("".join(changed))
    flags = [f for f in text if not f.startswith("--data=")] + [
        "--data=corpus.txt", "--out=" + out("text_other_data")]
    r = run([MPIRUN, "-np", "1", "--oversubscribe", "--wdir", dirs[0], DAGRAD, "train"] + flags
            + [":", "-np", "1", "--wdir", dirs[1], DAGRAD, "train"] + flags)
    check(r.returncode != 0 and "corpus.txt holds other bytes on rank 1 than on rank 0" in r.stderr,
          "text: ranks reading different --data bytes are refused: " + r.stderr[-300:])
    # Likewise when fine-tuning a GPT-2 (it trained on each rank's own text).
    tune = ["--task=text", "--init=" + HF_GPT2_TINY, "--data=corpus.txt", "--seq_len=8",
            "--batch=4", "--steps=2", "--threads=1", "--out=" + out("tune_other_data")]
    r = run([MPIRUN, "-np", "1", "--oversubscribe", "--wdir", dirs[0], DAGRAD, "train"] + tune
            + [":", "-np", "1", "--wdir", dirs[1], DAGRAD, "train"] + tune)
    check(r.returncode != 0 and "corpus.txt holds other tokens on rank 1 than on rank 0" in r.stderr,
          "fine-tuning: ranks reading different --data are refused: " + r.stderr[-300:])
    # --replicas on one rank only ended that rank, and the other waited forever.
    alone = out("replicas_on_one_rank")
    r = run([MPIRUN, "-np", "1", "--oversubscribe", DAGRAD, "train"] + FLAGS + ["--out=" + alone]
            + [":", "-np", "1", DAGRAD, "train"] + FLAGS + ["--out=" + alone, "--replicas=2"])
    check(r.returncode != 0 and "--replicas runs in one process" in r.stderr,
          "--replicas on one rank ends the job: " + r.stderr[-300:])
    mixed = out("mixed")
    r = run([MPIRUN, "-np", "1", "--oversubscribe", DAGRAD, "train"] + FLAGS + ["--out=" + mixed]
            + [":", "-np", "1", DAGRAD, "train"] + FLAGS + ["--out=" + mixed, "--dim=16"])
    check(r.returncode != 0 and "dim: rank 0 32, rank 1 16" in r.stderr,
          "ranks given different configs are reported: " + r.stderr[-300:])


def rank_pid(mpirun_pid, rank):
    """The pid of `rank`, a child of mpirun (OMPI_COMM_WORLD_RANK)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if ppid == mpirun_pid and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return int(pid)
    return None


def start_long_run(name):
    """A 2-rank job of 100000 steps, once it has written two checkpoints."""
    path = out(name)
    long_run = [f for f in FLAGS if not f.startswith("--steps")] + [
        "--steps=100000", "--eval_every=5", "--out=" + path]
    job = subprocess.Popen(mpirun(2, long_run), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    ckpt = path + "/checkpoint.prev.safetensors"
    deadline = time.time() + 60
    while not os.path.exists(ckpt) and time.time() < deadline and job.poll() is None:
        time.sleep(0.05)
    return job, path, long_run


def stop():
    job, path, long_run = start_long_run("stopped")
    # mpirun forwards SIGUSR1 to every rank. (SIGTERM and SIGINT it answers
    # by killing the ranks after odls_base_sigkill_timeout, 1 s by default,
    # which leaves the last checkpoint as it was: the kill test covers that.)
    job.send_signal(signal.SIGUSR1)
    try:
        _, err = job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
        err = ""
    check(job.returncode == 128 + signal.SIGUSR1,
          f"SIGUSR1 stops the job with 128 + SIGUSR1 ({job.returncode})")
    step = int(metadata(path + "/checkpoint.safetensors")["dagrad.step"])
    check(f"stopped at step {step}; resume with --resume" in err,
          "rank 0 saved the step every rank stopped after: " + err[-300:])
    r = run(mpirun(2, long_run + ["--resume", f"--stop_after={step + 2}"]))
    check(r.returncode == 0 and f"resumed from {path}/checkpoint.safetensors at step {step}"
          in r.stdout, "and --resume continues from it: " + r.stdout[-300:] + r.stderr[-300:])


def stop_while_writing():
    """A stop signal while rank 0 writes the outputs, the other ranks done:
    rank 0 waited forever for them to agree on it."""
    r = run([MPIRUN, "-np", "2", "--oversubscribe", "-x", "DAGRAD_TEST_RAISE", DAGRAD, "train"]
            + FLAGS + ["--out=" + out("stop_while_writing")],
            env=dict(os.environ, DAGRAD_TEST_RAISE="USR1@outputs"))
    check(r.returncode == 128 + signal.SIGUSR1 and "SIGUSR1: stopped at step 12" in r.stderr,
          "a stop while rank 0 writes the outputs ends the job: " + r.stderr[-300:])


def kill():
    job, killed, long_run = start_long_run("killed")
    victim = rank_pid(job.pid, 1)
    check(victim is not None, "found rank 1 of the running job")
    if victim is None:
        job.kill()
        return
    os.kill(victim, signal.SIGKILL)
    started = time.time()
    try:
        job.wait(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
    ended = time.time() - started
    print(f"the job ended {ended:.1f} s after SIGKILL of rank 1, exit {job.returncode}")
    check(job.returncode not in (0, None), "a killed rank ends the job with an error")
    check(ended < 60, "within 60 s")
    step = int(metadata(killed + "/checkpoint.safetensors")["dagrad.step"])
    r = run(mpirun(2, long_run + ["--resume", f"--stop_after={step + 2}"]))
    resumed = "resumed from" in r.stdout and f"stopped after step {step + 2}" in r.stdout
    check(r.returncode == 0 and resumed, "its checkpoint loads and resumes: " + r.stderr[-500:])


os.makedirs(WORK, exist_ok=True)
text = text_flags()
for task, flags in (("toy", FLAGS), ("text", text)):
    full = equality(task, flags)
    if full:
        resume(task, flags, full)
errors(text)
stop()
stop_while_writing()
kill()
sys.exit(1 if FAILURES else 0)
