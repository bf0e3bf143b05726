"""Wait for a cluster condition with a progress bar.

Reconciliation is asynchronous (the operator labels nodes, the MIG manager
repartitions a GPU, a Deployment rolls out), so a notebook must wait before it
looks. ``wait_for`` polls a condition and shows progress with tqdm (a widget in
Jupyter, text elsewhere), always on stdout so a graded cell stays clean.

A condition is any callable returning a truthy value when done, or a
:class:`Progress` (``done`` of ``total``, and what it is waiting on).
``gpulab.learner.conditions`` builds the usual ones.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    text: str = ""

    def __bool__(self) -> bool:
        return self.total > 0 and self.done >= self.total

    def _ipython_display_(self) -> None:
        """Shown as a cell's value, say nothing: the progress bar above already told it."""


def wait_for(condition: Callable[[], Any], *, timeout: float = 120, interval: float = 0.5,
             description: str | None = None) -> Any:
    """Poll ``condition`` until it is done; return its last value or raise TimeoutError saying what was missing."""
    from tqdm.auto import tqdm

    label = description or getattr(condition, "description", None) or getattr(condition, "__name__", "condition")
    deadline = time.monotonic() + timeout
    value = _poll(condition)
    bar = tqdm(total=value.total if isinstance(value, Progress) else None, desc=label, file=sys.stdout,
               leave=True, bar_format=None if isinstance(value, Progress) else "{desc} {elapsed}{postfix}")
    try:
        while True:
            _show(bar, value)
            if value:
                return value
            if time.monotonic() >= deadline:
                last = f" (last: {_status(value)})" if _status(value) else ""
                raise TimeoutError(f"timed out after {timeout:g}s waiting for {label}{last}")
            time.sleep(interval)
            value = _poll(condition)
    finally:
        bar.close()


def _poll(condition: Callable[[], Any]) -> Any:
    from kubernetes.client import ApiException

    try:
        return condition()
    except ApiException as exc:
        if exc.status == 404:  # not created yet: keep waiting
            return False
        raise


def _status(value: Any) -> str:
    if isinstance(value, Progress):
        return f"{value.done}/{value.total}" + (f" {value.text}" if value.text else "")
    return ""


def _show(bar, value: Any) -> None:
    if isinstance(value, Progress):
        if bar.total != value.total:
            bar.total = value.total
        bar.n = min(value.done, value.total)
        bar.set_postfix_str(value.text, refresh=False)
    bar.refresh()
