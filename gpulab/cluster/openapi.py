"""The OpenAPI documents kube-apiserver serves: /openapi/v2 (swagger 2.0) and /openapi/v3 (an index of
per-group-version OpenAPI 3.0 documents).

kubectl reads them for ``explain`` (v3: finds the schema whose
``x-kubernetes-group-version-kind`` matches the one on the resource's paths),
for ``apply``'s default ``--validate=strict`` (v3, falling back to v2: the
group-version's PATCH operation must carry a ``fieldValidation`` query
parameter) and for client-side apply's strategic merge patch
(``x-kubernetes-patch-merge-key``/``-strategy`` on the definitions).

Why hand-written: upstream generates these from go-restful routes with
kube-openapi; there is no Python equivalent. This module rebuilds the same
routes from the registry and renders them the same way:

- routes, operation names, descriptions, parameters, responses:
  k8s.io/apiserver/pkg/endpoints/installer.go (``registerResourceHandlers``,
  ``AddObjectParams``) for built-in resources and
  k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder/builder.go for
  custom resources;
- operation ids and tags: k8s.io/apiserver/pkg/endpoints/openapi/openapi.go
  (``GetOperationIDAndTags``); definition names: its ``friendlyName``;
- path-level common parameters, sorted parameters, 401 response:
  k8s.io/kube-openapi/pkg/builder/openapi.go and pkg/builder3;
- v3 index and its ``hash``: k8s.io/kube-openapi/pkg/handler3/handler.go;
- custom resource schemas: builder.go ``buildKubeNative``/``buildListSchema``,
  apiserver/schema/unfold.go, kubeopenapi.go, controller/openapi/v2/conversion.go.

Definitions come from :mod:`gpulab.cluster.schema` (the upstream v1.37
definitions). Documents are cached (built-in group-versions for the process,
the rest per ``registry.generation``) and share sub-dicts: never mutate them.
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import orjson

from . import discovery, schema
from .kinds import strategy_for
from .registry import Registry, ResourceType

# --- media types (negotiation.MediaTypesForSerializer with default feature gates) -----

_JSON, _YAML, _PROTOBUF = "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"
_MEDIA = (_JSON, _YAML, _PROTOBUF)
_ALL_MEDIA = _MEDIA + ("application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch")
_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                "application/strategic-merge-patch+json", "application/apply-patch+yaml")
_CRD_MEDIA = (_JSON, _YAML)
_CRD_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
_ANY = ("*/*",)

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_STATUS, _DELETE_OPTIONS, _PATCH = _META + "Status", _META + "DeleteOptions", _META + "Patch"
_WATCH_EVENT, _RESOURCE_LIST = _META + "WatchEvent", _META + "APIResourceList"
_OBJECT_META, _LIST_META = _META + "ObjectMeta", _META + "ListMeta"
_SCALE = "io.k8s.api.autoscaling.v1.Scale"
_STRING = "string"  # a response that is a plain string (pods/log) rather than a definition

_INFO = {"title": "Kubernetes", "version": schema.KUBE_VERSION}
_CRD_INFO = {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}
_BEARER = {"BearerToken": {"description": "Bearer Token authentication", "in": "header", "name": "authorization",
                           "type": "apiKey"}}


# --- parameters -------------------------------------------------------------

@dataclass(frozen=True)
class Param:
    name: str
    location: str  # "query" or "path"
    description: str
    type: str = "string"


PRETTY = Param("pretty", "query", "If 'true', then the output is pretty printed. Defaults to 'false' unless the "
               "user-agent indicates a browser or command-line HTTP tool (curl and wget).")
NAMESPACE = Param("namespace", "path", "object name and auth scope, such as for teams and projects")

# Query parameters from the metav1 options types' field docs (types_swagger_doc_generated.go).
_DRY_RUN = Param("dryRun", "query", "When present, indicates that modifications should not be persisted. An "
                 "invalid or unrecognized dryRun directive will result in an error response and no further "
                 "processing of the request. Valid values are: - All: all dry run stages will be processed")
_FIELD_MANAGER_DOC = ("fieldManager is a name associated with the actor or entity that is making these changes. "
                      "The value must be less than or 128 characters long, and only contain printable characters, "
                      "as defined by https://golang.org/pkg/unicode/#IsPrint.")
_FIELD_MANAGER = Param("fieldManager", "query", _FIELD_MANAGER_DOC)
_FIELD_MANAGER_PATCH = Param("fieldManager", "query", _FIELD_MANAGER_DOC + " This field is required for apply "
                             "requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, "
                             "MergePatch, StrategicMergePatch).")
FIELD_VALIDATION = Param(
    "fieldValidation", "query",
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing "
    "unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are "
    "silently dropped from the object, and will ignore all but the last duplicate field that the decoder "
    "encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard "
    "warning response header for each unknown field that is dropped from the object, and for each duplicate field "
    "that is encountered. The request will still succeed if there are no other errors, and will only persist the "
    "last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a "
    "BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are "
    "present. The error returned from the server will contain all unknown and duplicate fields encountered.")
_FORCE = Param("force", "query", "Force is going to \"force\" Apply requests. It means user will re-acquire "
               "conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
               "boolean")
_GRACE = Param("gracePeriodSeconds", "query", "The duration in seconds before the object should be deleted. Value "
               "must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the "
               "default grace period for the specified type will be used. Defaults to a per object value if not "
               "specified. zero means delete immediately.", "integer")
_IGNORE_STORE_ERROR = Param(
    "ignoreStoreReadErrorWithClusterBreakingPotential", "query",
    "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails "
    "with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying "
    "storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails "
    "to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, "
    "and removes the object from the storage. WARNING: This may potentially break the cluster if the workload "
    "associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY "
    "know what you are doing. The default value is false, and the user must opt in to enable it", "boolean")
_ORPHAN = Param("orphanDependents", "query", "Deprecated: please use the PropagationPolicy, this field will be "
                "deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer "
                "will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy "
                "may be set, but not both.", "boolean")
_PROPAGATION = Param("propagationPolicy", "query", "Whether and how garbage collection will be performed. Either "
                     "this field or OrphanDependents may be set, but not both. The default policy is decided by the "
                     "existing finalizer set in the metadata.finalizers and the resource-specific default policy. "
                     "Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage "
                     "collector to delete the dependents in the background; 'Foreground' - a cascading policy that "
                     "deletes all dependents in the foreground.")
_ALLOW_BOOKMARKS = Param("allowWatchBookmarks", "query", "allowWatchBookmarks requests watch events with type "
                         "\"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are "
                         "sent at the server's discretion. Clients should not assume bookmarks are returned at any "
                         "specific interval, nor may they assume the server will send any BOOKMARK event during a "
                         "session. If this is not a watch, this field is ignored.", "boolean")
_CONTINUE = Param(
    "continue", "query",
    "The continue option should be set when retrieving more results from the server. Since this value is server "
    "defined, clients may only use the continue value from a previous query result with identical query "
    "parameters (except for the value of continue) and the server may reject a continue value it does not "
    "recognize. If the specified continue value is no longer valid whether due to expiration (generally five to "
    "fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired "
    "error together with a continue token. If the client needs a consistent list, it must restart their list "
    "without the continue field. Otherwise, the client may send another list request with the token received "
    "with the 410 error, the server will respond with a list starting from the next key, but from the latest "
    "snapshot, which is inconsistent from the previous list results - objects that are created, modified, or "
    "deleted after the first list request will be included in the response, as long as their keys are after the "
    "\"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last "
    "resourceVersion value returned by the server and not miss any modifications.")
_FIELD_SELECTOR = Param("fieldSelector", "query", "A selector to restrict the list of returned objects by their "
                        "fields. Defaults to everything.")
_LABEL_SELECTOR = Param("labelSelector", "query", "A selector to restrict the list of returned objects by their "
                        "labels. Defaults to everything.")
_LIMIT = Param(
    "limit", "query",
    "limit is a maximum number of responses to return for a list call. If more items exist, the server will set "
    "the `continue` field on the list metadata to a value that can be used with the same initial query to "
    "retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to "
    "zero items) in the event all requested objects are filtered out and clients should only use the presence of "
    "the continue field to determine whether more results are available. Servers may choose not to support the "
    "limit argument and will return all of the available results. If limit is specified and the continue field is "
    "empty, clients may assume that no more results are available. This field is not supported if watch is "
    "true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a "
    "single list call without a limit - that is, no objects created, modified, or deleted after the first request "
    "is issued will be included in any subsequent continued requests. This is sometimes referred to as a "
    "consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large "
    "result can ensure they see all possible objects. If objects are updated during a chunked list the version of "
    "the object that was present at the time the first list result was calculated is returned.", "integer")
_RESOURCE_VERSION = Param("resourceVersion", "query", "resourceVersion sets a constraint on what resource versions "
                          "a request may be served from. See https://kubernetes.io/docs/reference/using-api/"
                          "api-concepts/#resource-versions for details.\n\nDefaults to unset")
_RESOURCE_VERSION_MATCH = Param("resourceVersionMatch", "query", "resourceVersionMatch determines how "
                                "resourceVersion is applied to list calls. It is highly recommended that "
                                "resourceVersionMatch be set for list calls where resourceVersion is set See "
                                "https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for "
                                "details.\n\nDefaults to unset")
_SEND_INITIAL_EVENTS = Param(
    "sendInitialEvents", "query",
    "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin "
    "with synthetic events to produce the current state of objects in the collection. Once all such events have "
    "been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) "
    "corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. "
    "Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes "
    "(subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require "
    "`resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - "
    "`resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided "
    "`resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at "
    "least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted "
    "as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  "
    "when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid "
    "error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward "
    "compatibility reasons) and to false otherwise.", "boolean")
_TIMEOUT = Param("timeoutSeconds", "query", "Timeout for the list/watch call. This limits the duration of the "
                 "call, regardless of any activity or inactivity.", "integer")
_WATCH = Param("watch", "query", "Watch for changes to the described resources and return them as a stream of add, "
               "update, and remove notifications. Specify resourceVersion.", "boolean")

_LIST_OPTIONS = (_LABEL_SELECTOR, _FIELD_SELECTOR, _WATCH, _ALLOW_BOOKMARKS, _RESOURCE_VERSION,
                 _RESOURCE_VERSION_MATCH, _TIMEOUT, _LIMIT, _CONTINUE, _SEND_INITIAL_EVENTS)
_CREATE_OPTIONS = (_DRY_RUN, _FIELD_MANAGER, FIELD_VALIDATION)  # also UpdateOptions
_PATCH_OPTIONS = (_DRY_RUN, _FORCE, _FIELD_MANAGER_PATCH, FIELD_VALIDATION)
_DELETE_OPTIONS_PARAMS = (_GRACE, _ORPHAN, _PROPAGATION, _DRY_RUN, _IGNORE_STORE_ERROR)
# DELETECOLLECTION: AddObjectParams(ListOptions, "watch", "allowWatchBookmarks") after the DeleteOptions.
_DELETECOLLECTION_LIST_OPTIONS = tuple(p for p in _LIST_OPTIONS if p not in (_WATCH, _ALLOW_BOOKMARKS))
_GET_OPTIONS = (_RESOURCE_VERSION,)
# PodLogOptions (sinceTime is a *metav1.Time, which AddObjectParams skips).
_POD_LOG_OPTIONS = (
    Param("container", "query", "The container for which to stream logs. Defaults to only container if there is "
          "one container in the pod."),
    Param("follow", "query", "Follow the log stream of the pod. Defaults to false.", "boolean"),
    Param("insecureSkipTLSVerifyBackend", "query", "insecureSkipTLSVerifyBackend indicates that the apiserver should "
          "not confirm the validity of the serving certificate of the backend it is connecting to.  This will make "
          "the HTTPS connection between the apiserver and the backend insecure. This means the apiserver cannot "
          "verify the log data it is receiving came from the real kubelet.  If the kubelet is configured to verify "
          "the apiserver's TLS credentials, it does not mean the connection to the real kubelet is vulnerable to a "
          "man in the middle attack (e.g. an attacker could not intercept the actual log data coming from the real "
          "kubelet).", "boolean"),
    Param("limitBytes", "query", "If set, the number of bytes to read from the server before terminating the log "
          "output. This may not display a complete final line of logging, and may return slightly more or slightly "
          "less than the specified limit.", "integer"),
    Param("previous", "query", "Return previous terminated container logs. Defaults to false.", "boolean"),
    Param("sinceSeconds", "query", "A relative time in seconds before the current time from which to show logs. If "
          "this value precedes the time a pod was started, only logs since the pod start will be returned. If this "
          "value is in the future, no logs will be returned. Only one of sinceSeconds or sinceTime may be "
          "specified.", "integer"),
    Param("stream", "query", "Specify which container log stream to return to the client. Acceptable values are "
          "\"All\", \"Stdout\" and \"Stderr\". If not specified, \"All\" is used, and both stdout and stderr are "
          "returned interleaved. Note that when \"TailLines\" is specified, \"Stream\" can only be set to nil or "
          "\"All\"."),
    Param("tailLines", "query", "If set, the number of lines from the end of the logs to show. If not specified, "
          "logs are shown from the creation of the container or sinceSeconds or sinceTime. Note that when "
          "\"TailLines\" is specified, \"Stream\" can only be set to nil or \"All\".", "integer"),
    Param("timestamps", "query", "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line "
          "of log output. Defaults to false.", "boolean"),
)


# --- routes -----------------------------------------------------------------

@dataclass
class Route:
    """One go-restful route: what kube-openapi turns into an operation."""

    method: str
    path: str
    operation: str  # the route's Operation(), before GetOperationIDAndTags
    description: str
    params: list[Param]
    produces: tuple[str, ...]
    consumes: tuple[str, ...]
    responses: dict[int, tuple[str, str]]  # status -> (description, definition name or _STRING)
    action: str | None = None
    gvk: dict | None = None
    body: str | None = None  # definition the request body reads
    body_required: bool = True


def _gvk(group: str, version: str, kind: str) -> dict:
    return {"group": group, "kind": kind, "version": version}


def _article(noun: str) -> str:
    """endpoints.GetArticleForNoun(noun, " ")."""
    if not noun.endswith("ss") and noun.endswith("s"):
        return " "
    return " an " if noun[0].lower() in "aeiou" else " a "


def _prefix(rt: ResourceType) -> str:
    return f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"


def _definition(group: str, version: str, kind: str) -> str:
    name = schema.definition_name(group, version, kind)
    if name is None:
        raise KeyError(f"no upstream definition for {group}/{version}, Kind={kind}")
    return name


def _builtin_routes(rt: ResourceType) -> list[Route]:
    routes = _storage_routes(rt, None, set(rt.verbs))
    for name in rt.subresources:
        sub = discovery.subresource(rt, name)
        if sub.connect:
            continue   # connect operations (exec, proxy...) are not described
        routes += _storage_routes(rt, name, set(sub.verbs), sub.kind, sub.text)
    return routes


def _storage_routes(rt: ResourceType, sub: str | None, verbs: set[str],
                    gvk: tuple[str, str, str] | None = None, text: bool = False) -> list[Route]:
    """installer.go registerResourceHandlers for one storage path (``pods`` or ``pods/status``); ``gvk`` is the
    storage's own kind when it differs from the parent's (pods/eviction serves policy/v1 Eviction), ``text`` says
    its GET answers with a plain string (pods/log)."""
    group, version, reg_kind = gvk or (rt.group, rt.version, rt.kind)
    obj = _definition(group, version, reg_kind)
    parent = rt.kind  # descriptions and operation names use the parent's kind
    ns = "Namespaced" if rt.namespaced else ""
    title = sub.title() if sub else ""
    name_param = Param("name", "path", "name of the " + reg_kind)
    if rt.namespaced:
        collection, params = f"namespaces/{{namespace}}/{rt.plural}", [NAMESPACE]
    else:
        collection, params = rt.plural, []
    item, item_params = collection + "/{name}", params + [name_param]
    if sub:
        item += "/" + sub
        collection, params = item, item_params
    prefix = _prefix(rt)
    meta = _gvk(group, version, reg_kind)
    produced = _STRING if text else obj
    lister, watcher = "list" in verbs, "watch" in verbs

    def doc(verb_phrase: str) -> str:
        return f"{verb_phrase} {sub} of the specified {parent}" if sub else f"{verb_phrase} the specified {parent}"

    def route(method, path, op, description, action, path_params, options, produces, responses, body=None,
              body_required=True, consumes=_ANY, suffix="", namespaced=ns):
        return Route(method, f"{prefix}/{path}", f"{op}{namespaced}{parent}{title}{suffix}", description,
                     [PRETTY, *path_params, *options], produces, consumes, responses, action, meta, body,
                     body_required)

    list_doc = (f"list or watch objects of kind {parent}" if lister and watcher else f"list objects of kind {parent}")
    watchlist_doc = f"watch individual changes to a list of {parent}. deprecated: use the 'watch' parameter with a " \
                    "list operation instead."
    out = []
    if lister:
        out.append(route("GET", collection, "list", list_doc, "list", params, _LIST_OPTIONS, _ALL_MEDIA,
                         {200: ("OK", _list_definition(group, version, reg_kind))}))
    if "create" in verbs:
        article = _article(parent)
        out.append(route("POST", collection, "create",
                         f"create {sub} of{article}{parent}" if sub else f"create{article}{parent}", "post", params,
                         _CREATE_OPTIONS, _MEDIA, {200: ("OK", obj), 201: ("Created", obj), 202: ("Accepted", obj)},
                         body=obj))
    if "deletecollection" in verbs:
        out.append(route("DELETE", collection, "deletecollection", f"delete collection of {parent}",
                         "deletecollection", params,
                         _DELETE_OPTIONS_PARAMS + _DELETECOLLECTION_LIST_OPTIONS,
                         _MEDIA, {200: ("OK", _STATUS)}, body=_DELETE_OPTIONS, body_required=False))
    if lister and watcher:
        out.append(route("GET", "watch/" + collection, "watch", watchlist_doc, "watchlist", params, _LIST_OPTIONS,
                         _ALL_MEDIA, {200: ("OK", _WATCH_EVENT)}, suffix="List"))
    if "get" in verbs:
        produces = ("text/plain",) + _MEDIA if text else _MEDIA
        out.append(route("GET", item, "read", doc("read"), "get", item_params,
                         _POD_LOG_OPTIONS if text else (), produces, {200: ("OK", produced)}))
    if "update" in verbs:
        out.append(route("PUT", item, "replace", doc("replace"), "put", item_params, _CREATE_OPTIONS, _MEDIA,
                         {200: ("OK", obj), 201: ("Created", obj)}, body=obj))
    if "patch" in verbs:
        out.append(route("PATCH", item, "patch", doc("partially update"), "patch", item_params, _PATCH_OPTIONS,
                         _MEDIA, {200: ("OK", obj), 201: ("Created", obj)}, body=_PATCH, consumes=_PATCH_TYPES))
    if "delete" in verbs:
        deleted = obj if strategy_for(rt).returns_deleted_object else _STATUS
        out.append(route("DELETE", item, "delete", f"delete{_article(parent)}{parent}", "delete", item_params,
                         _DELETE_OPTIONS_PARAMS, _MEDIA, {200: ("OK", deleted), 202: ("Accepted", deleted)},
                         body=_DELETE_OPTIONS, body_required=False))
    if watcher:
        out.append(route("GET", "watch/" + item, "watch",
                         f"watch changes to an object of kind {parent}. deprecated: use the 'watch' parameter with a "
                         "list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
                         "watch", item_params, _LIST_OPTIONS, _ALL_MEDIA, {200: ("OK", _WATCH_EVENT)}))
    if rt.namespaced and not sub:
        if lister:
            out.append(route("GET", rt.plural, "list", list_doc, "list", [], _LIST_OPTIONS, _ALL_MEDIA,
                             {200: ("OK", _list_definition(group, version, reg_kind))},
                             suffix="ForAllNamespaces", namespaced=""))
        if lister and watcher:
            out.append(route("GET", "watch/" + rt.plural, "watch", watchlist_doc, "watchlist", [], _LIST_OPTIONS,
                             _ALL_MEDIA, {200: ("OK", _WATCH_EVENT)}, suffix="ListForAllNamespaces", namespaced=""))
    return out


def _list_definition(group: str, version: str, kind: str) -> str:
    return _definition(group, version, kind + "List")


def _discovery_route(group: str, version: str) -> Route:
    """discovery/version.go: GET /apis/<group>/<version>/ (not under go-restful for custom resources)."""
    path = f"/apis/{group}/{version}/" if group else f"/api/{version}/"
    return Route("GET", path, "getAPIResources", "get available resources", [], _MEDIA, _MEDIA,
                 {200: ("OK", _RESOURCE_LIST)})


# --- custom resources -------------------------------------------------------

def crd_definition_name(group: str, version: str, kind: str) -> str:
    """openapi.friendlyName("<group>/<version>.<kind>"): the group reversed, e.g. com.example.v1.Widget."""
    return ".".join(reversed(group.split("."))) + f".{version}.{kind}"


def _crd_routes(rt: ResourceType) -> list[Route]:
    """builder.go generateBuilder/buildRoute."""
    obj = crd_definition_name(rt.group, rt.version, rt.kind)
    lst = crd_definition_name(rt.group, rt.version, rt.list_kind)
    root = f"/apis/{rt.group}/{rt.version}/{rt.plural}"
    ns = "Namespaced" if rt.namespaced else ""
    meta = _gvk(rt.group, rt.version, rt.kind)
    out = []

    def route(path: str, method: str, action: str, verb: str, sample: str, operation: str | None = None):
        sub = path.split("/")[2] if path.count("/") == 2 else ""
        article = {"list": " objects of kind ", "read": " the specified ", "replace": " the specified ",
                   "patch": " the specified "}.get(verb) or (_article(rt.kind) if verb in ("create", "delete") else "")
        of = f" {sub} of" if sub else ""
        if verb == "patch":
            description = f"partially update{of}{article}{rt.kind}"
        elif verb == "deletecollection":
            description = f"delete collection of{of + ' a' if sub else ''} {rt.kind}"
        else:
            description = f"{verb}{of}{article}{rt.kind}"
        params = [PRETTY] + ([NAMESPACE] if "{namespace}" in root + path else []) + \
                 ([Param("name", "path", "name of the " + rt.kind)] if "{name}" in path else [])
        params += {"get": _GET_OPTIONS, "list": _LIST_OPTIONS, "deletecollection": _LIST_OPTIONS,
                   "put": _CREATE_OPTIONS, "patch": _PATCH_OPTIONS, "post": _CREATE_OPTIONS,
                   "delete": _DELETE_OPTIONS_PARAMS}[action]
        responses = {200: ("OK", sample)}
        if action == "post":
            responses.update({202: ("Accepted", sample), 201: ("Created", sample)})
        elif action == "delete":
            responses[202] = ("Accepted", sample)
        elif action == "put":
            responses[201] = ("Created", sample)
        body = {"post": sample, "put": sample, "patch": _PATCH, "delete": _DELETE_OPTIONS}.get(action)
        out.append(Route(method, root + path, operation or f"{verb}{ns}{rt.kind}{sub.title()}", description, params,
                         _CRD_MEDIA, _CRD_PATCH_TYPES if method == "PATCH" else _CRD_MEDIA, responses, action, meta,
                         body, action != "delete"))

    if rt.namespaced:
        route("", "GET", "list", "list", lst, operation=f"list{rt.kind}ForAllNamespaces")
        root = f"/apis/{rt.group}/{rt.version}/namespaces/{{namespace}}/{rt.plural}"
    route("", "GET", "list", "list", lst)
    route("", "POST", "post", "create", obj)
    route("", "DELETE", "deletecollection", "deletecollection", _STATUS)
    route("/{name}", "GET", "get", "read", obj)
    route("/{name}", "PUT", "put", "replace", obj)
    route("/{name}", "DELETE", "delete", "delete", _STATUS)
    route("/{name}", "PATCH", "patch", "patch", obj)
    for sub, sample in (("status", obj), ("scale", _SCALE)):
        if sub in rt.subresources:
            route(f"/{{name}}/{sub}", "GET", "get", "read", sample)
            route(f"/{{name}}/{sub}", "PUT", "put", "replace", sample)
            route(f"/{{name}}/{sub}", "PATCH", "patch", "patch", sample)
    return out


_STRUCTURAL_KEYS = frozenset({
    "type", "title", "description", "default", "nullable", "externalDocs", "format", "maximum", "exclusiveMaximum",
    "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
    "multipleOf", "enum", "maxProperties", "minProperties", "required", "allOf", "anyOf", "oneOf", "not", "items",
    "properties", "additionalProperties", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type",
    "x-kubernetes-validations"})
# Fields the structural schema keeps only when set (Go zero values are omitted on the way out).
_OMIT_FALSY = frozenset({"nullable", "exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "required",
                         "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
                         "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-validations",
                         "type", "title", "description", "format", "pattern"})
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def _structural(node: dict) -> dict:
    """structuralschema.NewStructural(...).Unfold().ToKubeOpenAPI(): keep what a structural schema holds and
    expand x-kubernetes-int-or-string into its anyOf."""
    out = {}
    for key, value in node.items():
        if key not in _STRUCTURAL_KEYS or (key in _OMIT_FALSY and not value) or value is None:
            continue
        if key == "properties":
            out[key] = {k: _structural(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _structural(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_structural(v) for v in value]
        else:
            out[key] = value
    if out.get("x-kubernetes-int-or-string"):
        all_of = out.get("allOf") or [{}]
        if out.get("anyOf") != _INT_OR_STRING_ANY_OF and all_of[0].get("anyOf") != _INT_OR_STRING_ANY_OF:
            if "anyOf" not in out:
                out["anyOf"] = [dict(t) for t in _INT_OR_STRING_ANY_OF]
            else:
                out["allOf"] = [{"anyOf": [dict(t) for t in _INT_OR_STRING_ANY_OF]}] + out.get("allOf", [])
    return out


def _to_v2(node: dict) -> dict:
    """v2.ToStructuralOpenAPIV2 plus handler.PruneDefaults: what kubectl's v2 parser can cope with."""
    node = {k: v for k, v in node.items() if k not in ("allOf", "oneOf", "anyOf", "not", "default")}
    if node.pop("nullable", False):
        for key in ("type", "items", "properties"):
            node.pop(key, None)
    if node.get("x-kubernetes-preserve-unknown-fields"):
        node.pop("items", None)
        node.pop("properties", None)
    if "items" not in node and node.get("type") == "array":
        del node["type"]
    if node.get("x-kubernetes-preserve-unknown-fields") and node.get("type") == "object":
        del node["type"]
    props = node.get("properties") or {}
    nullable = {name for name, sub in props.items() if sub.get("nullable")}
    if nullable and "required" in node:
        node["required"] = [r for r in node["required"] if r not in nullable]
    additional = node.get("additionalProperties")
    if isinstance(additional, dict) and additional.get("nullable"):
        node.pop("required", None)
    if not node.get("required"):
        node.pop("required", None)
    if props:
        node["properties"] = {k: _to_v2(v) for k, v in props.items()}
    if isinstance(node.get("items"), dict):
        node["items"] = _to_v2(node["items"])
    if isinstance(additional, dict):
        node["additionalProperties"] = _to_v2(additional)
    return node


