"""Compares dagrad's outputs with ONNX Runtime's and says how they differ.

Same names, dtypes and shapes; integers and bools bit for bit; floats NaN
where ONNX Runtime has NaN (and only there), infinities equal, finite values
within |got - want| <= ulps eps |want| + atol (two epsilons of the dtype,
what two correctly rounded evaluations of one expression may differ by,
unless the case allows more), and -0.0 where ONNX Runtime has -0.0 unless
the case says the sign of a zero is the implementation's.

    problems = compare(case, want={"y": ...}, got={"y": ...})  # [] when they agree
"""
import numpy as np

SHOWN = 6  # elements shown per differing output


def fmt(v):
    if isinstance(v, (np.floating, float)):
        return np.format_float_positional(v, unique=True, trim="-") if abs(v) < 1e16 else repr(float(v))
    return repr(v.item() if hasattr(v, "item") else v)


def operands_at(operands, shape, ix):
    """`name=value` for each operand that broadcasts to the output's shape."""
    shown = []
    for name, a in operands.items():
        try:
            shown.append(f"{name}={fmt(np.broadcast_to(a, shape)[ix])}")
        except ValueError:
            continue
    return f" ({', '.join(shown)})" if shown else ""


def element_diffs(want, got, bad, operands, ref):
    index = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)]
    lines = [f"    at {ix}{operands_at(operands, want.shape, ix)}: {ref} {fmt(want[ix])}, "
             f"dagrad {fmt(got[ix])}" for ix in index[:SHOWN]]
    if len(index) > SHOWN:
        lines.append(f"    ... {len(index) - SHOWN} more of {want.size} elements differ")
    return lines


def float_mismatch(case, want, got):
    rtol, atol = case.ulps * np.finfo(want.dtype).eps, case.atol
    wnan, gnan = np.isnan(want), np.isnan(got)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(got.astype(np.float64) - want) <= rtol * np.abs(want.astype(np.float64)) + atol
    same = (want == got) | close
    bad = (wnan != gnan) | (~wnan & ~same)
    if case.signed_zero:
        bad |= (want == 0) & (got == 0) & (np.signbit(want) != np.signbit(got))
    return bad


def compare_output(case, name, want, got, ref):
    if want.dtype != got.dtype or want.shape != got.shape:
        lines = [f"  output '{name}': {ref} {want.dtype} {list(want.shape)}, dagrad {got.dtype} {list(got.shape)}"]
        if max(want.size, got.size) <= 2 * SHOWN:
            lines.append(f"    {ref} {want.ravel().tolist()}, dagrad {got.ravel().tolist()}")
        return lines
    if np.issubdtype(want.dtype, np.floating):
        bad = float_mismatch(case, want, got)
    else:
        bad = want != got
    if not bad.any():
        return []
    return [f"  output '{name}' ({want.dtype} {list(want.shape)}): "
            f"{int(bad.sum())} of {want.size} elements differ"] + element_diffs(
                want, got, bad, {**case.inputs, **case.consts}, ref)


def compare(case, want, got, ref="ONNX Runtime"):
    """`ref` names where `want` came from in the messages."""
    problems = []
    if sorted(want) != sorted(got):
        return [f"  outputs: {ref} {sorted(want)}, dagrad {sorted(got)}"]
    for name in case.outputs:
        problems += compare_output(case, name, want[name], got[name], ref)
    return problems
