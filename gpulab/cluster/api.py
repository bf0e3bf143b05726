"""The in-process Kubernetes API: every verb with kube-apiserver's semantics.

The HTTP server translates requests into calls on :class:`Api`; the scheduler,
node agent and controllers call it directly, as kube-controller-manager uses a
loopback client. :class:`Api` is the generic registry store of
staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go (create,
update, graceful deletion, finalizers, preconditions, resourceVersion) with
the request handlers' steps around it (decoding, field validation,
managedFields); whatever differs between kinds it asks the kind's strategy
(:mod:`gpulab.cluster.kinds`, the pkg/registry/<group>/<kind>/strategy.go of
each), and the pure behaviour (defaulting, validation, patching, printing)
lives in sibling modules.
"""
from __future__ import annotations

import time
import uuid

from typing import Callable

from . import admission, conversion, jsonio, kinds
from .errors import (ApiError, already_exists, bad_request, conflict, forbidden_error, internal, invalid_object,
                     method_not_allowed, not_found)
from .kinds import strategy_for
from .kinds.strategy import Strategy, validate_create, validate_update
from .objects import clone, random_suffix, rfc3339
from .patch import (apply_json_patch, apply_merge_patch, apply_strategic_merge_patch, check_strict_ops,
                    decode_like_go, server_side_apply, update_managed_fields)
from .registry import Registry, ResourceType
from .selectors import (OBJECT_META_FIELDS, FieldRequirement, exact_field, matches_fields, matches_labels,
                        parse_field_selector, parse_label_selector)
from .store import Change, Store
from .validation import go_decode, strict

_CRDS = "customresourcedefinitions.apiextensions.k8s.io"
# NamespaceLifecycle admission refuses to delete these (k8s.io/apiserver admission/plugin/namespace/lifecycle)
_IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
_MAX_OBJECT_BYTES = 1_572_864 + 128 * 1024  # etcd's request size limit (1.5 MiB) plus envelope


