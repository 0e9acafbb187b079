"""Runs a tools/lint check on small trees: what its self-tests share.

  from lint_check_cases import expect_cases
  sys.exit(expect_cases(check, clean_files, [(path, text, expected_line), ...]))
"""

import os
import subprocess
import sys
import tempfile


def run_check(check, files):
    """Runs `check` on a tree of `files` ({path: text}); returns (exit, stdout)."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        done = subprocess.run([sys.executable, check, root], capture_output=True, text=True)
        return done.returncode, done.stdout


def expect_cases(check, clean, bad):
    """Expects exit 0 on the clean tree, and exit 1 with the expected line in
    the report for each (path, text, expected) that replaces one file of it.
    Returns 0 when every case behaves, else 1."""
    failures = []
    rc, out = run_check(check, clean)
    if rc != 0:
        failures.append(f"clean tree: exit {rc}, expected 0:\n{out}")
    for path, text, expect in bad:
        rc, out = run_check(check, dict(clean, **{path: text}))
        if rc != 1 or expect not in out:
            failures.append(f"{path}: exit {rc}, expected 1 and '{expect}' in:\n{out}")
    for f in failures:
        print("FAIL", f)
    print(f"{len(bad) + 1 - len(failures)} of {len(bad) + 1} cases behave")
    return 1 if failures else 0
