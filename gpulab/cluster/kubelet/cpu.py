"""The node agents' CPU: containers whose programs compute without pausing take turns on the event loop.

Every emulated program runs on the API server's event loop. A program that only computes (a busy loop, a
value doubling without end) yields after each slice of its budget (shell/limits.py) and asks for another
turn here. A turn runs waiting work round-robin for at most TURN seconds, and the next turn comes REST
seconds later: between two turns the loop reads its sockets and answers what arrived (a new HTTPS
connection needs about ten iterations of the loop before its request is read, most of them in the rest),
and the server's process leaves the machine's CPUs to its clients half of the time however busy its
containers are. Programs compute more slowly than on a real node; their clocks are virtual anyway.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

log = logging.getLogger("gpulab.kubelet")
TURN = 0.002   # seconds of programs' work in one turn
REST = 0.002   # seconds from the end of a turn to the next


class Cpu:
    def __init__(self) -> None:
        self._ready: dict[object, Callable[[], None]] = {}   # insertion order is the round-robin order
        self._scheduled = False

    def run(self, key: object, work: Callable[[], None]) -> None:
        """Run ``work()`` on a coming turn (once per key: a key already waiting keeps its place)."""
        self._ready.setdefault(key, work)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._turn)

    async def slice(self, work: Callable[[], object]) -> object:
        """``work()``'s result, computed on a coming turn (an exec session's next slice of its program)."""
        done = asyncio.get_running_loop().create_future()

        def settle() -> None:
            try:
                result = work()
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting session
                done.set_exception(exc)
            else:
                done.set_result(result)

        self.run(done, settle)
        return await done

    def _turn(self) -> None:
        self._scheduled = False
        deadline = time.perf_counter() + TURN
        while self._ready and time.perf_counter() < deadline:
            key = next(iter(self._ready))
            work = self._ready.pop(key)
            try:
                work()
            except Exception:  # noqa: BLE001 - one broken program must not stop the others
                log.exception("kubelet: a program's turn failed")
        if self._ready and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_later(REST, self._turn)
