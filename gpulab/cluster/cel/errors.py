"""cel-cpp's error texts in cel-go's words (what kube-apiserver and kube-scheduler print).

cel-cpp and cel-go share the grammar, the checker's messages and the
``ERROR: <input>:line:col: ...`` layout; cel-cpp adds an absl status code
around them (``INVALID_ARGUMENT: ... [INVALID_ARGUMENT]``), which is removed.
Runtime errors differ in wording; the ones a selector or a rule can hit are
rewritten here to cel-go's (common/types/err.go, interpreter): ``no such key:
<key>``, ``no such overload``, ``division by zero``, ``modulus by zero``.
Anything else passes through without its status code.
"""
from __future__ import annotations

import re

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")
_RUNTIME = (
    (re.compile(r'^Key not found in map : "?(.*?)"?$'), r"no such key: \1"),
    (re.compile(r"^No matching overloads found.*$"), "no such overload"),
    (re.compile(r"^No such field.*?: ?(.*)$"), r"no such key: \1"),
    (re.compile(r"^divide by zero$"), "division by zero"),
    (re.compile(r"^modulus by zero$"), "modulus by zero"),
)


def _strip_status(text: str) -> str:
    return _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text.strip(), count=1))


def compile_error_text(text: str) -> str:
    """cel-go's ``issues.String()`` for a failed compilation."""
    return _strip_status(text)


def runtime_error_text(text: str) -> str:
    text = _strip_status(text)
    for pattern, replacement in _RUNTIME:
        if pattern.match(text):
            return pattern.sub(replacement, text)
    return text


def library_error(text: str) -> ValueError:
    """An error raised inside a library function; cel-expr-python turns it into the evaluation's error value."""
    return ValueError(text)
