"""The HTTPS front of the embedded API server: requests in, ``Api`` calls, Status errors out.

Routing and parameters follow kube-apiserver's REST installer
(staging/src/k8s.io/apiserver/pkg/endpoints/installer.go) and handlers
(get.go, create.go, update.go, patch.go, delete.go, watch.go). Every write is
committed to disk before its response is sent.
"""
from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import logging
import time
import traceback

import orjson
from aiohttp import web

from .. import discovery, jsonio, openapi, openapi_v2_proto
from ..api import Api
from ..auth.filters import RequestAuth
from ..auth.reviews import Reviews
from ..errors import ApiError, bad_request, internal, method_not_allowed
from ..kinds.reviews import REVIEW_KEYS
from ..kubelet.shell.octets import to_bytes
from ..registry import ResourceType
from ..selectors import FieldSelector, LabelSelector, matches_fields, matches_labels, parse_label_selector
from . import bodies, connect, health, negotiation, params, paths, protobuf, protobuf_encode, status, versions, watch

log = logging.getLogger("gpulab.apiserver")

JSON = "application/json"
_AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
LONG_SELECTOR = 4096  # characters of selectors beyond which they are parsed off the event loop


def _json_response(obj, status: int = 200, headers: dict | None = None, content_type: str = JSON) -> web.Response:
    return web.Response(body=jsonio.dumps(obj), status=status, headers={"Content-Type": content_type,
                                                                         **(headers or {})})


def _protobuf_response(obj: dict, status: int = 200, headers: dict | None = None) -> web.Response:
    return web.Response(body=protobuf_encode.encode(obj), status=status,
                        headers={"Content-Type": protobuf_encode.MEDIA_TYPE, **(headers or {})})


def _status_response(err: ApiError) -> web.Response:
    return web.Response(body=status.encode(err.status()), status=err.code, headers={"Content-Type": JSON})


