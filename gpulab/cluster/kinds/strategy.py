"""What a kind's registry strategy decides, and the generic steps around it (rest.BeforeCreate, rest.BeforeUpdate).

kube-apiserver serves every resource with one generic store
(staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go) and
gives it a strategy per kind (pkg/registry/<group>/<kind>/strategy.go): what a
client may not set on create (PrepareForCreate), what an update keeps from
the stored object (PrepareForUpdate), validation, warnings, which fields a
status write resets (GetResetFields), whether DELETE returns the object,
graceful deletion, the table convertor. :class:`Strategy` holds the same
decisions for one kind; :mod:`gpulab.cluster.api` is the generic store and
asks the kind's strategy at each step, in upstream's order:

create: decode (:meth:`Strategy.decode`) -> defaults -> managedFields ->
mutating admission -> uid, creationTimestamp -> PrepareForCreate -> Validate ->
ObjectMeta validation -> WarningsOnCreate -> store.

update: decode -> defaults -> managedFields -> mutating admission ->
PrepareForUpdate (of the main resource or of its subresource) -> ObjectMeta
validation -> ValidateUpdate -> store.

Each per-kind module of this package subclasses :class:`Strategy`; the
defaulting, validation and printing it names live in ``defaults/``,
``validation/`` and ``printers/``, as upstream keeps them in pkg/apis/*/v1,
pkg/apis/*/validation and pkg/printers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .. import schema
from ..errors import FieldError
from ..objects import clone
from ..printers import DEFAULT_PRINTER, Printer
from ..printers.cells import selector_string
from ..registry import ResourceType
from ..selectors import FieldGetter
from ..validation import structural_decode
from ..validation.meta import validate_generic_create, validate_generic_update, validate_object_meta_update

Path = tuple[str, ...]


@dataclass(frozen=True)
class Subresource:
    """What discovery reports for ``<resource>/<name>`` and what its REST storage serves."""

    verbs: tuple[str, ...] = ("get", "patch", "update")
    # (group, version, kind) when the storage's kind differs from the parent's
    # (a ``rest.GroupVersionKindProvider`` or a different ``New()`` type).
    kind: tuple[str, str, str] | None = None
    # The storage answers GET with plain text (pods/log), not an object.
    text: bool = False
    # A connect storage (exec, attach, portforward, proxy): it takes the connection over (server/connect.py).
    connect: bool = False


STATUS = Subresource()
SCALE = Subresource(kind=("autoscaling", "v1", "Scale"))
# The proxy storages of pods, services and nodes (pkg/registry/core/*/rest/proxy.go): every verb but list/watch.
PROXY_VERBS = ("create", "delete", "get", "patch", "update")


class Context(Protocol):
    """What a strategy may read besides the object: stored objects (admission plugins and allocators reach other
    registries upstream) and the API server's clock."""

    def lookup(self, key: str, name: str, namespace: str = "") -> dict | None: ...

    def list(self, key: str) -> list[dict]: ...

    def clock(self) -> float: ...


