"""run_main runs a benchmark or reference script's main() and turns its
ordinary failures into one line naming what failed, not a traceback: a
command that exits non-zero (with the last line it printed on stderr, where
dagrad says why), or a file that is not there (a build not made yet, a
mistyped path).

    if __name__ == "__main__":
        sys.exit(run_main(main))
"""

import os
import subprocess
import sys


def run_main(main):
    name = os.path.basename(sys.argv[0])
    try:
        return main()
    except subprocess.CalledProcessError as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr or ""
        last = err.strip().splitlines()[-1:] or [""]
        command = " ".join(map(str, e.cmd)) if isinstance(e.cmd, (list, tuple)) else str(e.cmd)
        sys.exit(f"{name}: `{command}` failed (exit {e.returncode})" + (f": {last[0]}" if last[0] else ""))
    except FileNotFoundError as e:
        sys.exit(f"{name}: {e.filename}: no such file or directory")
