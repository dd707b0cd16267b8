"""Reads a safetensors file with the standard library only (json, struct).

    python3 tests/read_safetensors.py FILE

prints one line per tensor, "name [shape] [values...]" (each value its repr),
then the metadata as one line of JSON."""
import json
import struct
import sys

FORMATS = {"F32": "f", "F64": "d"}  # kgl's dtypes: struct's format, 4 and 8 bytes


def load(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))  # header length, little-endian u64
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        fmt = FORMATS[t["dtype"]]  # a KeyError names any other dtype
        begin, end = t["data_offsets"]  # relative to the start of the data
        count = (end - begin) // struct.calcsize(fmt)
        values = struct.unpack("<%d%s" % (count, fmt), data[begin:end])
        tensors[name] = (t["shape"], list(values))  # row-major; F32 values as Python floats, exactly
    return tensors, meta


if __name__ == "__main__":
    tensors, meta = load(sys.argv[1])
    for name, (shape, values) in tensors.items():
        print(name, shape, values)
    print(json.dumps(meta, sort_keys=True))
