"""Repeated log lines, rate-limited, so a client that makes the server fail the same way again and again cannot
fill the disk with ``server.log``.

Every distinct message (logger, level and format string) is written at most once per WINDOW seconds; the next
one written says how many were left out. Tracebacks count as part of the line they belong to.
"""
from __future__ import annotations

import logging
import time
from typing import Callable

WINDOW = 10.0
_MAX_TRACKED = 1024


class RepeatLimiter(logging.Filter):
    def __init__(self, window: float = WINDOW, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self._window = window
        self._clock = clock
        self._seen: dict[tuple, list] = {}  # key -> [time written, lines left out since]

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self._clock()
        state = self._seen.get(key)
        if state is not None and now - state[0] < self._window:
            state[1] += 1
            return False
        if state is None and len(self._seen) >= _MAX_TRACKED:
            self._seen.pop(next(iter(self._seen)))
        left_out = state[1] if state is not None else 0
        self._seen[key] = [now, 0]
        if left_out:
            record.msg = f"{record.msg} [{left_out} more like this in the last {self._window:g}s not logged]"
        return True


def install(window: float = WINDOW) -> None:
    """Rate-limit every handler of the root logger (call after logging.basicConfig)."""
    limiter = RepeatLimiter(window)
    for handler in logging.getLogger().handlers:
        handler.addFilter(limiter)
