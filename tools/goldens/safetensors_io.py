"""safetensors files on numpy alone (Debian's python3 has no safetensors package).

A file is: the header's length N (8 bytes, little-endian), N bytes of JSON
mapping each tensor's name to {"dtype", "shape", "data_offsets": [begin, end]}
(offsets into the data after the header) plus an optional "__metadata__"
object of strings, then the tensors' little-endian bytes.

    save("x.safetensors", {"w": np.ones((2, 3), np.float32)}, metadata={"k": "v"})
    tensors, metadata = load("x.safetensors")
"""
import json
import struct

import numpy as np

DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
          "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
CODES = {np.dtype(t): code for code, t in DTYPES.items()}


def save(path, tensors, metadata=None):
    """Writes tensors (name -> array) in name order; the header is padded to 8 bytes."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": CODES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def load(path):
    """Returns (name -> array, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = np.dtype(DTYPES[info["dtype"]]).newbyteorder("<")
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"]).copy()
    return tensors, metadata
