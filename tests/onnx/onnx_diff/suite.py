"""The differential suite: every case of tests/onnx/onnx_diff/cases_*.py.

    for case in all_cases(): ...
"""
import cases_elementwise
import cases_invalid
import cases_nn
import cases_shape


def all_cases():
    return (cases_elementwise.all_cases() + cases_nn.all_cases() + cases_shape.all_cases()
            + cases_invalid.all_cases())
