"""Imported first by the ONNX tests: numpy and onnx are Debian's
(python3-numpy, python3-onnx), so when another python3 comes first on the
PATH the test runs again under /usr/bin/python3; without them it exits 77,
which ctest reads as skipped, saying why.

    import need_onnx  # noqa: F401
"""
import os
import sys

SYSTEM_PYTHON = "/usr/bin/python3"

try:
    import numpy  # noqa: F401
    import onnx  # noqa: F401
except ImportError as missing:
    if sys.executable != SYSTEM_PYTHON and os.path.exists(SYSTEM_PYTHON):
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON] + sys.argv)
    print(f"skipped: {missing} (bash tools/setup.sh installs python3-onnx)")
    sys.exit(77)
