"""Writes the safetensors fixtures for tests/engine/safetensors_test.cc and
tests/ops/checkpoint_test.cc with the reference numpy writer
(tools/goldens/safetensors_io.py), so that dagrad's reader is checked
against files it did not write, and its writer against the reference's bytes.

Run with Debian's interpreter from anywhere:
    /usr/bin/python3 tools/goldens/safetensors_fixtures.py
It writes tests/data/safetensors/*.safetensors. The tests restate every
value below by hand; keep the two in step.
"""
import os

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
from safetensors_io import load, save  # noqa: E402

OUT = os.path.join(ROOT, "tests", "data", "safetensors")


def fixtures():
    f32 = np.array([[0.5, -1.25, 3.0], [np.inf, -np.inf, -0.0]], np.float32)
    return {
        # Every supported dtype; an empty tensor, rank 3, extreme integers,
        # non-finite floats; metadata with escapes and non-ASCII. No scalar:
        # the reference writer's np.ascontiguousarray turns shape () into
        # (1,), so the C++ tests build rank-0 files by hand instead.
        "all_dtypes": ({
            "f32": f32,
            "f64": np.array([1.0 / 3.0, -2.0 ** -1074, 1e300], np.float64),
            "i32": np.array([[-2147483648, 2147483647], [0, -1]], np.int32),
            "i64": np.array([-9223372036854775808, 9223372036854775807, 42], np.int64),
            "mask": np.array([[True, False, True]], np.bool_),
            "empty": np.zeros((0, 4), np.float32),
            "cube": np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 8,
        }, {"format": "pt", "note": 'h\u00e9llo "quoted"\n\ttab\\'}),
        # Names that JSON must escape: non-ASCII (\u escapes, a surrogate
        # pair), a quote, a backslash, a control character.
        "unicode_names": ({
            "poids.\u00e9": np.array([1.0], np.float32),
            "\u5c42.0": np.array([2.0], np.float32),
            "smile\U0001F642": np.array([3.0], np.float32),
            'q"uote\\slash\x01': np.array([4.0], np.float32),
        }, None),
        "empty": ({}, None),
        "metadata_only": ({}, {"step": "100"}),
        # Valid safetensors that dagrad does not support.
        "f16": ({"half": np.array([1.0, 2.0], np.float16)}, None),
        "u8": ({"a": np.array([1.0], np.float32), "bytes": np.array([1, 2, 3], np.uint8)}, None),
        # A PyTorch-style state dict for the checkpoint tests.
        "state_dict": ({
            "encoder.layers.0.linear1.weight": np.arange(12, dtype=np.float32).reshape(4, 3),
            "encoder.layers.0.linear1.bias": np.array([0.5, -0.5, 1.5, -1.5], np.float32),
            "head.weight": np.arange(8, dtype=np.float32).reshape(2, 4) - 4,
            "head.bias": np.array([0.25, -0.25], np.float32),
        }, {"dim": "3", "layers": "1"}),
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (tensors, metadata) in fixtures().items():
        path = os.path.join(OUT, name + ".safetensors")
        save(path, tensors, metadata=metadata)
        back, meta = load(path)
        assert sorted(back) == sorted(tensors) and meta == (metadata or {}), name
        for k, v in tensors.items():
            assert back[k].dtype == v.dtype and back[k].shape == v.shape, (name, k)
            assert np.array_equal(back[k], v, equal_nan=v.dtype.kind == "f"), (name, k)
        print(f"wrote {path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
