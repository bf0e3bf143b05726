"""CEL for the embedded cluster: compile once, evaluate fast, report errors in cel-go's words.

Kubernetes evaluates CEL with cel-go (DRA device selectors, CRD
``x-kubernetes-validations``, admission policies). No Go here, so a kept CEL
library stands in for it: **cel-expr-python** (PyPI ``cel-expr-python``,
import ``cel_expr_python``), Google's Python binding of cel-cpp, the C++
implementation maintained with cel-go against the same conformance suite.
It was chosen over **cel-python** (``celpy``, a pure-Python interpreter) because

* it parses with the same ANTLR grammar as cel-go, so a syntax error reads as
  kube-apiserver's does (``ERROR: <input>:1:17: Syntax error: mismatched input
  ...`` with the caret line) and ``undeclared reference to 'x' (in container
  '')`` is word for word cel-go's;
* it is fast: about 12 ms to import (celpy: about 500 ms, most of it building
  its lark parser, which would cost every cold ``cluster up`` that validates a
  selector) and tens of microseconds per evaluation, where celpy's tree walker
  is one to two orders slower — the scheduler evaluates a selector per device
  per node;
* its runtime errors are values (``Value.type() == ERROR``), not exceptions, so
  a failing device is reported without unwinding the allocator.

What it lacks, and this package adds: Kubernetes' CEL library
(:mod:`.library`: ``quantity()``, ``semver()`` and their methods, values of
types cel-expr-python cannot hold natively, as tagged maps), cel-go's wording of
runtime errors (:mod:`.errors`) and a bounded cache of compiled programs keyed by
environment and expression (compiling costs about 100x an evaluation).

The module imports cel-expr-python only when the first expression is
compiled, so a cluster that never sees CEL never loads it.
"""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

from .errors import compile_error_text, runtime_error_text

__all__ = ["CelCompileError", "CelRuntimeError", "Environment", "Program"]

_CACHE_SIZE = 4096


class CelCompileError(ValueError):
    """An expression that does not compile; ``str()`` is cel-go's ``issues.String()`` text."""


class CelRuntimeError(RuntimeError):
    """An evaluation that failed; ``str()`` is cel-go's error text (``no such key: model``)."""


@functools.lru_cache(maxsize=1)
def _cel():
    from cel_expr_python import cel  # noqa: PLC0415 - lazy: only clusters that compile CEL pay for it
    return cel


@dataclass(frozen=True)
class Program:
    """One compiled expression of an :class:`Environment`."""

    expression: str
    returns: str  # the checked output type's name: "bool", "dyn", "string", ...
    _compiled: Any

    def evaluate(self, variables: dict) -> Any:
        """The expression's value as a plain Python value; ``CelRuntimeError`` when evaluation fails."""
        result = self._compiled.eval(data=variables)
        if result.type().name() == "ERROR":
            raise CelRuntimeError(runtime_error_text(str(result.value())))
        return result.plain_value()

    def tree(self):
        """The checked syntax tree (:class:`.checked.Node`), macros expanded, for estimating its cost."""
        from . import checked  # noqa: PLC0415 - only CRD validation reads trees
        return checked.parse(self._compiled.serialize())


class Environment:
    """A CEL environment: declared variables (all ``dyn``), the Kubernetes library, and a program cache.

    ``variables`` are the names an expression may use (``device``; ``self`` and
    ``oldSelf`` for CRD rules); values passed to :meth:`Program.evaluate` are
    plain JSON-like Python values, with quantities and versions made by
    :func:`.library.quantity_value` / :func:`.library.semver_value`.
    """

    def __init__(self, name: str, variables: tuple[str, ...]):
        self.name = name
        self.variables = variables
        self._env = None
        self._lock = threading.Lock()
        self._compile = functools.lru_cache(maxsize=_CACHE_SIZE)(self._compile_uncached)

    def _environment(self):
        with self._lock:
            if self._env is None:
                from . import library  # noqa: PLC0415 - needs the library itself
                cel = _cel()
                self._env = cel.NewEnv(variables={v: cel.Type.DYN for v in self.variables},
                                       extensions=[library.extension(cel)])
            return self._env

    def compile(self, expression: str) -> Program:
        """The compiled program of ``expression`` (cached); ``CelCompileError`` with cel-go's text."""
        return self._compile(expression)

    def _compile_uncached(self, expression: str) -> Program:
        env = self._environment()
        try:
            compiled = env.compile(expression)
        except RuntimeError as exc:
            raise CelCompileError(compile_error_text(str(exc))) from None
        return Program(expression, compiled.return_type().name().lower(), compiled)
