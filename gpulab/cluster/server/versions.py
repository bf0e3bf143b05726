"""resourceVersion parameters of lists and watches, checked as kube-apiserver's storage layer checks them.

APIObjectVersioner.ParseResourceVersion (staging/src/k8s.io/apiserver/pkg/storage/api_object_versioner.go)
accepts "", "0" or an unsigned decimal; anything else is a storage InvalidError
``resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax``. A list
(storage.ValidateListOptions) answers it as 400 ``invalid resource version: ...``; a watch returns the storage
error as it is (cacher.Watch), which the handler, finding no Status in it, answers as a 500 without a reason
(responsewriters.ErrorToAPIStatus).

A list at a resourceVersion the server has not reached yet waits for it up to three seconds (the watch cache's
blockTimeout), then fails with storage.NewTooLargeResourceVersionError: 504 ``Timeout: Too large resource
version: N, current: M`` with the cause ``ResourceVersionTooLarge`` and ``retryAfterSeconds: 1``. A watch at a
future resourceVersion is accepted and waits for events after it (cacher.Watch: "the clients can wait for
events without unnecessary blocking").
"""
from __future__ import annotations

import asyncio
import re

from ..errors import ApiError, bad_request, invalid
from ..store import Store
from ..gofmt import go_quote

BLOCK_TIMEOUT = 3.0  # watch_cache.go blockTimeout
RETRY_SECONDS = 1  # resourceVersionTooHighRetrySeconds
_UINT64_MAX = (1 << 64) - 1
_UINT = re.compile(r"[0-9]+\Z")


class InvalidResourceVersion(ValueError):
    """storage.InvalidError for a resourceVersion that is not a number."""


def parse(resource_version: str) -> int:
    """The number a resourceVersion names (0 for "" and "0"), or :class:`InvalidResourceVersion`."""
    if resource_version in ("", "0"):
        return 0
    reason = None
    if not _UINT.match(resource_version):
        reason = "invalid syntax"
    elif int(resource_version) > _UINT64_MAX:
        reason = "value out of range"
    if reason:
        detail = f"strconv.ParseUint: parsing {go_quote(resource_version)}: {reason}"
        raise InvalidResourceVersion(str(invalid("resourceVersion", resource_version, detail)))
    return int(resource_version)


def for_list(resource_version: str) -> int:
    try:
        return parse(resource_version)
    except InvalidResourceVersion as exc:
        raise bad_request(f"invalid resource version: {exc}") from None


def for_watch(resource_version: str) -> int:
    try:
        return parse(resource_version)
    except InvalidResourceVersion as exc:
        raise ApiError(500, "", str(exc)) from None


def too_large(requested: int, current: int) -> ApiError:
    return ApiError(504, "Timeout", f"Timeout: Too large resource version: {requested}, current: {current}",
                    {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                     "retryAfterSeconds": RETRY_SECONDS})


async def wait_until_fresh(store: Store, requested: int, timeout: float = BLOCK_TIMEOUT) -> None:
    """Return once the store has reached ``requested``, or raise the 504 after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while store.rv < requested:
        if loop.time() >= deadline:
            raise too_large(requested, store.rv)
        await asyncio.sleep(min(0.05, max(0.0, deadline - loop.time())))
