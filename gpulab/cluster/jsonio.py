"""JSON in and out of the cluster at Go's nesting depth, fast in the common case.

kube-apiserver's JSON decoder (sigs.k8s.io/json, a fork of encoding/json)
accepts documents nested up to 10,000 levels and refuses deeper ones with
``invalid character '{' exceeded max depth`` (scanner.go maxNestingDepth), so
a custom resource nested 300 levels deep is stored and served. orjson, used
everywhere for speed, stops at 1,024 levels when parsing and 255 when
writing; past those this module falls back to the standard library, with the
interpreter's recursion limit raised to match (:func:`allow_go_depth`, called
by the server process).
"""
from __future__ import annotations

import json
import re
import sys

import orjson

MAX_DEPTH = 10_000  # encoding/json maxNestingDepth
# Frames a walk of MAX_DEPTH levels may need: the recursive walks over objects use up to three frames a level.
_RECURSION_LIMIT = 4 * MAX_DEPTH


def allow_go_depth() -> None:
    """Let recursive walks over objects reach MAX_DEPTH levels (Python's default limit is 1,000 frames)."""
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)


def dumps(obj) -> bytes:
    """Compact JSON bytes; objects nested deeper than orjson writes (255 levels) go through the stdlib."""
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError as exc:
        if "Recursion limit" not in str(exc):
            raise
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def loads(raw: bytes | str):
    """Parse JSON; documents nested deeper than orjson reads (1,024 levels) go through the stdlib.

    Raises ``ValueError`` (``orjson.JSONDecodeError`` or ``json.JSONDecodeError``) for malformed input and
    :class:`TooDeep` past MAX_DEPTH levels.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth limit" not in str(exc):
            raise
    opener = deepest_opener(raw)
    if opener is not None:
        raise TooDeep(opener)
    return json.loads(raw)


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # strings (skipped whole) and brackets


class TooDeep(ValueError):
    """The document nests deeper than MAX_DEPTH; ``opener`` is the bracket that went too deep."""

    def __init__(self, opener: str):
        super().__init__(f"invalid character '{opener}' exceeded max depth")
        self.opener = opener


def deepest_opener(raw: bytes | str) -> str | None:
    """The bracket (``{`` or ``[``) that opens level MAX_DEPTH + 1, or None when the document stays within it."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    depth = 0
    for match in _TOKENS.finditer(text):
        ch = match.group()
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return ch
        elif ch in "]}":
            depth -= 1
    return None
