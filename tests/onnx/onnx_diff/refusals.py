"""What dagrad refuses on purpose, case by case, and why.

Every refusal the differential test meets must be listed here (a case-name
pattern, the message it must give, why, and the variants and modes it holds
for); anything else dagrad refuses is a failure, and so is a listed refusal
that no longer happens (remove it then). Under `dagrad eval` each one must
exit with code 2 and the message.
"""
import re
from dataclasses import dataclass

ALL = ("init", "const", "plain")
BOTH = ("fed", "folded")


@dataclass
class Refusal:
    pattern: str            # re.fullmatch against the case name
    message: str            # re.search against dagrad's message
    why: str
    variants: tuple = ALL
    modes: tuple = BOTH


REFUSALS = [
    # dagrad's element types are float, double, float16, bfloat16, int32,
    # int64 and bool (ops/onnx/onnx_tensor.h): any other, as an input, an
    # initializer, a Constant or a Cast's target, is refused.
    Refusal(r"(Identity|Add)/(uint8|int8|int16)|Cast/float32_to_uint8|Add/uint8_initializer",
            r"(element type|dtype) '?(UINT8|INT8|INT16|U8|I8|I16)",
            "an element type dagrad lacks"),
    # float16 and bfloat16 are formats to store in (README): dagrad's add
    # takes neither, and says which ops do.
    Refusal(r"Add/float16", r"add: takes no float16", "dagrad's arithmetic takes no float16"),
    # dagrad's math ops take floats (RequireFloatInput, import_context.h):
    # ONNX's integer Relu, ArgMin, ReduceMin and MatMul are not imported.
    Refusal(r"Relu/edges_int(32|64)_opset14|ArgMin/int64|ReduceMin/int(32|64)_opset13|MatMul/int32",
            r"takes float and double, not int(32|64)", "float-only math"),
    Refusal(r"ReduceMean/int(32|64)_opset13", r"mean needs a float input", "dagrad's Mean is float-only"),
]


def expected(name, variant, mode):
    for r in REFUSALS:
        if re.fullmatch(r.pattern, name) and variant in r.variants and mode in r.modes:
            return r
    return None


def unmatched(names):
    return [r.pattern for r in REFUSALS if not any(re.fullmatch(r.pattern, n) for n in names)]
