"""What the schema says about each place in an object, for patching and server-side apply.

Strategic merge patch and server-side apply both need to know, at every field,
whether the value there is a struct, a map, a list (and how its items are
identified) or a scalar. Upstream derives these facts twice from the same Go
struct tags: strategicpatch reads ``patchStrategy``/``patchMergeKey`` tags
(k8s.io/apimachinery/pkg/util/strategicpatch/meta.go) and structured-merge-diff
reads the OpenAPI models converted by k8s.io/kube-openapi/pkg/schemaconv
(openapi.go, smd.go). The tags reach us as the ``x-kubernetes-*`` extensions of
the v1.37 definitions in :mod:`gpulab.cluster.schema`, and custom resources
carry them in their CRD's ``openAPIV3Schema``, so one walker over either answers
both; no Python library models these Kubernetes extensions.

A :class:`Node` mirrors a structured-merge-diff ``schema.Atom``: kind ``map``
(struct fields and/or map elements), ``list``, ``scalar``, ``untyped`` (a leaf
whatever its value, like IntOrString and Quantity) or ``deduced`` (free-form
JSON: the shape comes from the value).
"""
from __future__ import annotations

import functools

from .. import schema as k8s_schema

ATOMIC = "atomic"
GRANULAR = "granular"
ASSOCIATIVE = "associative"

_UNTYPED_DEFINITIONS = {
    # schemaconv/openapi.go: quantityResource and rawExtensionResource are untyped scalars;
    # IntOrString has format int-or-string, which convertPrimitive also makes untyped.
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
}
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

# Defaults of list-map key fields (`+default="TCP"` in the API types) that
# structured-merge-diff uses when an applied item omits the key
# (typed/helpers.go keyedAssociativeListItemToPathElement). kubernetes-validate
# drops OpenAPI defaults, so they are listed here.
_KEY_DEFAULTS = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.EndpointPort", "protocol"): "TCP",
    ("io.k8s.api.discovery.v1.EndpointPort", "protocol"): "TCP",
}

# Struct fields that are Go values, not pointers, so the zero object of their
# type always carries them as ``{}`` (runtime.DefaultUnstructuredConverter never
# omits a struct). Only managedFields bookkeeping needs this: Compare() treats
# a field present in the old object as "not added", which decides whether
# ``.`` appears in fieldsV1. Read from k8s.io/api core/v1, apps/v1, batch/v1,
# policy/v1, coordination/v1, events/v1 and apiextensions/v1 types.go.
_VALUE_STRUCT_FIELDS = {
    "io.k8s.api.core.v1.PodTemplateSpec": ("metadata", "spec"),
    "io.k8s.api.core.v1.Container": ("resources",),
    "io.k8s.api.core.v1.EphemeralContainer": ("resources",),
    "io.k8s.api.core.v1.ContainerStatus": ("state", "lastState"),
    "io.k8s.api.core.v1.NodeStatus": ("daemonEndpoints", "nodeInfo"),
    "io.k8s.api.core.v1.NodeDaemonEndpoints": ("kubeletEndpoint",),
    "io.k8s.api.core.v1.ServiceStatus": ("loadBalancer",),
    "io.k8s.api.core.v1.Event": ("involvedObject", "source"),
    "io.k8s.api.events.v1.Event": ("regarding", "deprecatedSource"),
    "io.k8s.api.apps.v1.DeploymentSpec": ("template", "strategy"),
    "io.k8s.api.apps.v1.ReplicaSetSpec": ("template",),
    "io.k8s.api.apps.v1.DaemonSetSpec": ("template", "updateStrategy"),
    "io.k8s.api.apps.v1.StatefulSetSpec": ("template", "updateStrategy"),
    "io.k8s.api.batch.v1.JobSpec": ("template",),
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec": ("names",),
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus": ("acceptedNames",),
}
# Top-level kinds embed ObjectMeta and their spec/status by value.
_TOP_LEVEL_VALUE_FIELDS = ("metadata", "spec", "status")


