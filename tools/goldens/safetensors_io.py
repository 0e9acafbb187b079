"""safetensors files on numpy alone (Debian's python3 has no safetensors package).

A file is: the header's length N (8 bytes, little-endian), N bytes of JSON
mapping each tensor's name to {"dtype", "shape", "data_offsets": [begin, end]}
(offsets into the data after the header) plus an optional "__metadata__"
object of strings, then the tensors' little-endian bytes.

    save("x.safetensors", {"w": np.ones((2, 3), np.float32)}, metadata={"k": "v"})
    tensors, metadata = load("x.safetensors")

PyTorch tensors are written too, bfloat16 ones included (BF16, which numpy
has no type for: load gives their bits, as arrays of dtype BFLOAT16), and
load_torch reads a file as PyTorch tensors:

    save("x.safetensors", {"w": torch.ones(2, 3, dtype=torch.bfloat16)})
    tensors, metadata = load_torch("x.safetensors")   # w: torch.bfloat16
"""
import json
import struct

import numpy as np

# numpy has no bfloat16: load gives BF16 tensors as arrays of this dtype,
# each element the value's 16 bits.
BFLOAT16 = np.dtype([("bfloat16", "<u2")])
DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
          "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
          "BF16": BFLOAT16}
CODES = {np.dtype(t): code for code, t in DTYPES.items()}
# The torch dtypes of the codes, by name (torch is imported only for them).
TORCH_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "F64": "float64",
                "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
                "BOOL": "bool"}


def _encode(value):
    """Returns (code, shape, little-endian bytes) of a numpy array or torch tensor."""
    if type(value).__module__.startswith("torch"):
        import torch
        t = value.detach().cpu().contiguous()
        code = {getattr(torch, n): c for c, n in TORCH_DTYPES.items()}[t.dtype]
        # numpy has no bfloat16: its bits go through int16.
        array = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()
        return code, list(t.shape), array.astype(array.dtype.newbyteorder("<")).tobytes()
    array = np.asarray(value, order="C")  # ascontiguousarray would make a 0-d array 1-d
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return CODES[array.dtype], list(array.shape), data


def save(path, tensors, metadata=None):
    """Writes tensors (name -> array or tensor) in name order; the header is padded to 8 bytes."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors):
        code, shape, data = _encode(tensors[name])
        header[name] = {"dtype": code, "shape": shape,
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def _entries(path):
    """Yields (name, dtype code, shape, data bytes) of each tensor, and returns the metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = raw[8 + n:]
    entries = []
    for name, info in header.items():
        begin, end = info["data_offsets"]
        entries.append((name, info["dtype"], info["shape"], data[begin:end]))
    return entries, metadata


def load(path):
    """Returns (name -> array, metadata dict)."""
    entries, metadata = _entries(path)
    tensors = {}
    for name, code, shape, data in entries:
        dtype = np.dtype(DTYPES[code]).newbyteorder("<")
        tensors[name] = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    return tensors, metadata


def load_torch(path):
    """Returns (name -> torch tensor, metadata dict); BF16 gives torch.bfloat16."""
    import torch
    entries, metadata = _entries(path)
    tensors = {}
    for name, code, shape, data in entries:
        dtype = getattr(torch, TORCH_DTYPES[code])
        flat = (torch.frombuffer(bytearray(data), dtype=dtype) if data
                else torch.empty(0, dtype=dtype))
        tensors[name] = flat.reshape(shape).clone()
    return tensors, metadata
