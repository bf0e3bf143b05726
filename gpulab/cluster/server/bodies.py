"""Reading request bodies with kube-apiserver's bounds: 3 MiB, and the request's time limit.

limitedReadBody (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go)
reads at most ``MaxRequestBodyBytes + 1`` bytes and answers more with 413
``Request entity too large: limit is 3145728``; nothing beyond that is read
or buffered. A body that arrives too slowly is cut off when the request's
time runs out, with the 504 the timeout filter answers
(staging/src/k8s.io/apiserver/pkg/server/filters/timeout.go, the default
``--request-timeout`` of one minute).
"""
from __future__ import annotations

import asyncio

from aiohttp import web

from ..errors import ApiError, request_entity_too_large

MAX_REQUEST_BODY = 3 * 1024 * 1024  # apiserver's MaxRequestBodyBytes default
REQUEST_TIMEOUT = 60.0  # --request-timeout


def request_timeout() -> ApiError:
    """apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)."""
    return ApiError(504, "Timeout", "Timeout: request did not complete within the allotted timeout", {})


async def read(request: web.Request, limit: int = MAX_REQUEST_BODY, timeout: float = REQUEST_TIMEOUT) -> bytes:
    """The whole body, or 413 past ``limit`` bytes, or 504 when it is not in within ``timeout`` seconds.

    Either error closes the connection afterwards: the unread rest of the body cannot be skipped cheaply.
    """
    declared = request.content_length
    if declared is not None and declared > limit:
        _close_after(request)
        raise request_entity_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            while True:
                chunk = await request.content.read(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    _close_after(request)
                    raise request_entity_too_large(limit)
                chunks.append(chunk)
    except TimeoutError:
        _close_after(request)
        raise request_timeout() from None
    return b"".join(chunks)


CLOSE_AFTER = "gpulab.close-connection"


def _close_after(request: web.Request) -> None:
    """Do not keep the connection alive once this request is answered (the server middleware reads this)."""
    request[CLOSE_AFTER] = True
