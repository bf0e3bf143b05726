"""The connect subresources (upstream's ``rest.Connecter`` storages): exec, attach, portforward and proxy.

They take the connection over rather than reading and writing objects; each accepts only the methods its
upstream storage lists in ``ConnectMethods`` (405 otherwise).
"""
from __future__ import annotations

from aiohttp import web

from ..errors import method_not_allowed
from . import paths, portforward, proxy, streaming

SUBRESOURCES = ("exec", "attach", "portforward", "proxy")
_STREAM_METHODS = ("GET", "POST")
_PROXY_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


async def serve(api, request: web.Request, t: paths.Target) -> web.StreamResponse:
    allowed = _PROXY_METHODS if t.subresource == "proxy" else _STREAM_METHODS
    if request.method not in allowed:
        raise method_not_allowed()
    if t.subresource == "proxy":
        return await proxy.serve(api, request, t.rt.plural, t.namespace, t.name)
    if t.subresource == "portforward":
        return await portforward.serve(api, request, t.namespace, t.name)
    return await streaming.serve(api, request, t.namespace, t.name, exec_=t.subresource == "exec")
