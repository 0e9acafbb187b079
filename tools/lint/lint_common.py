"""What the checks in tools/lint share: finding the sources, running main.

  from lint_common import sources, run_main

  def problems(root): ...   # one message per problem found under root
  sys.exit(run_main(sys.argv, "my_check.py", problems, "problem(s)", "all clean"))
"""

import os
import sys


def sources(root, folders, suffixes):
    """Yields the repository-relative paths of the files under `folders`
    whose names end in one of `suffixes`, in a fixed order."""
    for top in folders:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(suffixes):
                    yield os.path.relpath(os.path.join(folder, f), root).replace(os.sep, "/")


def run_main(argv, script, problems, found_what, clean):
    """Runs a check over ROOT (argv[1], default: the repository): prints each
    problem and exits 1 when there is one, else prints `clean` and exits 0."""
    if len(argv) > 2:
        print(f"usage: {script} [ROOT]", file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(__file__), "..", "..")
    if not os.path.isdir(os.path.join(root, "engine")):
        print(f"{script}: {root} has no engine/ folder: not a dagrad tree", file=sys.stderr)
        return 2
    found = problems(root)
    for p in found:
        print(p)
    if found:
        print(f"{script}: {len(found)} {found_what}", file=sys.stderr)
        return 1
    print(f"{script}: {clean}")
    return 0
