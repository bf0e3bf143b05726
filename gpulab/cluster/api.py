"""The in-process Kubernetes API: every verb with kube-apiserver's semantics.

The HTTP server translates requests into calls on :class:`Api`; the scheduler,
node agent and controllers call it directly, as kube-controller-manager uses a
loopback client. Behaviour follows the generic registry store of
staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go (create,
update, graceful deletion, finalizers, preconditions, generation) and the
per-kind strategies in pkg/registry/*; the pure behaviour (defaulting,
validation, patching, printing) lives in sibling modules.
"""
from __future__ import annotations

import time
import uuid

from typing import Callable

from . import conversion, defaults, jsonio, validation
from .errors import (ApiError, already_exists, bad_request, conflict, forbidden_error, invalid_object, not_found,
                     FieldError, internal)
from .objects import clone, random_suffix, rfc3339, rfc3339_micro
from .patch import (apply_json_patch, apply_merge_patch, apply_strategic_merge_patch, decode_like_go,
                    server_side_apply, update_managed_fields)
from .registry import Registry, ResourceType
from .selectors import exact_field, matches_fields, matches_labels, parse_field_selector, parse_label_selector
from .store import Change, Store
from .validation import custom as custom_validation
from .validation import crd as crd_validation
from .validation import go_decode, strict

# Kinds whose objects get metadata.generation (their strategies set it on create and bump it on spec changes).
_GENERATION_KINDS = {"pods", "deployments.apps", "replicasets.apps", "daemonsets.apps", "jobs.batch",
                     "customresourcedefinitions.apiextensions.k8s.io", "poddisruptionbudgets.policy"}
# Kinds whose DELETE returns the object rather than a Status (ReturnDeletedObject in their REST storage).
_RETURNS_DELETED_OBJECT = {"pods", "services", "serviceaccounts"}
_MAX_OBJECT_BYTES = 1_572_864 + 128 * 1024  # etcd's request size limit (1.5 MiB) plus envelope