class ApiServer:
    """Builds the aiohttp application for one cluster."""

    def __init__(self, api: Api, auth: RequestAuth):
        self.api = api
        self.auth = auth
        self.reviews = Reviews(auth, api)
        self._openapi_cache: dict = {}

    # --- application ------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware], client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._route)
        app.on_response_prepare.append(_add_deprecation_warning)
        return app

    @web.middleware
    async def _middleware(self, request: web.Request, handler):
        try:
            # authentication, impersonation and authorization (auth/filters.py): 401 or 403 before any handler
            self.auth.admit(request.method, request.path, request.headers, request.query)
            resp = await handler(request)
        except ApiError as err:
            resp = _status_response(err)
        except web.HTTPException:
            raise
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # noqa: BLE001 - a bug must answer 500, never kill the server
            log.error("internal error serving %s %s\n%s", request.method, request.path, traceback.format_exc())
            resp = _status_response(internal(f"{type(exc).__name__}: {exc}"))
        finally:
            # Durability: anything written while serving this request is on disk before the reply goes out.
            self.api.store.commit()
        if request.get(bodies.CLOSE_AFTER):
            resp.force_close()
        return resp

    async def _route(self, request: web.Request):
        path = request.path.rstrip("/") or "/"
        if health.is_health_path(path):
            reply = health.respond(request, self.api.store)
            if reply is not None:
                return reply
        if path == "/version":
            return _json_response(discovery.version_info())
        if path in ("/api", "/apis"):
            return self._discovery_root(request, legacy=path == "/api")
        if path == "/openapi/v2":
            return self._openapi(request, "v2", None)
        if path.startswith("/openapi/v3"):
            return self._openapi(request, "v3", path[len("/openapi/v3"):].strip("/") or None)
        target = paths.resolve(self.api.registry, path)
        if target is None:
            if request.method == "GET":
                gv = _group_version_path(path)
                if gv is not None:
                    doc = discovery.api_resource_list(self.api.registry, *gv)
                    if doc is not None:
                        return _json_response(doc)
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        deprecated = self.api.strategy(target.rt).deprecation_warning or self._crd_deprecation_warning(target.rt)
        if deprecated:
            request["deprecation_warning"] = deprecated
        return await self._resource(request, target)

    def _crd_deprecation_warning(self, rt: ResourceType) -> str | None:
        """The warning every request to a CRD version marked ``deprecated`` gets: its ``deprecationWarning``, else
        ``<group>/<version> <Kind> is deprecated``, naming the newest served version that is not
        (apiextensions-apiserver customresource_handler.go ``defaultDeprecationWarning``)."""
        if not rt.crd or not rt.crd.get("deprecated"):
            return None
        if rt.crd.get("deprecationWarning") is not None:
            return rt.crd["deprecationWarning"]
        crd = self.api.store.get("customresourcedefinitions.apiextensions.k8s.io", "", f"{rt.plural}.{rt.group}")
        message = f"{rt.group}/{rt.version} {rt.kind} is deprecated"
        newer = [v["name"] for v in ((crd or {}).get("spec") or {}).get("versions") or ()
                 if v.get("served") and not v.get("deprecated")
                 and discovery.compare_kube_aware_versions(rt.version, v["name"]) < 0]
        if newer:
            best = sorted(newer, key=functools.cmp_to_key(discovery.compare_kube_aware_versions), reverse=True)[0]
            message += f"; use {rt.group}/{best} {rt.kind}"
        return message

    # --- discovery and OpenAPI --------------------------------------------
    def _discovery_root(self, request: web.Request, legacy: bool) -> web.Response:
        accept = request.headers.get("Accept", "")
        if "as=APIGroupDiscoveryList" in accept and "g=apidiscovery.k8s.io" in accept and "v=v2" in accept:
            body = orjson.dumps(discovery.aggregated_discovery(self.api.registry, legacy))
            return _cacheable(request, body, _AGGREGATED, {"Vary": "Accept", "Cache-Control": "public"})
        if legacy:
            return _json_response(discovery.api_versions(f"{request.url.host}:{request.url.port}"))
        return _json_response(discovery.api_group_list(self.api.registry))

    def _openapi(self, request: web.Request, which: str, sub: str | None) -> web.Response:
        """OpenAPI documents; v3 group documents are immutable under their ``?hash=`` URL, as upstream serves them."""
        gen = self.api.registry.generation
        key = (which, sub, gen)
        body = self._openapi_cache.get(key)
        if body is None:
            if which == "v2":
                doc = openapi.openapi_v2(self.api.registry)
            elif sub is None:
                doc = openapi.openapi_v3_index(self.api.registry)
            else:
                doc = openapi.openapi_v3_document(self.api.registry, sub)
                if doc is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
            body = orjson.dumps(doc)
            self._openapi_cache = {k: v for k, v in self._openapi_cache.items() if k[2] == gen}
            self._openapi_cache[key] = body
        headers = {}
        if which == "v2":  # kube-openapi handler: JSON or gnostic protobuf, both with the JSON's ETag
            media_type = openapi_v2_proto.negotiate(request.headers.get("Accept"))
            headers = {"Vary": "Accept"}
            if media_type is None:
                return web.Response(status=406, headers=headers)
            if media_type != JSON:
                pb_key = ("v2-protobuf", None, gen)
                if pb_key not in self._openapi_cache:
                    doc = openapi.openapi_v2(self.api.registry)
                    self._openapi_cache[pb_key] = openapi_v2_proto.encode_document(doc)
                return _cacheable(request, self._openapi_cache[pb_key], media_type, headers, etag_of=body)
        if which == "v3" and sub is not None and "hash" in request.query:
            current = hashlib.sha512(body).hexdigest().upper()
            if request.query["hash"] != current:
                raise web.HTTPMovedPermanently(f"/openapi/v3/{sub}?hash={current}")
            expires = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 365 * 86400))
            headers = {"Cache-Control": "public, immutable", "Expires": expires, "Vary": "Accept"}
        return _cacheable(request, body, JSON, headers)

    # --- resources --------------------------------------------------------
    async def _resource(self, request: web.Request, t: paths.Target):
        method = request.method
        q = request.query
        if t.subresource == "log":
            if method != "GET":
                raise method_not_allowed()
            return await self._logs(request, t)
        if t.subresource in connect.SUBRESOURCES and t.name is not None:
            return await connect.serve(self.api, request, t)
        if method == "GET":
            if t.name is None or t.legacy_watch:
                opts = params.list_options(q)
                if opts["watch"] or t.legacy_watch:
                    return await self._watch(request, t, opts)
                return await self._list(request, t, opts)
            if t.subresource == "scale":
                return _json_response(self._scale_of(t.rt, self.api.get(t.rt, t.name, t.namespace)))
            return self._respond_object(request, t.rt, self.api.get(t.rt, t.name, t.namespace))
        if method == "POST":
            raw = await bodies.read(request)
            dry_run, _, field_validation = params.write_options(q, "CreateOptions")
            body, raw = self._decode(request, t, raw)
            if t.rt.key in REVIEW_KEYS:
                return _json_response(self.reviews.serve(t.rt.key, body, t.namespace), 201)
            if t.subresource == "token":
                return _json_response(self.reviews.token_request(t.namespace, t.name, body), 201)
            if t.subresource == "binding":
                node = ((body or {}).get("target") or {}).get("name")
                if not node:
                    raise bad_request("Binding target name is required")
                self.api.bind(t.namespace, t.name, node)
                return _json_response({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                       "code": 201}, 201)
            if t.subresource == "eviction":
                opts = params.delete_options({}, (body or {}).get("deleteOptions") or {})
                result = self.api.evict(t.namespace, t.name, grace_period_seconds=opts["gracePeriodSeconds"],
                                        dry_run=dry_run or opts["dryRun"])
                return _json_response(result, 201)
            if t.name is not None:
                raise method_not_allowed()
            if not isinstance(body, dict):
                raise bad_request("Object 'Kind' is missing in request body")
            warnings: list[str] = []
            created = self.api.create(t.rt, body, t.namespace, manager=_manager(request), dry_run=dry_run,
                                      field_validation=field_validation or "Warn", warnings=warnings, raw=raw)
            return self._respond_object(request, t.rt, created, 201, warnings)
        if method == "PUT":
            if t.name is None:
                raise method_not_allowed()
            raw = await bodies.read(request)
            dry_run, _, field_validation = params.write_options(q, "UpdateOptions")
            body, raw = self._decode(request, t, raw)
            if not isinstance(body, dict):
                raise bad_request("Object 'Kind' is missing in request body")
            if (body.get("metadata") or {}).get("name", t.name) != t.name:
                raise bad_request(f'the name of the object ({body["metadata"]["name"]}) does not match the name on '
                                  f'the URL ({t.name})')
            body.setdefault("metadata", {})["name"] = t.name
            if t.subresource == "scale":
                return _json_response(self._put_scale(t, body, request, dry_run))
            warnings = []
            existed = self.api.try_get(t.rt, t.name, t.namespace) is not None
            updated = self.api.update(t.rt, body, t.namespace, subresource=t.subresource, manager=_manager(request),
                                      dry_run=dry_run, field_validation=field_validation or "Warn",
                                      warnings=warnings, raw=raw)
            return self._respond_object(request, t.rt, updated, 200 if existed else 201, warnings)
        if method == "PATCH":
            if t.name is None:
                raise method_not_allowed()
            patch_type = negotiation.patch_type(request.headers.get("Content-Type"))
            raw = await bodies.read(request)
            dry_run, _, field_validation = params.write_options(q, "PatchOptions", patch_type=patch_type)
            patch, _ = negotiation.decode_body(raw, request.headers.get("Content-Type"), patch=True)
            if t.subresource == "scale":
                return _json_response(self._patch_scale(t, patch, patch_type, request, dry_run))
            warnings = []
            existed = self.api.try_get(t.rt, t.name, t.namespace) is not None
            patched = self.api.patch(t.rt, t.name, patch, patch_type, t.namespace, subresource=t.subresource,
                                     manager=_manager(request, patch_type), force=bool(params.go_bool(q, "force")),
                                     dry_run=dry_run, field_validation=field_validation or "Warn",
                                     warnings=warnings)
            return self._respond_object(request, t.rt, patched, 200 if existed else 201, warnings)
        if method == "DELETE":
            raw = await bodies.read(request)
            body = None
            if raw:
                body, _ = negotiation.decode_body(raw, request.headers.get("Content-Type"))
                if not isinstance(body, dict):
                    raise bad_request("decoded object cannot be converted to DeleteOptions")
            opts = params.delete_options(q, body)
            if t.name is None:
                items = self.api.delete_collection(t.rt, t.namespace, label_selector=q.get("labelSelector"),
                                                   field_selector=q.get("fieldSelector"),
                                                   grace_period_seconds=opts["gracePeriodSeconds"],
                                                   propagation_policy=opts["propagationPolicy"])
                return _json_response(_list_body(t.rt, items, {}))
            result = self.api.delete(t.rt, t.name, t.namespace, grace_period_seconds=opts["gracePeriodSeconds"],
                                     propagation_policy=opts["propagationPolicy"],
                                     preconditions=opts["preconditions"], dry_run=opts["dryRun"])
            if result.get("kind") == "Status":
                return _json_response(result)
            return self._respond_object(request, t.rt, result)
        raise method_not_allowed()

    @staticmethod
    def _decode(request: web.Request, t: paths.Target, raw: bytes) -> tuple[object, bytes | None]:
        """The decoded body, and the raw bytes when JSON (duplicate fields are only visible there)."""
        value, _ = negotiation.decode_body(raw, request.headers.get("Content-Type"),
                                           into=protobuf.body_type(t.rt, t.subresource))
        is_json = (request.headers.get("Content-Type") or "application/json").startswith("application/json")
        return value, negotiation.as_go_utf8(raw) if is_json else None

    def _respond_object(self, request: web.Request, rt: ResourceType, obj: dict, status: int = 200,
                        warnings: list[str] | None = None) -> web.Response:
        conv = negotiation.negotiate_output(request.headers.get("Accept"),
                                            protobuf_encode.can_encode(obj.get("apiVersion", ""), obj.get("kind", "")))
        headers = {}
        if warnings:
            headers["Warning"] = ", ".join('299 - ' + orjson.dumps(w).decode() for w in warnings)
        if conv.kind == "Table" and obj.get("kind") != "Status":
            table = self.api.table(rt, [obj], include_object=request.query.get("includeObject", "Metadata"))
            table["metadata"] = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            table["apiVersion"] = conv.group_version
            return _json_response(table, status, headers)
        if conv.kind == "PartialObjectMetadata":
            return _json_response(_partial(obj, conv.group_version), status, headers)
        if conv.kind == "PartialObjectMetadataList":
            raise ApiError(406, "NotAcceptable", "you requested PartialObjectMetadataList, but the requested object "
                                                  "is not a list (*unstructured.Unstructured)")
        if conv.protobuf:
            return _protobuf_response(obj, status, headers)
        return _json_response(obj, status, headers)

    # --- list and watch ---------------------------------------------------
    async def _selectors(self, rt, q) -> tuple[LabelSelector, FieldSelector]:
        """The request's label and field selectors, parsed in a thread when long: a selector may be 1 MiB of
        requirements, whose parsing would otherwise hold the event loop for a quarter of a second."""
        labels, fields = q.get("labelSelector"), q.get("fieldSelector")

        def parse() -> tuple[LabelSelector, FieldSelector]:
            return parse_label_selector(labels), self.api.field_selector(rt, fields)

        if len(labels or "") + len(fields or "") > LONG_SELECTOR:
            return await asyncio.to_thread(parse)
        return parse()

    async def _list(self, request: web.Request, t: paths.Target, opts: dict) -> web.Response:
        q = request.query
        cont = opts["continue"]
        if cont and opts["resourceVersion"] not in ("", "0"):
            raise bad_request("specifying resource version is not allowed when using continue")
        requested = versions.for_list(opts["resourceVersion"])
        if requested > self.api.store.rv:
            await versions.wait_until_fresh(self.api.store, requested)
        labels, fields = await self._selectors(t.rt, q)
        items = self.api.list(t.rt, t.namespace, labels, fields)
        rv = self.api.resource_version
        limit = opts["limit"]
        next_token, remaining = None, None
        if cont:
            try:
                token = orjson.loads(base64.b64decode(cont))
                start = token["start"]
            except Exception:  # noqa: BLE001 - any malformed token is the same client error
                raise bad_request("continue key is not valid: illegal base64 data at input byte 0") from None
            items = [i for i in items if _item_key(i) > start]
            rv = str(token.get("rv", rv))
        if limit > 0 and len(items) > limit:   # etcd3 store.go GetList: paging := Limit > 0 (else no limit)
            remaining = len(items) - limit
            items = items[:limit]
            next_token = base64.b64encode(orjson.dumps({"v": "meta.k8s.io/v1", "rv": int(rv),
                                                        "start": _item_key(items[-1])})).decode()
        conv = negotiation.negotiate_output(request.headers.get("Accept"),
                                            protobuf_encode.can_encode(t.rt.api_version, t.rt.kind))
        meta = {"resourceVersion": rv}
        if next_token:
            meta["continue"] = next_token
            meta["remainingItemCount"] = remaining
        if conv.kind == "Table":
            table = self.api.table(t.rt, items, include_object=q.get("includeObject", "Metadata"))
            table["apiVersion"] = conv.group_version
            table["metadata"] = meta
            return _json_response(table)
        if conv.kind == "PartialObjectMetadataList":
            return _json_response({"kind": "PartialObjectMetadataList", "apiVersion": conv.group_version,
                                   "metadata": meta, "items": [_partial(i, conv.group_version) for i in items]})
        if conv.kind == "PartialObjectMetadata":
            raise ApiError(406, "NotAcceptable",
                           "you requested PartialObjectMetadata, but the requested object is a list")
        if conv.protobuf:
            return _protobuf_response(_list_body(t.rt, items, meta))
        return _json_response(_list_body(t.rt, items, meta))

    async def _watch(self, request: web.Request, t: paths.Target, opts: dict) -> web.StreamResponse:
        q = request.query
        since = versions.for_watch(opts["resourceVersion"])
        labels, fields = await self._selectors(t.rt, q)
        if t.name is not None:
            fields = FieldSelector(fields + self.api.field_selector(t.rt, f"metadata.name={t.name}"))
        conv = negotiation.negotiate_output(request.headers.get("Accept"))
        include = q.get("includeObject", "Metadata")

        def encode(obj: dict, first: bool) -> dict:
            if conv.kind == "Table":
                table = self.api.table(t.rt, [obj], include_object=include)
                table["apiVersion"] = conv.group_version
                table["metadata"] = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
                if not first:
                    table["columnDefinitions"] = None
                return table
            if conv.kind == "PartialObjectMetadata":
                return _partial(obj, conv.group_version)
            return obj

        return await watch.serve(
            request, self.api, t.rt, namespace=t.namespace, labels=labels, fields=fields,
            resource_version=since, send_initial_events=bool(opts["sendInitialEvents"]),
            allow_bookmarks=opts["allowWatchBookmarks"], timeout=float(opts["timeoutSeconds"] or 1800),
            encode=encode, matches_labels=matches_labels, matches_fields=matches_fields)

    # --- logs -------------------------------------------------------------
    async def _logs(self, request: web.Request, t: paths.Target) -> web.StreamResponse:
        q = request.query
        opts = {k: q[k] for k in ("container", "previous", "tailLines", "timestamps", "sinceSeconds", "limitBytes")
                if k in q}
        text = self.api.logs(t.namespace, t.name, opts)
        if q.get("follow") != "true":
            return web.Response(body=to_bytes(text), content_type="text/plain")
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        await resp.write(to_bytes(text))
        sent = len(text)
        follow_opts = {k: v for k, v in opts.items() if k != "tailLines"}
        while True:
            await asyncio.sleep(0.25)
            pod = self.api.try_get("pods", t.name, t.namespace)
            if pod is None:
                break
            full = self.api.logs(t.namespace, t.name, follow_opts)
            if len(full) > sent:
                await resp.write(to_bytes(full[sent:]))
                sent = len(full)
            if _container_finished(pod, opts.get("container")):
                break
        return resp

    # --- scale subresource (autoscaling/v1 Scale) -------------------------
    def _put_scale(self, t: paths.Target, body: dict, request: web.Request, dry_run: bool,
                   precondition: bool = True) -> dict:
        """The Scale's replicas onto the object (registry/apps/deployment/storage scaleUpdatedObjectInfo and its
        siblings): its resourceVersion, when given, is the update's precondition, and a dry run stores nothing."""
        replicas = (body.get("spec") or {}).get("replicas")
        change: dict = {"spec": {"replicas": replicas}}
        rv = (body.get("metadata") or {}).get("resourceVersion")
        if precondition and rv:
            change["metadata"] = {"resourceVersion": rv}
        obj = self.api.patch(t.rt, t.name, change, "merge", t.namespace, manager=_manager(request), dry_run=dry_run)
        return self._scale_of(t.rt, obj)

    def _patch_scale(self, t: paths.Target, patch, patch_type: str, request: web.Request, dry_run: bool) -> dict:
        from ..patch import apply_json_patch, apply_merge_patch

        current = self._scale_of(t.rt, self.api.get(t.rt, t.name, t.namespace))
        new = apply_json_patch(current, patch) if patch_type == "json" else apply_merge_patch(current, patch)
        # the patched Scale carries the current resourceVersion; only one the patch itself names is a precondition
        named = isinstance(patch, dict) and bool((patch.get("metadata") or {}).get("resourceVersion"))
        return self._put_scale(t, new, request, dry_run, precondition=named)

    def _scale_of(self, rt: ResourceType, obj: dict) -> dict:
        return _scale_of(obj, self.api.strategy(rt).scale_selector(obj))