class Node:
    """One schema position (an SMD atom); its fields and element are resolved on first use."""

    __slots__ = ("kind", "relationship", "keys", "key_defaults", "name", "_fields", "_element",
                 "_source", "_raw", "_preserve", "value_fields", "nullable_required")

    def __init__(self, kind: str, *, relationship: str = "", keys: tuple[str, ...] | None = None,
                 name: str = "", source=None, raw: dict | None = None, preserve: bool = False):
        self.kind = kind
        self.relationship = relationship
        self.keys = keys
        self.key_defaults: dict[str, object] = {}
        self.name = name
        self._source = source
        self._raw = raw or {}
        self._preserve = preserve
        self._fields: dict[str, tuple[Node, tuple[str, ...], str]] | None = None
        self._element: Node | None | bool = False
        self.value_fields: tuple[str, ...] = ()
        self.nullable_required: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Node({self.kind}, {self.name or ''}, {self.relationship})"

    # --- maps / structs ---------------------------------------------------
    def fields(self) -> dict[str, tuple["Node", tuple[str, ...], str]]:
        """Named struct fields: name -> (node, patch strategies, patch merge key)."""
        if self._fields is None:
            self._fields = self._source.fields(self) if self._source else {}
        return self._fields

    def field(self, name: str) -> "Node | None":
        entry = self.fields().get(name)
        return entry[0] if entry else None

    def is_named_field(self, name: str) -> bool:
        return self.kind in ("map", "deduced") and name in self.fields()

    def element(self) -> "Node | None":
        """Map element type (None when undeclared keys are not allowed) or list item type."""
        if self._element is False:
            self._element = self._source.element(self) if self._source else DEDUCED
        return self._element

    def child(self, name: str) -> "Node | None":
        """The node for key ``name`` of a map: its field, else the element type."""
        return self.field(name) or self.element()

    # --- strategic merge patch metadata ----------------------------------
    def patch_meta(self, name: str) -> tuple["Node", tuple[str, ...], str]:
        """strategicpatch LookupPatchMetadataForStruct: (sub-schema, strategies, merge key).

        Map elements and undeclared fields have no strategy; upstream errors on the
        latter, but a typed original never holds them, so this stays lenient.
        """
        entry = self.fields().get(name)
        if entry:
            return entry
        return (self.element() or DEDUCED), (), ""


DEDUCED = Node("deduced", relationship=GRANULAR)
UNTYPED = Node("untyped")
SCALAR = Node("scalar")


def resolve(node: Node | None, value) -> Node:
    """structured-merge-diff deduceAtom: a deduced node takes the shape of its value."""
    if node is None:
        return DEDUCED_MAP if isinstance(value, dict) else _DEDUCED_LIST if isinstance(value, list) else SCALAR
    if node.kind != "deduced":
        return node
    if isinstance(value, dict):
        return node if node.fields() else DEDUCED_MAP
    if isinstance(value, list):
        return _DEDUCED_LIST
    return SCALAR


class _DeducedSource:
    def fields(self, node):
        return {}

    def element(self, node):
        return DEDUCED


DEDUCED_MAP = Node("map", relationship=GRANULAR, source=_DeducedSource(), name="__untyped_deduced_")
_DEDUCED_LIST = Node("list", relationship=ATOMIC, source=_DeducedSource(), name="__untyped_deduced_")


def _types(raw: dict) -> str:
    t = raw.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "")
    return t or ""


def _list_relationship(raw: dict) -> tuple[str, tuple[str, ...] | None]:
    """schemaconv getListElementRelationship."""
    list_type = raw.get("x-kubernetes-list-type")
    if list_type is not None:
        if list_type == "set":
            return ASSOCIATIVE, None
        if list_type == "map":
            return ASSOCIATIVE, tuple(raw.get("x-kubernetes-list-map-keys") or ())
        return ATOMIC, None
    strategy = raw.get("x-kubernetes-patch-strategy")
    if strategy in ("merge", "merge,retainKeys"):
        key = raw.get("x-kubernetes-patch-merge-key")
        return ASSOCIATIVE, (key,) if key else None
    return ATOMIC, None


def _map_relationship(raw: dict) -> str:
    return ATOMIC if raw.get("x-kubernetes-map-type") == "atomic" else GRANULAR


def _strategies(raw: dict) -> tuple[str, ...]:
    strategy = raw.get("x-kubernetes-patch-strategy")
    return tuple(strategy.split(",")) if strategy else ()