_OBJECT_META_DOC = ("Standard object's metadata. More info: "
                    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
_LIST_META_DOC = ("Standard list metadata. More info: "
                  "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")
_EMBEDDED_API_VERSION_DOC = ("apiVersion defines the versioned schema of this representation of an object. More "
                             "info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
                             "api-conventions.md#resources")
_EMBEDDED_KIND_DOC = ("kind is a string value representing the type of this object. In CamelCase. More info: "
                      "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")


@functools.lru_cache(maxsize=1)
def _type_meta() -> dict:
    """TypeMeta's apiVersion/kind properties (every top-level kind carries the same two)."""
    props = schema.openapi_definition("io.k8s.api.core.v1.Pod")["properties"]
    return {"apiVersion": props["apiVersion"], "kind": props["kind"]}


def _add_embedded_properties(node: dict, ref_base: str, v2: bool) -> None:
    """builder.go addEmbeddedProperties: embedded resources get apiVersion, kind and metadata."""
    for sub in (node.get("properties") or {}).values():
        _add_embedded_properties(sub, ref_base, v2)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _add_embedded_properties(node[key], ref_base, v2)
    if v2 and node.get("x-kubernetes-preserve-unknown-fields"):
        return
    if node.get("x-kubernetes-embedded-resource"):
        props = node.setdefault("properties", {})
        props["apiVersion"] = {**_type_meta()["apiVersion"], "description": _EMBEDDED_API_VERSION_DOC}
        props["kind"] = {**_type_meta()["kind"], "description": _EMBEDDED_KIND_DOC}
        props["metadata"] = {"$ref": ref_base + _OBJECT_META, "description": _OBJECT_META_DOC}
        required = node.setdefault("required", [])
        required += [r for r in ("kind", "apiVersion") if r not in required]


def crd_definitions(rt: ResourceType, v2: bool) -> dict[str, dict]:
    """The custom resource's kind and list-kind definitions (builder.go buildKubeNative, buildListSchema)."""
    ref_base = "#/definitions/" if v2 else schema.V3_REF_BASE
    source = ((rt.crd or {}).get("schema") or {}).get("openAPIV3Schema")
    gvk = [_gvk(rt.group, rt.version, rt.kind)]
    if source is None or (v2 and source.get("x-kubernetes-preserve-unknown-fields")):
        # kubectl would forbid every field outside apiVersion/kind/metadata otherwise.
        obj = {"type": "object", "x-kubernetes-group-version-kind": gvk}
    else:
        obj = _structural(source)
        if v2:
            obj = _to_v2(obj)
        props = obj.setdefault("properties", {})
        props["metadata"] = {"$ref": ref_base + _OBJECT_META, "description": _OBJECT_META_DOC}
        props.update(_type_meta())
        _add_embedded_properties(obj, ref_base, v2)
        obj["x-kubernetes-group-version-kind"] = gvk
    name = crd_definition_name(rt.group, rt.version, rt.kind)
    listing = {
        "description": f"{rt.list_kind} is a list of {rt.kind}",
        "properties": {
            **_type_meta(),
            "items": {"description": f"List of {rt.plural}. More info: "
                                     "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                                     "api-conventions.md",
                      "items": {"$ref": ref_base + name}, "type": "array"},
            "metadata": {"$ref": ref_base + _LIST_META, "description": _LIST_META_DOC},
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [_gvk(rt.group, rt.version, rt.list_kind)],
    }
    return {name: obj, crd_definition_name(rt.group, rt.version, rt.list_kind): listing}


# --- operation ids and tags -------------------------------------------------

_VERBS = ("get", "log", "read", "replace", "patch", "delete", "deletecollection", "watch", "connect", "proxy",
          "list", "create")


def _valid_operation_id(s: str, capitalize_first: bool) -> str:
    """openapi.ToValidOperationID: drop punctuation, capitalize what follows it."""
    out, capitalize = [], capitalize_first
    for i, ch in enumerate(s):
        if ch.isalpha() or ch == "_" or (i != 0 and ch.isdigit()):
            out.append(ch.upper() if capitalize else ch)
            capitalize = False
        else:
            capitalize = True
    return "".join(out)


def operation_id_and_tags(operation: str, path: str) -> tuple[str, list[str]]:
    """openapi.GetOperationIDAndTags: listNamespacedPod at /api/v1/... -> listCoreV1NamespacedPod, [core_v1]."""
    prefix = min((v for v in _VERBS if operation.startswith(v)), key=len)  # the trie stops at the first word
    rest = operation[len(prefix):]
    parts = path.strip("/").split("/")
    if parts[0] == "api":
        parts = ["apis", "core"] + parts[1:]
    tags = []
    if len(parts) >= 2 and parts[0] == "apis":
        trimmed = parts[1].removesuffix(".k8s.io")
        prefix += _valid_operation_id(trimmed, True)
        tag = _valid_operation_id(trimmed, False)
        if len(parts) > 2:
            prefix += _valid_operation_id(parts[2], True)
            tag += "_" + _valid_operation_id(parts[2], False)
        tags.append(tag)
    elif parts:
        tags.append(_valid_operation_id(parts[0], False))
    return prefix + _valid_operation_id(rest, True), tags


# --- rendering --------------------------------------------------------------

def _group_by_path(routes: list[Route]) -> dict[str, tuple[list[Param], list[Route]]]:
    """kube-openapi buildPaths: parameters every route of a path shares move to the path item."""
    by_path: dict[str, list[Route]] = {}
    for r in routes:
        by_path.setdefault(r.path, []).append(r)
    out = {}
    for path, rs in by_path.items():
        keys = [{(p.name, p.location) for p in r.params} for r in rs]
        common_keys = set.intersection(*keys)
        common = {}
        for r in rs:
            for p in r.params:
                if (p.name, p.location) in common_keys:
                    common.setdefault((p.name, p.location), p)
        out[path] = (_sorted(common.values()), rs)
    return out


def _sorted(params) -> list[Param]:
    return sorted(params, key=lambda p: (p.name, p.location))


def _own_params(route: Route, common: list[Param]) -> list[Param]:
    shared = {(p.name, p.location) for p in common}
    return _sorted(p for p in route.params if (p.name, p.location) not in shared)


def _v2_param(p: Param) -> dict:
    out = {"description": p.description, "in": p.location, "name": p.name}
    if p.location == "path":
        out["required"] = True
    out["type"] = p.type
    out["uniqueItems"] = True
    return out


def _v3_param(p: Param) -> dict:
    out = {"description": p.description, "in": p.location, "name": p.name}
    if p.location == "path":
        out["required"] = True
    out["schema"] = {"type": p.type, "uniqueItems": True}
    return out


def _schema_ref(target: str, ref_base: str) -> dict:
    return {"type": "string"} if target == _STRING else {"$ref": ref_base + target}


def _extensions(op: dict, route: Route) -> dict:
    if route.action:
        op["x-kubernetes-action"] = route.action
    if route.gvk:
        op["x-kubernetes-group-version-kind"] = route.gvk
    return op


def _v2_paths(routes: list[Route]) -> dict:
    paths = {}
    for path, (common, rs) in _group_by_path(routes).items():
        item = {}
        if common:
            item["parameters"] = [_v2_param(p) for p in common]
        for r in rs:
            op_id, tags = operation_id_and_tags(r.operation, r.path)
            params = [_v2_param(p) for p in _own_params(r, common)]
            if r.body:
                body = {"in": "body", "name": "body"}
                if r.body_required:
                    body["required"] = True
                body["schema"] = {"$ref": "#/definitions/" + r.body}
                params = sorted([body, *params], key=lambda p: (p["name"], p["in"]))
            op = {"consumes": list(r.consumes), "description": r.description, "operationId": op_id}
            if params:
                op["parameters"] = params
            op["produces"] = list(dict.fromkeys(r.produces))
            op["responses"] = {str(code): {"description": desc, "schema": _schema_ref(target, "#/definitions/")}
                               for code, (desc, target) in sorted(r.responses.items())}
            op["responses"]["401"] = {"description": "Unauthorized"}
            op["schemes"] = ["https"]
            op["tags"] = tags
            item[r.method.lower()] = _extensions(op, r)
        paths[path] = item
    return paths


def _v3_paths(routes: list[Route]) -> dict:
    base = schema.V3_REF_BASE
    paths = {}
    for path, (common, rs) in _group_by_path(routes).items():
        item = {}
        if common:
            item["parameters"] = [_v3_param(p) for p in common]
        for r in rs:
            op_id, tags = operation_id_and_tags(r.operation, r.path)
            op = {"description": r.description, "operationId": op_id}
            params = [_v3_param(p) for p in _own_params(r, common)]
            if params:
                op["parameters"] = params
            if r.body:
                op["requestBody"] = {"content": {m: {"schema": {"$ref": base + r.body}} for m in r.consumes}}
                if r.body_required:
                    op["requestBody"]["required"] = True
            op["responses"] = {
                str(code): {"content": {m: {"schema": _schema_ref(target, base)} for m in r.produces},
                            "description": desc}
                for code, (desc, target) in sorted(r.responses.items())}
            op["responses"]["401"] = {"description": "Unauthorized"}
            op["tags"] = tags
            item[r.method.lower()] = _extensions(op, r)
        paths[path] = item
    return paths


@functools.lru_cache(maxsize=None)
def _builtin_definition(name: str, v3: bool) -> dict:
    return schema.openapi_definition(name, v3=v3)


@functools.lru_cache(maxsize=None)
def _builtin_refs(name: str, v3: bool) -> tuple[str, ...]:
    return tuple(_refs_in(_builtin_definition(name, v3)))


def _refs_in(node) -> set[str]:
    found: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            ref = n.get("$ref")
            if isinstance(ref, str):
                found.add(ref.rsplit("/", 1)[-1])
            stack.extend(n.values())
        elif isinstance(n, list):
            stack.extend(n)
    return found


def _definitions_for(routes: list[Route], extra: dict[str, dict], v3: bool) -> dict:
    """Every definition the routes reference, directly or through other definitions (kube-openapi only
    publishes what the routes reach)."""
    pending = [t for r in routes for t in (r.body, *(target for _, target in r.responses.values()))
               if t and t != _STRING]
    out: dict[str, dict] = {}
    while pending:
        name = pending.pop()
        if name in out:
            continue
        if name in extra:
            out[name] = extra[name]
            pending.extend(_refs_in(extra[name]))
        else:
            out[name] = _builtin_definition(name, v3)
            pending.extend(_builtin_refs(name, v3))
    return dict(sorted(out.items()))


# --- documents --------------------------------------------------------------

@dataclass(frozen=True)
class _Document:
    doc: dict
    body: bytes  # orjson.dumps(doc): what the HTTP layer sends and what the hash covers
    hash: str


def _document(doc: dict) -> _Document:
    body = orjson.dumps(doc)
    return _Document(doc, body, hashlib.sha512(body).hexdigest().upper())


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _group_versions(registry: Registry) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for rt in registry.types():
        seen.setdefault((rt.group, rt.version))
    return list(seen)


@functools.lru_cache(maxsize=64)
def _builtin_gv_document(group: str, version: str, types: tuple[ResourceType, ...]) -> _Document:
    routes = [_discovery_route(group, version)] + [r for rt in types for r in _builtin_routes(rt)]
    return _document({
        "components": {"schemas": _definitions_for(routes, {}, True), "securitySchemes": _BEARER},
        "info": _INFO,
        "openapi": "3.0.0",
        "paths": _v3_paths(routes),
    })


def _crd_gv_document(types: list[ResourceType]) -> _Document:
    """builder.BuildOpenAPIV3 for each custom resource of the group-version, merged (MergeSpecsV3)."""
    routes, extra = [], {}
    for rt in types:
        routes += _crd_routes(rt)
        extra.update(crd_definitions(rt, v2=False))
    return _document({
        "components": {"schemas": _definitions_for(routes, extra, True)},
        "info": _CRD_INFO,
        "openapi": "3.0.0",
        "paths": _v3_paths(routes),
    })


def _gv_document(registry: Registry, group: str, version: str) -> _Document | None:
    types = registry.in_group_version(group, version)
    if not types:
        return None
    if all(rt.crd is None for rt in types):
        return _builtin_gv_document(group, version, tuple(types))
    return discovery.cached(registry, ("openapi_v3", group, version), lambda: _crd_gv_document(types))


def openapi_v3_index(registry: Registry) -> dict:
    """``/openapi/v3``: every group-version's document URL, with the hash of its current content.

    The hash is the uppercase hex sha512 of ``orjson.dumps(document)`` (handler3.computeETag over the bytes
    served). The HTTP layer serves each document at ``/openapi/v3/<path>``; when the request's ``hash`` matches it adds
    ``Cache-Control: public, immutable`` (and an ``Expires`` a year ahead), when it does not it redirects (301)
    to the current URL; ``ETag`` is the quoted hash (handler3.HandleGroupVersion).
    """
    return discovery.cached(registry, ("openapi_v3_index",), lambda: {"paths": {
        _gv_path(g, v): {"serverRelativeURL": f"/openapi/v3/{_gv_path(g, v)}?hash={_gv_document(registry, g, v).hash}"}
        for g, v in sorted(_group_versions(registry))}})


def openapi_v3_document(registry: Registry, path: str) -> dict | None:
    """``/openapi/v3/api/v1``, ``/openapi/v3/apis/<group>/<version>``; None for any other path."""
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) == 2:
        group, version = "", parts[1]
    elif parts[0] == "apis" and len(parts) == 3:
        group, version = parts[1], parts[2]
    else:
        return None
    document = _gv_document(registry, group, version)
    return document.doc if document else None


@functools.lru_cache(maxsize=8)
def _builtin_v2_part(types: tuple[ResourceType, ...]) -> tuple[dict, dict]:
    gvs = dict.fromkeys((rt.group, rt.version) for rt in types)
    routes = [_discovery_route(g, v) for g, v in gvs] + [r for rt in types for r in _builtin_routes(rt)]
    return _v2_paths(routes), _definitions_for(routes, {}, False)


def openapi_v2(registry: Registry) -> dict:
    """``/openapi/v2``: one swagger 2.0 document for every served resource, custom resources merged in."""
    return discovery.cached(registry, ("openapi_v2",), lambda: _openapi_v2(registry))


def _openapi_v2(registry: Registry) -> dict:
    builtin = tuple(rt for rt in registry.types() if rt.crd is None)
    paths, definitions = _builtin_v2_part(builtin)
    crd_routes, extra = [], {}
    for rt in registry.types():
        if rt.crd is not None:
            crd_routes += _crd_routes(rt)
            extra.update(crd_definitions(rt, v2=True))
    if crd_routes:
        paths = {**paths, **_v2_paths(crd_routes)}
        definitions = dict(sorted({**definitions, **_definitions_for(crd_routes, extra, False)}.items()))
    return {
        "definitions": definitions,
        "info": _INFO,
        "paths": dict(sorted(paths.items())),
        "security": [{"BearerToken": []}],
        "securityDefinitions": _BEARER,
        "swagger": "2.0",
    }