class Api:
    """The cluster's API, in process. See docs/architecture.md for the contract."""

    def __init__(self, store: Store, registry: Registry | None = None, *, clock: Callable[[], float] = time.time):
        self.store = store
        self.registry = registry or Registry()
        self.clock = clock
        self.log_provider: Callable[[dict, str, dict], str] | None = None
        self._subscribers: dict[str, list[Callable[[str, dict, dict | None], None]]] = {}
        self._event_index: dict[tuple, tuple[str, str]] = {}
        self._ip_counter = 0
        store.listen(self._dispatch)
        store.add_index("pods", "spec.nodeName", lambda p: (p.get("spec") or {}).get("nodeName") or None)
        store.add_index("events", "involvedObject.uid", lambda e: (e.get("involvedObject") or {}).get("uid"))
        for crd in store.list("customresourcedefinitions.apiextensions.k8s.io"):
            if _established(crd):
                self.registry.add_crd(crd)

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

    # --- reads ------------------------------------------------------------
    def get(self, key, name: str, namespace: str | None = None) -> dict:
        rt = self.rt(key)
        obj = self.store.get(rt.storage_key, namespace or "" if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.plural, rt.group, name)
        return conversion.from_storage(rt, obj)

    def try_get(self, key, name: str, namespace: str | None = None) -> dict | None:
        rt = self.rt(key)
        obj = self.store.get(rt.storage_key, (namespace or "") if rt.namespaced else "", name)
        return None if obj is None else conversion.from_storage(rt, obj)

    def list(self, key, namespace: str | None = None, label_selector: str | list | None = None,
             field_selector: str | list | None = None) -> list[dict]:
        """Objects matching the selectors, in etcd key order. Selectors may be strings or parsed requirements."""
        rt = self.rt(key)
        labels = parse_label_selector(label_selector) if isinstance(label_selector, str) or label_selector is None \
            else label_selector
        extra = tuple((f.get("jsonPath") or "").lstrip(".") for f in (rt.crd or {}).get("selectableFields") or ())
        fields = parse_field_selector(field_selector, rt.storage_key, extra) \
            if isinstance(field_selector, str) or field_selector is None else field_selector
        ns = namespace if rt.namespaced else None
        node = exact_field(fields, "spec.nodeName") if rt.storage_key == "pods" else None
        uid = exact_field(fields, "involvedObject.uid") if rt.storage_key == "events" else None
        name = exact_field(fields, "metadata.name")
        if name is not None:
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
        if rt.storage_key == "events" and rt.storage_alias:
            storage_rt = self._storage_rt(rt)
        else:
            storage_rt = rt
        obj = clone(obj)
        self._check_kind(rt, obj)
        meta = obj.setdefault("metadata", {}) or {}
        obj["metadata"] = meta
        ns = self._request_namespace(rt, meta, namespace)
        self._check_fields(rt, obj, field_validation, warnings, raw)
        if rt.crd is not None:
            custom_validation.prune_and_default(rt, obj)
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
        now = self.clock()
        meta["creationTimestamp"] = rfc3339(now)
        self._prepare_for_create(storage_rt, obj)
        defaults.apply_defaults(storage_rt, obj)
        defaults.admit_create(storage_rt, obj, self._lookup, self.store.list)
        meta["uid"] = str(uuid.uuid4())
        if storage_rt.key == "jobs.batch":
            defaults.job_prepare_for_create(obj)
        errs = validation.validate_create(storage_rt, obj)
        if errs:
            raise invalid_object(storage_rt.kind, storage_rt.group, meta.get("name", ""), errs)
        self._check_size(obj)
        name = meta["name"]
        if self.store.get(storage_rt.storage_key, ns if rt.namespaced else "", name) is not None:
            raise already_exists(rt.plural, rt.group, name)
        if manager:
            obj = update_managed_fields(None, obj, storage_rt, manager=manager, operation="Update",
                                        subresource=None, now=rfc3339(now))
        if dry_run:
            obj["metadata"]["resourceVersion"] = ""
            return conversion.from_storage(rt, obj)
        self._before_store(storage_rt, obj, None)
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

    def _lookup(self, key: str, name: str, namespace: str = "") -> dict | None:
        return self.store.get(key, namespace, name)

    def _prepare_for_create(self, rt: ResourceType, obj: dict) -> None:
        """The strategies' PrepareForCreate: what a client may not set on create."""
        key = rt.key
        if key in _GENERATION_KINDS or rt.crd is not None:
            obj["metadata"]["generation"] = 1
        if key == "pods":
            obj["status"] = {"phase": "Pending"}
            if (obj.get("spec") or {}).get("schedulingGates"):
                # pkg/registry/core/pod/strategy.go applySchedulingGatedCondition
                obj["status"]["conditions"] = [{
                    "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates", "lastProbeTime": None,
                    "lastTransitionTime": rfc3339(self.clock()), "observedGeneration": 1}]
        elif key == "namespaces":
            obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
            obj["status"] = {"phase": "Active"}
        elif key == "services":
            self._allocate_cluster_ip(obj)
        elif key == "customresourcedefinitions.apiextensions.k8s.io":
            crd_validation.crd_defaults(obj)
            obj["status"] = crd_validation.crd_established_status(obj, rfc3339(self.clock()))
        elif rt.crd is not None and "status" in ((rt.crd.get("subresources") or {})):
            obj.pop("status", None)
        elif key in ("deployments.apps", "replicasets.apps", "daemonsets.apps", "jobs.batch",
                     "poddisruptionbudgets.policy"):
            obj["status"] = {}

    def _allocate_cluster_ip(self, obj: dict) -> None:
        spec = obj.setdefault("spec", {})
        if spec.get("type") == "ExternalName" or spec.get("clusterIP") == "None":
            return
        if not spec.get("clusterIP"):
            used = {(s.get("spec") or {}).get("clusterIP") for s in self.store.list("services")}
            while True:
                self._ip_counter += 1
                n = self._ip_counter
                ip = f"10.96.{n // 254}.{n % 254 + 1}"
                if ip not in used:
                    break
            spec["clusterIP"] = ip
        spec.setdefault("clusterIPs", [spec["clusterIP"]])

    @staticmethod
    def _check_size(obj: dict) -> None:
        size = len(jsonio.dumps(obj))
        if size > _MAX_OBJECT_BYTES:
            raise ApiError(413, "RequestEntityTooLarge", "etcdserver: request is too large")

    # --- update -----------------------------------------------------------
    def update(self, key, obj: dict, namespace: str | None = None, *, subresource: str | None = None,
               manager: str | None = None, dry_run: bool = False, field_validation: str = "Ignore",
               warnings: list | None = None, raw: bytes | None = None) -> dict:
        rt = self.rt(key)
        obj = clone(obj)
        self._check_kind(rt, obj)
        meta = obj.setdefault("metadata", {})
        name = meta.get("name", "")
        ns = self._request_namespace(rt, meta, namespace) if rt.namespaced else ""
        old = self.store.get(rt.storage_key, ns, name)
        if old is None:
            raise not_found(rt.plural, rt.group, name)
        self._check_fields(rt, obj, field_validation, warnings, raw)
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(rt.plural, rt.group, name,
                           "the object has been modified; please apply your changes to the latest version and try again")
        if rt.crd is not None:
            custom_validation.prune_and_default(rt, obj)
        new = conversion.to_storage(rt, obj, self._storage_rt(rt))
        return conversion.from_storage(rt, self._update_from(self._storage_rt(rt), old, new, subresource, manager,
                                                             dry_run=dry_run))

    def _update_from(self, rt: ResourceType, old: dict, new: dict, subresource: str | None, manager: str | None,
                     *, operation: str = "Update", dry_run: bool = False, managed_done: bool = False) -> dict:
        """Shared tail of update and patch: strategy rules, validation, no-op detection, deletion on empty finalizers."""
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
        has_status = "status" in rt.subresources or (rt.crd is not None and "status" in (rt.crd.get("subresources") or {}))
        if subresource == "status":
            # The status strategies' PrepareForUpdate: spec comes from the stored object. Built-in kinds keep
            # the request's labels and annotations (a Deployment keeps its labels); custom resources change only
            # status (apiextensions-apiserver's statusStrategy).
            requested = new
            new = {**clone(old), "status": requested.get("status")}
            if new["status"] is None:
                new.pop("status")
            if rt.crd is None:
                rmeta = requested.get("metadata") or {}
                for field in ("annotations",) if rt.key == "deployments.apps" else ("labels", "annotations"):
                    if rmeta.get(field):
                        new["metadata"][field] = rmeta[field]
                    else:
                        new["metadata"].pop(field, None)
            meta = new["metadata"]
            if manager and not managed_done:
                new = update_managed_fields(old, new, rt, manager=manager, operation=operation,
                                            subresource="status", now=rfc3339(self.clock()))
        else:
            if has_status:
                if "status" in old:
                    new["status"] = clone(old["status"])
                else:
                    new.pop("status", None)
            if rt.key == "namespaces":
                new["spec"] = clone(old.get("spec") or {}) if subresource != "finalize" else new.get("spec", {})
            defaults.apply_defaults(rt, new)
            if manager and not managed_done:
                new = update_managed_fields(old, new, rt, manager=manager, operation=operation,
                                            subresource=subresource, now=rfc3339(self.clock()))
            if (rt.key in _GENERATION_KINDS or rt.crd is not None) and _spec_changed(old, new):
                new["metadata"]["generation"] = int(ometa.get("generation", 1)) + 1
        if subresource is None:
            defaults.admit_update(rt, new)
        if subresource != "status":
            defaults.prepare_for_update(rt, new, old)
        errs = (validation.validate_status_update(rt, new, old) if subresource == "status"
                else validation.validate_update(rt, new, old))
        if errs:
            raise invalid_object(rt.kind, rt.group, ometa["name"], errs)
        self._check_size(new)
        if _same_ignoring_managed_time(old, new):
            return old
        if dry_run:
            return new
        self._before_store(rt, new, old)
        nmeta = new["metadata"]
        if nmeta.get("deletionTimestamp") and not nmeta.get("finalizers") and _deletion_complete(rt, new):
            return self._remove(rt, new)
        return self._store_put(rt, new, old)

    # --- patch ------------------------------------------------------------
    def patch(self, key, name: str, patch, patch_type: str, namespace: str | None = None, *,
              subresource: str | None = None, manager: str | None = None, force: bool = False,
              dry_run: bool = False, field_validation: str = "Ignore", warnings: list | None = None) -> dict:
        """patch_type: "json", "merge", "strategic" or "apply" (server-side apply)."""
        rt = self.rt(key)
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
        if rt.crd is not None:
            custom_validation.prune_and_default(rt, new)
        rv = nmeta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
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
        if old_stored is None:
            if subresource:
                raise not_found(rt.plural, rt.group, name)
            created = server_side_apply(None, applied, rt, manager=manager, force=force, now=now)
            # create() recomputes metadata; carry the apply's managedFields through.
            mf = created["metadata"].get("managedFields")
            obj = self.create(rt, created, ns or None, dry_run=dry_run, field_validation="Ignore")
            if mf and not dry_run:
                stored = self.store.get(rt.storage_key, ns, name)
                upd = clone(stored)
                upd["metadata"]["managedFields"] = mf
                return conversion.from_storage(rt, self._store_put(self._storage_rt(rt), upd, stored))
            return obj
        old = conversion.from_storage(rt, old_stored)
        new = server_side_apply(old, applied, rt, manager=manager, force=force, now=now, subresource=subresource)
        if rt.crd is not None:
            custom_validation.prune_and_default(rt, new)
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
        grace = self._grace_period(storage_rt, old, grace_period_seconds)
        now = self.clock()
        pending = bool(finalizers) or grace > 0 or (storage_rt.key == "namespaces")
        if storage_rt.key == "namespaces":
            pending = bool((old.get("spec") or {}).get("finalizers")) or bool(finalizers)
        if not pending:
            return self._finish_delete(rt, self._remove(storage_rt, new))
        if meta.get("deletionTimestamp"):
            # Already terminating: a shorter grace period may still shorten it (pods).
            cur = meta.get("deletionGracePeriodSeconds")
            if grace == 0 and storage_rt.key == "pods" and not finalizers:
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
        if storage_rt.key == "namespaces":
            new.setdefault("status", {})["phase"] = "Terminating"
        if storage_rt.key in _GENERATION_KINDS or storage_rt.crd is not None:
            meta["generation"] = int(meta.get("generation", 1)) + 1
        return conversion.from_storage(rt, self._store_put(storage_rt, new, old))

    def _grace_period(self, rt: ResourceType, obj: dict, requested: int | None) -> int:
        """Pods: graceful deletion as pkg/registry/core/pod/strategy.go CheckGracefulDeletion; others: 0."""
        if rt.key != "pods":
            return 0
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            return 0
        period = int(requested) if requested is not None else int(spec.get("terminationGracePeriodSeconds", 30))
        return 1 if period < 0 else period

    def _finish_delete(self, rt: ResourceType, removed: dict) -> dict:
        if rt.storage_key in _RETURNS_DELETED_OBJECT:
            return conversion.from_storage(rt, removed)
        details = {"name": removed["metadata"]["name"], "kind": rt.plural, "uid": removed["metadata"]["uid"]}
        if rt.group:
            details = {"name": details["name"], "group": rt.group, "kind": rt.plural, "uid": details["uid"]}
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    def delete_collection(self, key, namespace: str | None = None, *, label_selector: str | None = None,
                          field_selector: str | None = None, grace_period_seconds: int | None = None,
                          propagation_policy: str | None = None) -> list[dict]:
        rt = self.rt(key)
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
        self._before_store(self.rt("pods"), new, old)
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
        all_names = containers + [c["name"] for c in (pod.get("spec") or {}).get("initContainers", [])]
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
    def _before_store(self, rt: ResourceType, new: dict, old: dict | None) -> None:
        """Side effects of writes to special kinds: CRDs change what the registry serves."""
        if rt.key == "customresourcedefinitions.apiextensions.k8s.io":
            if not new["metadata"].get("deletionTimestamp"):
                self.registry.add_crd(new)

    def _store_put(self, rt: ResourceType, obj: dict, old: dict | None) -> dict:
        obj["metadata"]["resourceVersion"] = str(self.store.next_rv())
        self.store.put(rt.storage_key, obj, old)
        return obj

    def _remove(self, rt: ResourceType, obj: dict) -> dict:
        obj = clone(obj)
        obj["metadata"]["resourceVersion"] = str(self.store.next_rv())
        self.store.remove(rt.storage_key, obj)
        if rt.key == "customresourcedefinitions.apiextensions.k8s.io":
            self._drop_crd(obj)
        if rt.storage_key == "events":
            self._event_index = {k: v for k, v in self._event_index.items() if v[1] != obj["metadata"]["name"]}
        return obj

    def _drop_crd(self, crd: dict) -> None:
        spec = crd["spec"]
        key = f"{spec['names']['plural']}.{spec['group']}"
        self.registry.remove_crd(crd["metadata"]["name"])
        for obj in self.store.list(key):
            gone = clone(obj)
            gone["metadata"]["resourceVersion"] = str(self.store.next_rv())
            self.store.remove(key, gone)


def _established(crd: dict) -> bool:
    return not crd["metadata"].get("deletionTimestamp")


def _spec_changed(old: dict, new: dict) -> bool:
    skip = ("metadata", "status", "apiVersion", "kind")
    return {k: v for k, v in old.items() if k not in skip} != {k: v for k, v in new.items() if k not in skip}


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


def _deletion_complete(rt: ResourceType, obj: dict) -> bool:
    """Finalizers gone: delete now, unless a pod still waits for its kubelet (grace period not yet confirmed)."""
    if rt.key == "pods":
        # A pod on a node goes only once its kubelet confirmed (deleted it with grace 0), even when its
        # phase is already terminal, so watchers see the final status before DELETED.
        return not obj["metadata"].get("deletionGracePeriodSeconds")
    if rt.key == "namespaces":
        return not (obj.get("spec") or {}).get("finalizers")
    return True