def _scale_of(obj: dict, selector: str) -> dict:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    m = obj["metadata"]
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {"name": m["name"], "namespace": m.get("namespace"), "uid": m.get("uid"),
                         "resourceVersion": m.get("resourceVersion"), "creationTimestamp": m.get("creationTimestamp")},
            "spec": {"replicas": spec.get("replicas", 0)},
            "status": {"replicas": status.get("replicas", 0),
                       "selector": selector}}


async def _add_deprecation_warning(request: web.Request, response: web.StreamResponse) -> None:
    """The deprecated-API warning every request to a deprecated resource gets (endpoints/deprecation), whatever the
    answer, beside any other warnings."""
    warning = request.get("deprecation_warning")
    if warning:
        response.headers.add("Warning", "299 - " + orjson.dumps(warning).decode())


def _cacheable(request: web.Request, body: bytes, content_type: str, headers: dict,
               etag_of: bytes | None = None) -> web.Response:
    """A response with the sha512 ETag kube-apiserver sends, answering If-None-Match with 304.

    ``etag_of``: the bytes the ETag hashes when they are not the body (/openapi/v2 protobuf: the JSON's)."""
    etag = '"' + hashlib.sha512(body if etag_of is None else etag_of).hexdigest().upper() + '"'
    if request.headers.get("If-None-Match") == etag:
        return web.Response(status=304, headers={"ETag": etag, **headers})
    return web.Response(body=body, headers={"Content-Type": content_type, "ETag": etag, **headers})


def _list_body(rt: ResourceType, items: list[dict], meta: dict) -> dict:
    return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": items}


def _partial(obj: dict, group_version: str) -> dict:
    return {"kind": "PartialObjectMetadata", "apiVersion": group_version, "metadata": obj.get("metadata", {})}


def _item_key(obj: dict) -> str:
    m = obj["metadata"]
    return f"{m.get('namespace', '')}/{m['name']}"


def _group_version_path(path: str) -> tuple[str, str] | None:
    parts = [p for p in path.split("/") if p]
    if len(parts) == 2 and parts[0] == "api":
        return "", parts[1]
    if len(parts) == 3 and parts[0] == "apis":
        return parts[1], parts[2]
    return None


def _manager(request: web.Request, patch_type: str | None = None) -> str | None:
    """fieldManager, else the user agent's program name, as the apiserver derives a manager."""
    manager = request.query.get("fieldManager")
    if manager:
        return manager
    if patch_type == "apply":
        return None
    agent = request.headers.get("User-Agent", "")
    return agent.split("/", 1)[0] or "unknown"


def _container_finished(pod: dict, container: str | None) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    for s in statuses:
        if container is None or s.get("name") == container:
            if "terminated" in (s.get("state") or {}):
                return True
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")