class Strategy:
    """The rules of one built-in kind. Subclasses set the class attributes and override what their kind does."""

    #: The resource as discovery and routing know it (its storage version).
    resource: ResourceType
    #: The same objects served under another group-version (events.k8s.io/v1 events are core/v1 events).
    aliases: tuple[ResourceType, ...] = ()
    #: Subresources other than ``status``, by name (``status`` is always :data:`STATUS`).
    subresources: dict[str, Subresource] = {}
    #: metadata.generation: 1 on create, bumped when anything but metadata and status changes (and on deletion).
    has_generation = False
    #: DELETE answers with the object instead of a ``Success`` Status (the store's ReturnDeletedObject).
    returns_deleted_object = False
    #: AllowCreateOnUpdate: a PUT of a missing object creates it.
    allow_create_on_update = False
    #: The kind implements RESTGracefulDeleteStrategy (CheckGracefulDeletion).
    graceful_deletion = False
    #: The table convertor (pkg/printers/internalversion for built-in kinds).
    printer: Printer = DEFAULT_PRINTER
    #: Fields a field selector may name beyond metadata.name and metadata.namespace (GetAttrs); a getter renders a
    #: field whose string form is not its JSON value (``spec.unschedulable`` is ``false`` when absent).
    selectable_fields: dict[str, FieldGetter | None] = {}
    #: GetResetFields of the status strategy: what a status write may not change.
    status_reset_fields: tuple[Path, ...] = (("spec",),)
    #: Metadata a status write takes from the request; the rest comes from the stored object.
    status_request_metadata: tuple[str, ...] = ("labels", "annotations")
    #: The warning every request to a deprecated resource gets (the installer's deprecation warning).
    deprecation_warning: str | None = None
    #: Backed by storage, so discovery reports a storageVersionHash (not bindings or componentstatuses).
    stored = True
    #: The feature gate (gpulab.cluster.features) without which the kind is not served (a beta API off by default).
    feature_gate: str | None = None

    @property
    def has_status(self) -> bool:
        return "status" in self.resource.subresources

    def subresource(self, name: str) -> Subresource:
        """The facts of one subresource; KeyError for one the kind does not serve."""
        if name == "status" and self.has_status:
            return STATUS
        return self.subresources[name]

    # --- storages that are not the generic store --------------------------------------------------------------
    def computed_objects(self, ctx: Context) -> list[dict] | None:
        """A storage that computes its objects when read (componentstatuses) instead of storing them."""
        return None

    def rest_create(self, api, obj: dict, namespace: str) -> dict | None:
        """A storage whose Create does something else than store the object (bindings): the response, or None."""
        return None

    def scale_selector(self, obj: dict) -> str:
        """The Scale subresource's ``status.selector``: the label selector as a string."""
        selector = (obj.get("spec") or {}).get("selector")
        return selector_string(selector) if isinstance(selector, dict) else ""

    # --- versions ------------------------------------------------------------------------------------------------
    def to_storage_version(self, obj: dict, served: ResourceType, storage: ResourceType) -> dict:
        """An object sent to another served version of the kind, converted to the storage version."""
        return {**obj, "apiVersion": storage.api_version}

    def from_storage_version(self, obj: dict, served: ResourceType) -> dict:
        """A stored object converted to another served version of the kind."""
        return {**obj, "apiVersion": served.api_version}

    # --- decoding and defaulting -------------------------------------------------------------------------------
    def decode(self, obj: dict, served: ResourceType) -> None:
        """Decoding the request body into the Go type of ``served`` (the version it was sent to): fields the type
        does not have are dropped, as the typed decoder does whatever ``fieldValidation`` says (Strict refused
        them before; Warn warned)."""
        definition = schema.definition_name(served.group, served.version, served.kind)
        if definition:
            structural_decode.drop_unknown(definition, obj)

    def default(self, obj: dict) -> None:
        """The scheme's defaulters (pkg/apis/<group>/v1/defaults.go), applied to a fresh copy."""

    # --- admission -----------------------------------------------------------------------------------------------
    def admit_create(self, obj: dict, ctx: Context) -> None:
        """The mutating admission plugins that handle this kind on create; raise ``ApiError`` to reject."""

    def admit_update(self, obj: dict, old: dict, ctx: Context) -> None:
        """The mutating admission plugins that handle this kind on update."""

    # --- create ----------------------------------------------------------------------------------------------
    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        """PrepareForCreate: clear what a client may not set. Runs after the uid is assigned."""
        if self.has_generation:
            obj["metadata"]["generation"] = 1

    def validate(self, obj: dict) -> list[FieldError]:
        """Validate: the kind's own checks of a new object."""
        return []

    def warnings_on_create(self, obj: dict) -> list[str]:
        """WarningsOnCreate: advice sent back in ``Warning`` headers."""
        return []

    # --- update ----------------------------------------------------------------------------------------------
    def prepare_for_update(self, new: dict, old: dict, subresource: str | None = None) -> dict:
        """PrepareForUpdate of the main resource's strategy or of ``subresource``'s; returns the object to store."""
        if subresource == "status":
            return self._prepare_for_status_update(new, old)
        if self.has_status:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        if self.has_generation and _spec_changed(old, new):
            new["metadata"]["generation"] = int(old["metadata"].get("generation", 1)) + 1
        return new

    def _prepare_for_status_update(self, new: dict, old: dict) -> dict:
        """The status strategy: everything but the status (and :attr:`status_request_metadata`) from ``old``."""
        out = {**clone(old), "status": new.get("status")}
        if out["status"] is None:
            out.pop("status")
        requested = new.get("metadata") or {}
        for field in self.status_request_metadata:
            if requested.get(field):
                out["metadata"][field] = requested[field]
            else:
                out["metadata"].pop(field, None)
        return out

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list[FieldError]:
        """ValidateUpdate of the strategy serving ``subresource`` (ValidateObjectMetaUpdate when the kind has none)."""
        return validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})

    def reset_fields(self, subresource: str | None) -> tuple[Path, ...] | None:
        """GetResetFields: the fields a write through ``subresource`` cannot set, so no manager owns them there."""
        if not self.has_status:
            return None
        if subresource is None:
            return (("status",),)
        if subresource == "status":
            return self.status_reset_fields
        return None

    # --- delete ----------------------------------------------------------------------------------------------
    def grace_period(self, obj: dict, requested: int | None) -> int:
        """CheckGracefulDeletion: seconds the object stays terminating (only kinds with graceful deletion)."""
        return 0

    def deletes_at_once(self, obj: dict, finalizers: list[str], grace: int) -> bool:
        """Whether DELETE removes the object now rather than marking it terminating."""
        return not finalizers and grace == 0

    def prepare_for_delete(self, obj: dict) -> None:
        """What marking the object terminating changes besides deletionTimestamp (a namespace's phase)."""

    def deletion_complete(self, obj: dict) -> bool:
        """With its finalizers gone, whether the terminating object is removed now."""
        return True

    # --- storage side effects ----------------------------------------------------------------------------------
    def before_store(self, obj: dict, registry) -> None:
        """What a write about to be stored changes beyond the object (a CRD changes what the registry serves)."""

    def after_remove(self, obj: dict, registry, store) -> None:
        """What removing the object changes beyond it."""


def _spec_changed(old: dict, new: dict) -> bool:
    skip = ("metadata", "status", "apiVersion", "kind")
    return {k: v for k, v in old.items() if k not in skip} != {k: v for k, v in new.items() if k not in skip}


# --- the generic steps (k8s.io/apiserver/pkg/registry/rest/create.go, update.go) ------------------------------------

def validate_create(strategy: Strategy, obj: dict) -> list[FieldError]:
    """BeforeCreate's checks: the kind's Validate, then, only when it passed, ObjectMeta validation."""
    errs = strategy.validate(obj)
    if errs:
        return errs
    return validate_generic_create(obj.get("metadata") or {}, strategy.resource.namespaced)


def validate_update(strategy: Strategy, new: dict, old: dict, subresource: str | None = None) -> list[FieldError]:
    """BeforeUpdate's checks: validateCommonFields, then the kind's ValidateUpdate."""
    common = validate_generic_update(new.get("metadata") or {}, old.get("metadata") or {},
                                     strategy.resource.namespaced)
    return common + strategy.validate_update(new, old, subresource)