class Api:
    """The cluster's API, in process. See docs/architecture.md for the contract."""

    def __init__(self, store: Store, registry: Registry | None = None, *, clock: Callable[[], float] = time.time):
        self.store = store
        self.registry = registry or kinds.builtin_registry()
        self.clock = clock
        self.log_provider: Callable[[dict, str, dict], str] | None = None
        # The node agents' exec, attach, port-forward and HTTP side (kubelet/streaming.py), once they run.
        self.node_streams = None
        # The ServiceAccount token signer (auth/tokens.py), set by the runtime: the node agent's projected tokens.
        self.token_issuer = None
        self._subscribers: dict[str, list[Callable[[str, dict, dict | None], None]]] = {}
        self._event_index: dict[tuple, tuple[str, str]] = {}
        store.listen(self._dispatch)
        store.add_index("pods", "spec.nodeName", lambda p: (p.get("spec") or {}).get("nodeName") or None)
        store.add_index("events", "involvedObject.uid", lambda e: (e.get("involvedObject") or {}).get("uid"))
        self._context = _StrategyContext(self)
        crds = self.strategy(self.registry.by_key(_CRDS))
        for crd in store.list(_CRDS):  # the registry serves what the stored definitions define
            crds.before_store(crd, self.registry)

    # --- resource lookup --------------------------------------------------
    def rt(self, key: str | ResourceType) -> ResourceType:
        if isinstance(key, ResourceType):
            return key
        try:
            return self.registry.by_key(key)
        except KeyError:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({key})") from None

    def _storage_rt(self, rt: ResourceType) -> ResourceType:
        return self.registry.by_key(rt.storage_key) if rt.storage_alias else rt

    @staticmethod
    def strategy(rt: ResourceType) -> Strategy:
        """The strategy of ``rt``'s kind (see :mod:`gpulab.cluster.kinds`)."""
        return strategy_for(rt)

    # --- reads ------------------------------------------------------------
    def get(self, key, name: str, namespace: str | None = None) -> dict:
        rt = self.rt(key)
        obj = self._computed_one(rt, name)
        if obj is None:
            obj = self.store.get(rt.storage_key, namespace or "" if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return conversion.from_storage(rt, obj)

    def try_get(self, key, name: str, namespace: str | None = None) -> dict | None:
        rt = self.rt(key)
        obj = self._computed_one(rt, name)
        if obj is None:
            obj = self.store.get(rt.storage_key, (namespace or "") if rt.namespaced else "", name)
        return None if obj is None else conversion.from_storage(rt, obj)

    def list(self, key, namespace: str | None = None, label_selector: str | list | None = None,
             field_selector: str | list | None = None) -> list[dict]:
        """Objects matching the selectors, in etcd key order. Selectors may be strings or parsed requirements."""
        rt = self.rt(key)
        labels = parse_label_selector(label_selector) if isinstance(label_selector, str) or label_selector is None \
            else label_selector
        fields = self.field_selector(rt, field_selector) \
            if isinstance(field_selector, str) or field_selector is None else field_selector
        ns = namespace if rt.namespaced else None
        node = exact_field(fields, "spec.nodeName") if rt.storage_key == "pods" else None
        uid = exact_field(fields, "involvedObject.uid") if rt.storage_key == "events" else None
        name = exact_field(fields, "metadata.name")
        computed = self.strategy(rt).computed_objects(self._context)
        if computed is not None:
            candidates = computed
        elif name is not None:
            if ns:
                one = self.store.get(rt.storage_key, ns, name)
                candidates = [one] if one is not None else []
            else:
                candidates = [o for o in self.store.list(rt.storage_key) if o["metadata"]["name"] == name]
        elif node is not None:
            candidates = self.store.by_index("pods", "spec.nodeName", node)
            if ns:
                candidates = [p for p in candidates if p["metadata"].get("namespace") == ns]
        elif uid is not None:
            candidates = self.store.by_index("events", "involvedObject.uid", uid)
            if ns:
                candidates = [e for e in candidates if e["metadata"].get("namespace") == ns]
        else:
            candidates = self.store.list(rt.storage_key, ns)
        out = []
        for obj in candidates:
            if labels and not matches_labels(labels, obj["metadata"].get("labels")):
                continue
            served = conversion.from_storage(rt, obj) if rt.storage_alias or rt.crd else obj
            if fields and not matches_fields(fields, served):
                continue
            out.append(served)
        return out

    def field_selector(self, rt: ResourceType, text: str | None) -> list[FieldRequirement]:
        """A field selector over ``rt``'s objects, with the fields its kind can select by (400 for others)."""
        return parse_field_selector(text, {**OBJECT_META_FIELDS, **self.strategy(rt).selectable_fields})

    def table(self, rt: ResourceType, objects: list[dict], *, include_object: str = "Metadata") -> dict:
        """The ``meta.k8s.io/v1`` Table of ``objects`` as their kind's printer renders them now."""
        return kinds.table(rt, objects, now=self.clock(), include_object=include_object)

    def _computed_one(self, rt: ResourceType, name: str) -> dict | None:
        computed = self.strategy(rt).computed_objects(self._context)
        return None if computed is None else next((o for o in computed if o["metadata"]["name"] == name), None)

    @staticmethod
    def _check_verb(rt: ResourceType, verb: str) -> None:
        """The installer registers only the verbs a storage implements: any other is 405."""
        if verb not in rt.verbs:
            raise method_not_allowed()

    @property
    def resource_version(self) -> str:
        return str(self.store.rv)

    # --- change notification ---------------------------------------------
    def subscribe(self, key: str, callback: Callable[[str, dict, dict | None], None]) -> None:
        """callback(event_type, obj, old) after every committed change of ``key``."""
        self._subscribers.setdefault(key, []).append(callback)

    def unsubscribe(self, key: str, callback) -> None:
        subs = self._subscribers.get(key, [])
        if callback in subs:
            subs.remove(callback)

    def _dispatch(self, change: Change) -> None:
        for cb in list(self._subscribers.get(change.key, ())):
            cb(change.type, change.obj, change.old)

    # --- create -----------------------------------------------------------
    def create(self, key, obj: dict, namespace: str | None = None, *, manager: str | None = None,
               dry_run: bool = False, field_validation: str = "Ignore", warnings: list | None = None,
               raw: bytes | None = None) -> dict:
        rt = self.rt(key)
        self._check_verb(rt, "create")
        storage_rt = self._storage_rt(rt)
        obj = clone(obj)
        self._check_kind(rt, obj)
        meta = obj.setdefault("metadata", {}) or {}
        obj["metadata"] = meta
        ns = self._request_namespace(rt, meta, namespace)
        elsewhere = self.strategy(rt).rest_create(self, obj, ns)
        if elsewhere is not None:
            return elsewhere
        self._check_fields(rt, obj, field_validation, warnings, raw)
        self.strategy(rt).decode(obj, rt)
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + random_suffix()
        obj = conversion.to_storage(rt, obj, storage_rt)
        meta = obj["metadata"]
        if rt.namespaced:
            meta["namespace"] = ns
            self._admit_namespace(ns, rt)
        else:
            meta.pop("namespace", None)
        for k in ("uid", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)
        strategy = self.strategy(storage_rt)
        strategy.default(obj)
        now = self.clock()
        if manager:
            # The create handler records the fields before mutating admission and PrepareForCreate: what they
            # add (a ServiceAccount token volume, a Job's selector, a cluster IP) belongs to no manager.
            obj = update_managed_fields(None, obj, storage_rt, manager=manager, operation="Update",
                                        subresource=None, now=rfc3339(now), reset=strategy.reset_fields(None))
            meta = obj["metadata"]
        strategy.admit_create(obj, self._context)
        admission.admit(self, "CREATE", storage_rt, obj, None)
        meta["creationTimestamp"] = rfc3339(now)
        meta["uid"] = str(uuid.uuid4())
        strategy.prepare_for_create(obj, self._context)
        errs = validate_create(strategy, obj)
        if errs:
            raise invalid_object(storage_rt.kind, storage_rt.group, meta.get("name", ""), errs)
        if warnings is not None:
            warnings.extend(strategy.warnings_on_create(obj))
        admission.validate(self, "CREATE", storage_rt, obj, None, dry_run=dry_run)
        self._check_size(obj)
        name = meta["name"]
        if self.store.get(storage_rt.storage_key, ns if rt.namespaced else "", name) is not None:
            raise already_exists(rt.plural, rt.group, name)
        if dry_run:
            obj["metadata"]["resourceVersion"] = ""
            return conversion.from_storage(rt, obj)
        strategy.before_store(obj, self.registry)
        stored = self._store_put(storage_rt, obj, None)
        return conversion.from_storage(rt, stored)

    def _check_kind(self, rt: ResourceType, obj: dict) -> None:
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if api_version and api_version != rt.api_version:
            raise bad_request(f"the API version in the data ({api_version}) does not match the expected API version "
                              f"({rt.api_version})")
        if kind and kind != rt.kind:
            raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        obj["kind"], obj["apiVersion"] = rt.kind, rt.api_version

    def _request_namespace(self, rt: ResourceType, meta: dict, namespace: str | None) -> str:
        if not rt.namespaced:
            return ""
        obj_ns = meta.get("namespace")
        if namespace and obj_ns and obj_ns != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        return namespace or obj_ns or "default"

    def _admit_namespace(self, ns: str, rt: ResourceType) -> None:
        """NamespaceLifecycle admission (plugin/pkg/admission/namespace/lifecycle)."""
        nsobj = self.store.get("namespaces", "", ns)
        if nsobj is None:
            raise not_found("namespaces", "", ns)
        if nsobj["metadata"].get("deletionTimestamp") or (nsobj.get("status") or {}).get("phase") == "Terminating":
            if rt.storage_key not in ("events",):
                raise forbidden_error(
                    f'{rt.plural}{"." + rt.group if rt.group else ""} "" is forbidden: unable to create new content '
                    f"in namespace {ns} because it is being terminated")

    @staticmethod
    def _check_fields(rt, obj, field_validation: str, warnings: list | None, raw: bytes | None = None,
                      *, patched: bool = False) -> None:
        """Decoding into the Go type (:mod:`.validation.go_decode`), then server-side field validation: unknown
        (and, given the raw body, duplicate) fields."""
        undecodable = go_decode.decode_error(rt, obj, patched=patched)
        if undecodable is not None:
            raise undecodable
        if field_validation not in ("Strict", "Warn"):
            return
        messages = strict.strict_messages(rt, raw if raw is not None else obj)
        if not messages:
            return
        if field_validation == "Strict":
            if patched:
                raise strict.strict_patch_error(messages, jsonio.dumps(obj).decode())
            raise strict.strict_decoding_error(messages, kind=rt.kind, version=rt.version)
        if warnings is not None:
            warnings.extend(messages)

    @staticmethod
    def _check_size(obj: dict) -> None:
        size = len(jsonio.dumps(obj))
        if size > _MAX_OBJECT_BYTES:
            raise ApiError(413, "RequestEntityTooLarge", "etcdserver: request is too large")

    # --- update -----------------------------------------------------------
    def update(self, key, obj: dict, namespace: str | None = None, *, subresource: str | None = None,
               manager: str | None = None, dry_run: bool = False, field_validation: str = "Ignore",
               warnings: list | None = None, raw: bytes | None = None, typed: bool = False) -> dict:
        """``typed``: an in-process component's object read from this API and changed in code, so already of the
        Go type: it skips what decoding a request body does (the JSON-type check, dropping unknown fields);
        managed fields, validation, admission and the watch events are the same."""
        rt = self.rt(key)
        self._check_verb(rt, "update")
        obj = clone(obj)
        self._check_kind(rt, obj)
        meta = obj.setdefault("metadata", {})
        name = meta.get("name", "")
        ns = self._request_namespace(rt, meta, namespace) if rt.namespaced else ""
        old = self.store.get(rt.storage_key, ns, name)
        if old is None:
            creatable = subresource is None and not meta.get("resourceVersion")
            if creatable and self.strategy(rt).allow_create_on_update:  # the store's Update, "creating" branch
                return self.create(rt, obj, namespace, manager=manager, dry_run=dry_run,
                                   field_validation=field_validation, warnings=warnings, raw=raw)
            raise not_found(rt.plural, rt.group, name)
        decode = not typed or field_validation != "Ignore"
        if decode:
            self._check_fields(rt, obj, field_validation, warnings, raw)
        rv = meta.get("resourceVersion")
        if _preconditioned(rv) and rv != old["metadata"]["resourceVersion"]:
            raise conflict(rt.plural, rt.group, name,
                           "the object has been modified; please apply your changes to the latest version and try again")
        if decode:
            self.strategy(rt).decode(obj, rt)
        new = conversion.to_storage(rt, obj, self._storage_rt(rt))
        return conversion.from_storage(rt, self._update_from(self._storage_rt(rt), old, new, subresource, manager,
                                                             dry_run=dry_run))

    def _update_from(self, rt: ResourceType, old: dict, new: dict, subresource: str | None, manager: str | None,
                     *, operation: str = "Update", dry_run: bool = False, managed_done: bool = False) -> dict:
        """Shared tail of update and patch: the strategy's rules, validation, no-op detection, deletion on empty
        finalizers."""
        strategy = self.strategy(rt)
        meta = new.setdefault("metadata", {})
        ometa = old["metadata"]
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if k in ometa:
                meta[k] = ometa[k]
            else:
                meta.pop(k, None)
        meta["name"], meta["resourceVersion"] = ometa["name"], ometa["resourceVersion"]
        if rt.namespaced:
            meta["namespace"] = ometa.get("namespace", "")
        record = manager and not managed_done
        if subresource == "status":
            # A status write keeps everything else of the stored object before its fields are recorded; the fields
            # an apply recorded already stay (ResetObjectMetaForStatus leaves managedFields alone).
            applied_fields = meta.get("managedFields") if managed_done else None
            new = strategy.prepare_for_update(new, old, subresource)
            if applied_fields is not None:
                new["metadata"]["managedFields"] = applied_fields
            if record:
                new = update_managed_fields(old, new, rt, manager=manager, operation=operation,
                                            subresource=subresource, now=rfc3339(self.clock()),
                                            reset=strategy.reset_fields(subresource))
        else:
            strategy.default(new)
            if record:
                new = update_managed_fields(old, new, rt, manager=manager, operation=operation,
                                            subresource=subresource, now=rfc3339(self.clock()),
                                            reset=strategy.reset_fields(subresource))
            if subresource is None:
                strategy.admit_update(new, old, self._context)
                admission.admit(self, "UPDATE", rt, new, old)
            new = strategy.prepare_for_update(new, old, subresource)
        errs = validate_update(strategy, new, old, subresource)
        if errs:
            raise invalid_object(rt.kind, rt.group, ometa["name"], errs)
        if subresource is None:
            admission.validate(self, "UPDATE", rt, new, old, dry_run=dry_run)
        self._check_size(new)
        if _same_ignoring_managed_time(old, new):
            return old
        if dry_run:
            return new
        strategy.before_store(new, self.registry)
        nmeta = new["metadata"]
        if nmeta.get("deletionTimestamp") and not nmeta.get("finalizers") and strategy.deletion_complete(new):
            return self._remove(rt, new)
        return self._store_put(rt, new, old)

    # --- patch ------------------------------------------------------------
    def patch(self, key, name: str, patch, patch_type: str, namespace: str | None = None, *,
              subresource: str | None = None, manager: str | None = None, force: bool = False,
              dry_run: bool = False, field_validation: str = "Ignore", warnings: list | None = None) -> dict:
        """patch_type: "json", "merge", "strategic" or "apply" (server-side apply)."""
        rt = self.rt(key)
        self._check_verb(rt, "patch")
        storage_rt = self._storage_rt(rt)
        ns = (namespace or "default") if rt.namespaced else ""
        old_stored = self.store.get(rt.storage_key, ns, name)
        if patch_type == "apply":
            return self._apply(rt, name, ns, patch, old_stored, subresource=subresource, manager=manager,
                               force=force, dry_run=dry_run, field_validation=field_validation, warnings=warnings)
        if old_stored is None:
            raise not_found(rt.plural, rt.group, name)
        old = conversion.from_storage(rt, old_stored)
        if patch_type == "json":
            if field_validation in ("Strict", "Warn"):
                check_strict_ops(patch)
            new = decode_like_go(rt, apply_json_patch(old, patch))
        elif patch_type == "merge":
            new = decode_like_go(rt, apply_merge_patch(old, patch))
        elif patch_type == "strategic":
            new = apply_strategic_merge_patch(old, patch, rt)
        else:
            raise bad_request(f"unknown patch type {patch_type}")
        if not isinstance(new, dict):
            raise bad_request("the patch produced something that is not an object")
        self._check_fields(rt, new, field_validation, warnings, patched=True)
        nmeta = new.setdefault("metadata", {})
        if nmeta.get("name", name) != name:
            raise bad_request(f'the name of the object ({nmeta.get("name")}) does not match the name on the URL ({name})')
        self.strategy(rt).decode(new, rt)
        rv = nmeta.get("resourceVersion")
        if _preconditioned(rv) and rv != old["metadata"]["resourceVersion"]:
            raise conflict(rt.plural, rt.group, name,
                           "the object has been modified; please apply your changes to the latest version and try again")
        new["kind"], new["apiVersion"] = rt.kind, rt.api_version
        stored_new = conversion.to_storage(rt, new, storage_rt)
        result = self._update_from(storage_rt, old_stored, stored_new, subresource, manager, dry_run=dry_run)
        return conversion.from_storage(rt, result)

    def _apply(self, rt, name, ns, applied, old_stored, *, subresource, manager, force, dry_run, field_validation,
               warnings) -> dict:
        if not manager:
            raise bad_request("PATCH request must specify a field manager for apply (fieldManager query parameter)")
        if not isinstance(applied, dict):
            raise bad_request("error decoding YAML: apply patch must be an object")
        applied = clone(applied)
        self._check_kind(rt, applied)
        ameta = applied.setdefault("metadata", {})
        if ameta.get("name", name) != name:
            raise bad_request(f'the name of the object ({ameta.get("name")}) does not match the name on the URL ({name})')
        ameta["name"] = name
        self._check_fields(rt, applied, field_validation, warnings)
        now = rfc3339(self.clock())
        strategy = self.strategy(rt)
        if old_stored is None:
            if subresource:
                raise not_found(rt.plural, rt.group, name)
            # The apply's result, with its managedFields, is created as it is: one write, one ADDED event.
            created = server_side_apply(None, applied, rt, manager=manager, force=force, now=now,
                                        reset=strategy.reset_fields(None))
            return self.create(rt, created, ns or None, dry_run=dry_run)
        old = conversion.from_storage(rt, old_stored)
        new = server_side_apply(old, applied, rt, manager=manager, force=force, now=now, subresource=subresource,
                                reset=strategy.reset_fields(subresource))
        strategy.decode(new, rt)
        stored_new = conversion.to_storage(rt, new, self._storage_rt(rt))
        result = self._update_from(self._storage_rt(rt), old_stored, stored_new, subresource, manager,
                                   operation="Apply", dry_run=dry_run, managed_done=True)
        return conversion.from_storage(rt, result)

    # --- delete -----------------------------------------------------------
    def delete(self, key, name: str, namespace: str | None = None, *, grace_period_seconds: int | None = None,
               propagation_policy: str | None = None, preconditions: dict | None = None,
               dry_run: bool = False) -> dict:
        """Returns the object (graceful or finalizer-pending deletion, or kinds that return it) or a Status."""
        rt = self.rt(key)
        self._check_verb(rt, "delete")
        if rt.storage_key == "namespaces" and name in _IMMORTAL_NAMESPACES:
            # NamespaceLifecycle's Admit, which the DELETE handler runs before the storage looks the object up
            raise ApiError(403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                           {"name": name, "kind": "namespaces"})
        storage_rt = self._storage_rt(rt)
        ns = (namespace or "default") if rt.namespaced else ""
        old = self.store.get(rt.storage_key, ns, name)
        if old is None:
            raise not_found(rt.plural, rt.group, name)
        ometa = old["metadata"]
        if preconditions:
            if preconditions.get("uid") and preconditions["uid"] != ometa["uid"]:
                raise conflict(rt.plural, rt.group, name,
                               f'Precondition failed: UID in precondition: {preconditions["uid"]}, '
                               f'UID in object meta: {ometa["uid"]}')
            if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != ometa["resourceVersion"]:
                raise conflict(rt.plural, rt.group, name,
                               f'Precondition failed: ResourceVersion in precondition: '
                               f'{preconditions["resourceVersion"]}, ResourceVersion in object meta: '
                               f'{ometa["resourceVersion"]}')
        if dry_run:
            return conversion.from_storage(rt, old)
        new = clone(old)
        meta = new["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if propagation_policy == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        elif propagation_policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        strategy = self.strategy(storage_rt)
        grace = strategy.grace_period(old, grace_period_seconds)
        now = self.clock()
        if strategy.deletes_at_once(old, finalizers, grace):
            return self._finish_delete(rt, self._remove(storage_rt, new))
        if meta.get("deletionTimestamp"):
            # Already terminating: a shorter grace period may still shorten it (pods).
            cur = meta.get("deletionGracePeriodSeconds")
            if grace == 0 and strategy.graceful_deletion and not finalizers:
                return self._finish_delete(rt, self._remove(storage_rt, new))
            if cur is None or grace >= cur:
                if finalizers != (meta.get("finalizers") or []):
                    meta["finalizers"] = finalizers
                    return conversion.from_storage(rt, self._store_put(storage_rt, new, old))
                return conversion.from_storage(rt, old)
        meta["deletionTimestamp"] = rfc3339(now + grace)
        meta["deletionGracePeriodSeconds"] = grace
        if finalizers:
            meta["finalizers"] = finalizers
        strategy.prepare_for_delete(new)
        if strategy.has_generation:
            meta["generation"] = int(meta.get("generation", 1)) + 1
        return conversion.from_storage(rt, self._store_put(storage_rt, new, old))

    def _finish_delete(self, rt: ResourceType, removed: dict) -> dict:
        if self.strategy(rt).returns_deleted_object:
            return conversion.from_storage(rt, removed)
        details = {"name": removed["metadata"]["name"], "kind": rt.plural, "uid": removed["metadata"]["uid"]}
        if rt.group:
            details = {"name": details["name"], "group": rt.group, "kind": rt.plural, "uid": details["uid"]}
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    def delete_collection(self, key, namespace: str | None = None, *, label_selector: str | None = None,
                          field_selector: str | None = None, grace_period_seconds: int | None = None,
                          propagation_policy: str | None = None) -> list[dict]:
        rt = self.rt(key)
        self._check_verb(rt, "deletecollection")
        items = self.list(rt, namespace, label_selector, field_selector)
        for obj in items:
            try:
                self.delete(rt, obj["metadata"]["name"], obj["metadata"].get("namespace"),
                            grace_period_seconds=grace_period_seconds, propagation_policy=propagation_policy)
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return items

    # --- pods: binding, eviction, logs ------------------------------------
    def bind(self, namespace: str, pod_name: str, node_name: str, *, manager: str = "default-scheduler") -> dict:
        """pods/binding (pkg/registry/core/pod/storage/storage.go assignPod)."""
        old = self.store.get("pods", namespace, pod_name)
        if old is None:
            raise not_found("pods", "", pod_name)
        if old["metadata"].get("deletionTimestamp"):
            raise conflict("pods", "", pod_name, "pod is being deleted, cannot be assigned to a host")
        current = (old.get("spec") or {}).get("nodeName")
        if current:
            raise conflict("pods", "", pod_name, f"pod {pod_name} is already assigned to node \"{current}\"")
        new = clone(old)
        new["spec"]["nodeName"] = node_name
        status = new.setdefault("status", {})
        from .objects import set_condition

        set_condition(status, "PodScheduled", "True", now=rfc3339(self.clock()), probe_time=True)
        generation = new["metadata"].get("generation")
        if generation is not None:
            next(c for c in status["conditions"] if c["type"] == "PodScheduled")["observedGeneration"] = generation
        return self._store_put(self.rt("pods"), new, old)

    def evict(self, namespace: str, pod_name: str, *, grace_period_seconds: int | None = None,
              dry_run: bool = False) -> dict:
        """pods/eviction: refuse when a PodDisruptionBudget forbids it (pkg/registry/core/pod/storage/eviction.go)."""
        pod = self.store.get("pods", namespace, pod_name)
        if pod is None:
            raise not_found("pods", "", pod_name)
        if pod["metadata"].get("deletionTimestamp") is None and (pod.get("status") or {}).get("phase") not in (
                "Succeeded", "Failed", "Pending"):
            for pdb in self.store.list("poddisruptionbudgets.policy", namespace):
                from .selectors import label_selector_from_dict

                sel = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
                if not sel or not matches_labels(sel, pod["metadata"].get("labels")):
                    continue
                allowed = int((pdb.get("status") or {}).get("disruptionsAllowed", 0))
                if allowed <= 0:
                    raise ApiError(429, "TooManyRequests",
                                   "Cannot evict pod as it would violate the pod's disruption budget.",
                                   {"causes": [{"reason": "DisruptionBudget",
                                                "message": f"The disruption budget {pdb['metadata']['name']} needs "
                                                           f"{(pdb.get('status') or {}).get('desiredHealthy', 0)} "
                                                           f"healthy pods and has "
                                                           f"{(pdb.get('status') or {}).get('currentHealthy', 0)} "
                                                           f"currently"}]})
                if not dry_run:
                    # checkAndDecrement: spend the disruption now and name the pod, so concurrent evictions
                    # cannot all pass before the disruption controller recounts.
                    spent = clone(pdb)
                    spent["status"]["disruptionsAllowed"] = allowed - 1
                    spent["status"].setdefault("disruptedPods", {})[pod_name] = rfc3339(self.clock())
                    self.update("poddisruptionbudgets.policy", spent, namespace, subresource="status")
        if not dry_run:
            self.delete("pods", pod_name, namespace, grace_period_seconds=grace_period_seconds)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def logs(self, namespace: str, pod_name: str, opts: dict) -> str:
        pod = self.store.get("pods", namespace, pod_name)
        if pod is None:
            raise not_found("pods", "", pod_name)
        containers = [c["name"] for c in (pod.get("spec") or {}).get("containers", [])]
        container = opts.get("container")
        if not container:
            if len(containers) != 1:
                raise bad_request(f"a container name must be specified for pod {pod_name}, choose one of: "
                                  f"[{' '.join(containers)}]")
            container = containers[0]
        all_names = containers + [c["name"] for key in ("initContainers", "ephemeralContainers")
                                  for c in (pod.get("spec") or {}).get(key, [])]
        if container not in all_names:
            raise bad_request(f"container {container} is not valid for pod {pod_name}")
        if self.log_provider is None:
            raise internal("no node agent is running")
        return self.log_provider(pod, container, opts)

    # --- events -----------------------------------------------------------
    def record_event(self, involved: dict, type_: str, reason: str, message: str, component: str,
                     host: str | None = None, *, action: str | None = None, field_path: str | None = None) -> None:
        """Record an event the way client-go's recorder does: the same event again bumps count and lastTimestamp."""
        meta = involved.get("metadata", {})
        ns = meta.get("namespace") or "default"
        ref = {"kind": involved.get("kind"), "namespace": meta.get("namespace", ""), "name": meta.get("name"),
               "uid": meta.get("uid"), "apiVersion": involved.get("apiVersion"),
               "resourceVersion": meta.get("resourceVersion"), "fieldPath": field_path}
        ref = {k: v for k, v in ref.items() if v}
        key = (ref.get("uid"), ref.get("kind"), ref.get("name"), field_path, type_, reason, message, component, host)
        now = self.clock()
        stamp = rfc3339(now)
        existing = self._event_index.get(key)
        if existing is not None:
            ev = self.store.get("events", ns, existing[1])
            if ev is not None:
                upd = clone(ev)
                upd["count"] = int(ev.get("count", 1)) + 1
                upd["lastTimestamp"] = stamp
                self._store_put(self.rt("events"), upd, ev)
                return
        source = {"component": component}
        if host:
            source["host"] = host
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta.get('name')}.{time.time_ns():x}", "namespace": ns},
            "involvedObject": ref, "reason": reason, "message": message, "source": source,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1, "type": type_,
            "eventTime": None, "reportingComponent": component, "reportingInstance": host or "",
        }
        if action:
            event["action"] = action
        try:
            created = self.create("events", event, ns)
        except ApiError:
            return  # events are best effort, as in client-go
        self._event_index[key] = (ns, created["metadata"]["name"])

    # --- internals --------------------------------------------------------
    def _store_put(self, rt: ResourceType, obj: dict, old: dict | None) -> dict:
        obj["metadata"]["resourceVersion"] = str(self.store.next_rv())
        self.store.put(rt.storage_key, obj, old)
        return obj

    def _remove(self, rt: ResourceType, obj: dict) -> dict:
        obj = clone(obj)
        obj["metadata"]["resourceVersion"] = str(self.store.next_rv())
        self.store.remove(rt.storage_key, obj)
        self.strategy(rt).after_remove(obj, self.registry, self.store)
        if rt.storage_key == "events":  # the recorder's aggregation index
            self._event_index = {k: v for k, v in self._event_index.items() if v[1] != obj["metadata"]["name"]}
        return obj

