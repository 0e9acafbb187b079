#!/usr/bin/env python3
"""Checks that the README's excerpts of files still match those files.

  readme_excerpts.py ROOT

An excerpt is a fenced code block of ROOT/README.md whose paragraph ends
in a link to a file of the tree and a colon ("The core of
[`gpt.cc`](tools/examples/gpt.cc):"). Each of its lines, less a trailing
// comment and surrounding spaces, must occur in that file, except lines
that hold "..." (what the excerpt leaves out). Prints each line that does
not, with its README line number, and exits 1; exits 0 when all match.
"""

import os
import re
import sys

EXCERPT_OF = re.compile(r"\]\(([^)\s]+)\):\s*$")  # a paragraph ending in "[name](path):"
TRAILING_COMMENT = re.compile(r"\s*//.*$")


def excerpts(readme_lines):
    """Yields (path, [(line number, text)]) for each excerpt."""
    source, block, inside = None, [], False
    for number, line in enumerate(readme_lines, 1):
        if line.startswith("```"):
            if inside and source:
                yield source, block
            inside, block = not inside, []
            if inside:
                continue
            source = None
        elif inside:
            block.append((number, line))
        elif line.strip():
            match = EXCERPT_OF.search(line)
            source = match.group(1) if match else None


def drifted(root):
    """Lists "README.md:N: text (not in path)" for each line that drifted."""
    with open(os.path.join(root, "README.md")) as f:
        readme = f.read().splitlines()
    problems = []
    for path, block in excerpts(readme):
        try:
            with open(os.path.join(root, path)) as f:
                text = f.read()
        except OSError:
            problems.append(f"README.md: an excerpt of {path}, which does not exist")
            continue
        for number, line in block:
            code = TRAILING_COMMENT.sub("", line).strip()
            if code and "..." not in code and code not in text:
                problems.append(f"README.md:{number}: '{code}' is not in {path}")
    return problems


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = drifted(sys.argv[1])
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
