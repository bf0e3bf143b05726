"""Bytes as the interpreter's text, and back, without loss.

Programs in the interpreter read and write ``str``. What a container's programs write may be binary (a
``gzip`` in a pipeline, a ConfigMap's ``binaryData`` read with ``cat``), and a real runtime hands those
bytes to exec, attach and log readers unchanged. Text decoded with ``surrogateescape`` keeps every byte
that is not part of valid UTF-8 as a lone surrogate, so encoding it the same way gives the bytes back.
"""
from __future__ import annotations


def to_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def to_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")