class _StrategyContext:
    """What strategies read through the API (see :class:`gpulab.cluster.kinds.strategy.Context`)."""

    def __init__(self, api: Api):
        self._api = api

    def lookup(self, key: str, name: str, namespace: str = "") -> dict | None:
        return self._api.store.get(key, namespace, name)

    def list(self, key: str) -> list[dict]:
        return self._api.store.list(key)

    def clock(self) -> float:
        return self._api.clock()


def _same_ignoring_managed_time(old: dict, new: dict) -> bool:
    """An update that changes nothing is not written (no new resourceVersion, no watch event), as upstream."""
    if old == new:
        return True
    om, nm = old.get("metadata", {}), new.get("metadata", {})
    if {k: v for k, v in old.items() if k != "metadata"} != {k: v for k, v in new.items() if k != "metadata"}:
        return False
    strip = lambda m: {k: v for k, v in m.items() if k != "managedFields"}  # noqa: E731
    if strip(om) != strip(nm):
        return False
    drop_time = lambda mf: [{k: v for k, v in e.items() if k != "time"} for e in (mf or [])]  # noqa: E731
    return drop_time(om.get("managedFields")) == drop_time(nm.get("managedFields"))


def _preconditioned(rv) -> bool:
    """Whether an update or patch names the resourceVersion it must apply to. The store's Update reads the
    object's resourceVersion as a number and treats 0 as "none given": an unconditional update on the latest
    version (apiserver registry/generic/registry/store.go), so ``"resourceVersion": "0"`` is no conflict."""
    return bool(rv) and rv != "0"
