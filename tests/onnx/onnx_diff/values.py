"""Inputs that find the edges: IEEE specials and integer extremes, by dtype.

    specials(np.float32)  # NaN, +-inf, -0.0, 0.0, ones, halves, denormals, float32's extremes
    extremes(np.int64)    # INT64_MIN/MAX, 2^53 + 1 (not a double), INT32's bounds, -1, 0, 1
    regular(np.float32, (2, 3))  # small distinct ordinary values of that shape
"""
import numpy as np

I64 = np.iinfo(np.int64)
I32 = np.iinfo(np.int32)

FLOAT_SPECIALS = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 3.0,
                  1e-3, -7.25]


def specials(dtype):
    """Float specials plus each dtype's largest finite value and smallest denormal."""
    info = np.finfo(dtype)
    extra = [float(info.max), -float(info.max), float(info.smallest_subnormal)]
    return np.array(FLOAT_SPECIALS + extra, dtype=dtype)


def extremes(dtype):
    """The integers where a detour through double, int32 or float goes wrong."""
    if dtype == np.int32:
        values = [I32.min, I32.min + 1, -(2**24) - 1, -1, 0, 1, 2, 2**24 + 1, I32.max - 1,
                  I32.max]
    else:
        values = [I64.min, I64.min + 1, -(2**53) - 1, I32.min, -1, 0, 1, 2, I32.max,
                  I32.max + 1, 2**53, 2**53 + 1, 2**60 + 2**36 + 1, I64.max - 1, I64.max]
    return np.array(values, dtype=dtype)


def edge_values(dtype):
    """specials for a float dtype, extremes for an integer one, both bools for bool."""
    if dtype == np.bool_:
        return np.array([False, True])
    if np.issubdtype(dtype, np.floating):
        return specials(dtype)
    return extremes(dtype)


def regular(dtype, shape, start=0):
    """Distinct values of `shape`: -1.75, -1.5, ... for floats; -3, -2, ... for ints."""
    n = int(np.prod(shape, dtype=np.int64))
    index = np.arange(start, start + n)
    if dtype == np.bool_:
        return (index % 3 == 1).reshape(shape)
    if np.issubdtype(dtype, np.floating):
        return ((index % 17) * 0.25 - 1.75).astype(dtype).reshape(shape)
    return ((index % 11) - 3).astype(dtype).reshape(shape)


def positive(dtype, shape, start=0):
    """Distinct values > 0 of `shape` (divisors, logarithms' arguments)."""
    n = int(np.prod(shape, dtype=np.int64))
    index = np.arange(start, start + n)
    if np.issubdtype(dtype, np.floating):
        return ((index % 13) * 0.375 + 0.25).astype(dtype).reshape(shape)
    return ((index % 7) + 1).astype(dtype).reshape(shape)
