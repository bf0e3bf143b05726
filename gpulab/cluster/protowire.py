"""Writing the protobuf wire format: varints, tags and length-delimited fields.

Two encoders need it (``/openapi/v2`` as gnostic's message, ``openapi_v2_proto.py``, and built-in objects as
Kubernetes protobuf, ``server/protobuf_encode.py``); the venv has no protobuf runtime, and the format needs
only these few pieces.
"""
from __future__ import annotations

import functools

VARINT, FIXED64, LENGTH_DELIMITED = 0, 1, 2
_ONE_BYTE = [bytes((i,)) for i in range(128)]


def varint(n: int) -> bytes:
    """A non-negative integer below 2**64 as a base-128 varint."""
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@functools.lru_cache(maxsize=None)
def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def delimited(number: int, payload: bytes) -> bytes:
    return tag(number, LENGTH_DELIMITED) + varint(len(payload)) + payload
