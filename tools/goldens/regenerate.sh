#!/usr/bin/env bash
# Regenerates every golden from PyTorch and checks that the committed files
# under tests/data/ come out the same: byte-identical, or differing only in
# the last bits that PyTorch's kernels on this CPU round differently
# (tools/goldens/check_regenerated.py says how close is the same).
#
#   bash tools/setup.sh --torch && bash tools/goldens/regenerate.sh
#
# A generator is a tools/goldens/*.py file with a `def main():` that takes
# no arguments (golden_io.py, golden_cases.py and safetensors_io.py are
# libraries, check_regenerated.py the check; check_interop.py checks a model and takes paths). Exit status:
# 0 when every golden is reproduced, 1 naming the files that differ by more (or a
# generator that failed), so CI shows that the committed goldens are what the
# committed generators write.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=/usr/bin/python3
failed=0
for generator in tools/goldens/*.py; do
  grep -q '^def main():' "$generator" || continue
  echo "regenerating with $generator"
  if ! "$python" "$generator" > /dev/null; then
    echo "FAILED: $generator" >&2
    failed=1
  fi
done
# Byte-identical, or the same golden up to this CPU's rounding
# (check_regenerated.py, which restores the committed bytes of those).
"$python" tools/goldens/check_regenerated.py || failed=1
exit $failed