class _BuiltinSource:
    """Nodes for the upstream definitions (``$ref`` into :func:`schema.definitions`)."""

    def node_for(self, raw: dict) -> Node:
        ref = raw.get("$ref")
        if ref:
            name = k8s_schema.ref_name(ref)
            override = raw.get("x-kubernetes-map-type")
            node = self.definition(name)
            if override and node.kind == "map":
                node = self._with_relationship(name, _map_relationship(raw))
            return node
        return self._inline(raw)

    @functools.lru_cache(maxsize=None)
    def definition(self, name: str) -> Node:
        if name in _UNTYPED_DEFINITIONS:
            return UNTYPED
        raw = k8s_schema.definitions().get(name)
        if raw is None:
            return DEDUCED
        node = self._inline(raw, name)
        if node.kind == "map":
            node.value_fields = _VALUE_STRUCT_FIELDS.get(name, ())
            if raw.get("x-kubernetes-group-version-kind"):
                node.value_fields += tuple(f for f in _TOP_LEVEL_VALUE_FIELDS if f in (raw.get("properties") or {}))
            node.nullable_required = tuple(
                f for f in raw.get("required") or () if _types((raw.get("properties") or {}).get(f, {})) in (
                    "array", "object") or "$ref" in (raw.get("properties") or {}).get(f, {}))
        return node

    @functools.lru_cache(maxsize=None)
    def _with_relationship(self, name: str, relationship: str) -> Node:
        base = self.definition(name)
        node = Node("map", relationship=relationship, name=name, source=self, raw=base._raw)
        node.value_fields, node.nullable_required = base.value_fields, base.nullable_required
        return node

    def _inline(self, raw: dict, name: str = "") -> Node:
        if "oneOf" in raw or "anyOf" in raw:
            return UNTYPED
        kind = _types(raw)
        if kind == "object":
            return Node("map", relationship=_map_relationship(raw), name=name, source=self, raw=raw)
        if kind == "array":
            relationship, keys = _list_relationship(raw)
            node = Node("list", relationship=relationship, keys=keys, name=name, source=self, raw=raw)
            items = raw.get("items") or {}
            item_name = k8s_schema.ref_name(items["$ref"]) if "$ref" in items else ""
            node.key_defaults = {k: _KEY_DEFAULTS[(item_name, k)] for k in keys or ()
                                 if (item_name, k) in _KEY_DEFAULTS}
            return node
        if kind in ("string", "integer", "number", "boolean"):
            return SCALAR
        return DEDUCED

    def fields(self, node: Node) -> dict:
        return {name: (self.node_for(prop), _strategies(prop), prop.get("x-kubernetes-patch-merge-key", ""))
                for name, prop in (node._raw.get("properties") or {}).items()}

    def element(self, node: Node):
        raw = node._raw
        if node.kind == "list":
            items = raw.get("items")
            return self.node_for(items) if isinstance(items, dict) else DEDUCED
        extra = raw.get("additionalProperties")
        if isinstance(extra, dict):
            return self.node_for(extra)
        if extra is True or not raw.get("properties"):
            return DEDUCED
        return None


BUILTIN = _BuiltinSource()


class _CrdSource:
    """Nodes for a CRD version's structural schema (schemaconv parseObject/parseList).

    The root gets ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta) the way
    the CRD OpenAPI builder adds them (apiextensions-apiserver
    pkg/controller/openapi/builder/builder.go buildKubeNative), and so does every
    ``x-kubernetes-embedded-resource`` object (addEmbeddedProperties).
    """

    def node_for(self, raw: dict, preserve: bool, root: bool = False) -> Node:
        preserve = preserve or raw.get("x-kubernetes-preserve-unknown-fields") is True
        kind = _types(raw)
        if kind == "object" or root:
            node = Node("map", relationship=_map_relationship(raw), source=self, raw=raw, preserve=preserve)
            node.name = "__root__" if root else ""
            return node
        if kind == "array":
            relationship, keys = _list_relationship(raw)
            return Node("list", relationship=relationship, keys=keys, source=self, raw=raw, preserve=preserve)
        if kind in ("string", "integer", "number", "boolean"):
            return SCALAR
        # no type: x-kubernetes-int-or-string or preserve-unknown-fields -> untyped scalar/list/map
        return Node("deduced", relationship=_map_relationship(raw), source=self, raw=raw, preserve=preserve)

    def fields(self, node: Node) -> dict:
        raw = node._raw
        out = {name: (self.node_for(prop, node._preserve), (), "")
               for name, prop in (raw.get("properties") or {}).items()}
        if node.name == "__root__" or raw.get("x-kubernetes-embedded-resource"):
            out["apiVersion"] = (SCALAR, (), "")
            out["kind"] = (SCALAR, (), "")
            out["metadata"] = (BUILTIN.definition(OBJECT_META), (), "")
        return out

    def element(self, node: Node):
        raw = node._raw
        if node.kind == "list":
            items = raw.get("items")
            return self.node_for(items, node._preserve) if isinstance(items, dict) else DEDUCED
        extra = raw.get("additionalProperties")
        if isinstance(extra, dict):
            return self.node_for(extra, node._preserve)
        if extra is True or node._preserve or not raw.get("properties"):
            return DEDUCED
        return None


def root_node(rt) -> Node:
    """The node for a whole object of resource type ``rt``."""
    if rt.crd is not None:
        schema = ((rt.crd.get("schema") or {}).get("openAPIV3Schema")) or {"type": "object"}
        return _CrdSource().node_for(schema, False, root=True)
    name = k8s_schema.definition_name(rt.group, rt.version, rt.kind)
    return BUILTIN.definition(name) if name else DEDUCED
