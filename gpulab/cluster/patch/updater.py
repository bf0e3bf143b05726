"""Field ownership bookkeeping for updates and applies: structured-merge-diff's Updater.

Port of sigs.k8s.io/structured-merge-diff merge/update.go (update, Update,
Apply, prune, addBackOwnedItems, addBackDanglingItems) and merge/conflict.go:
who owns which fields after an operation, which fields an apply removes because
its manager stopped applying them, and which changes collide with another
manager's fields. Objects passed in are already shaped for comparison (see
:func:`managed_fields.comparable`); all versions of a kind share one schema here,
so no conversion between API versions happens.
"""
from __future__ import annotations

from dataclasses import dataclass

from .fieldpath import FieldSet
from .schema_walk import Node
from .typed import Comparison, compare, merge, remove_items, to_field_set, values_equal, ABSENT


@dataclass
class VersionedSet:
    set: FieldSet
    api_version: str
    applied: bool


class Conflicts(Exception):
    """merge.Conflicts: manager identifier -> the paths it owns that this apply would change."""

    def __init__(self, by_manager: dict[str, FieldSet]):
        super().__init__("conflicts")
        self.by_manager = by_manager

    def items(self):
        """ConflictsFromManagers order: managers (sorted here; a Go map upstream), then Set.Iterate."""
        for manager in sorted(self.by_manager):
            for path in self.by_manager[manager].iterate():
                yield manager, path


def update_sets(old, new, version: str, managers: dict[str, VersionedSet], workflow: str, force: bool,
                root: Node, ignored: FieldSet | None) -> tuple[dict[str, VersionedSet], Comparison]:
    """Updater.update: take changed fields away from other managers, or report them as conflicts."""
    comparison = compare(old, new, root).exclude(ignored)
    conflicts: dict[str, FieldSet] = {}
    managers = dict(managers)
    for manager, versioned in managers.items():
        if manager == workflow:
            continue
        clash = versioned.set.intersection(comparison.modified.union(comparison.added))
        if not clash.empty():
            conflicts[manager] = clash
    if conflicts and not force:
        raise Conflicts(conflicts)
    for manager, versioned in list(managers.items()):
        if manager == workflow:
            continue
        remaining = versioned.set
        if manager in conflicts:
            remaining = remaining.difference(conflicts[manager])
        if not comparison.removed.empty():
            remaining = remaining.difference(comparison.removed)
        managers[manager] = VersionedSet(remaining, versioned.api_version, versioned.applied)
    return {m: v for m, v in managers.items() if not v.set.empty()}, comparison


def record_update(live, new, version: str, managers: dict[str, VersionedSet], manager: str, root: Node,
                  ignored: FieldSet | None) -> dict[str, VersionedSet]:
    """Updater.Update: the manager of a create/update/patch owns what it changed."""
    managers, comparison = update_sets(live, new, version, managers, manager, True, root, ignored)
    previous = managers.get(manager, VersionedSet(FieldSet(), version, False)).set
    owned = previous.union(comparison.modified).union(comparison.added).difference(comparison.removed)
    if ignored is not None:
        owned = owned.recursive_difference(ignored)
    managers = dict(managers)
    managers[manager] = VersionedSet(owned, version, False)
    if owned.empty():
        del managers[manager]
    return managers


def apply_config(live, config, version: str, managers: dict[str, VersionedSet], manager: str, force: bool,
                 root: Node, ignored: FieldSet | None, comparable) -> tuple[object, dict[str, VersionedSet]]:
    """Updater.Apply: merge the configuration, prune what this manager stopped applying, settle ownership.

    Returns ``(None, managers)`` when the object does not change. ``comparable``
    shapes an object for Compare (Go zero values, no managedFields).
    """
    merged = merge(live, config, root)
    if merged is ABSENT:
        merged = {}
    last = managers.get(manager)
    owned = to_field_set(config, root)
    if ignored is not None:
        owned = owned.recursive_difference(ignored)
    managers = dict(managers)
    managers[manager] = VersionedSet(owned, version, True)
    new = _prune(merged, managers, last, root)
    managers, _ = update_sets(comparable(live), comparable(new), version, managers, manager, force, root, ignored)
    if values_equal(live, new):
        return None, managers
    return new, managers


def _prune(merged, managers: dict[str, VersionedSet], last: VersionedSet | None, root: Node):
    """prune: drop what the applier applied last time, not this time, and nobody else owns."""
    if last is None or last.set.empty():
        return merged
    last_set = last.set.ensure_named_fields_are_members(root)
    pruned = remove_items(merged, last_set, root)
    managed = FieldSet()
    for versioned in managers.values():
        managed = managed.union(versioned.set)
    merged_set = to_field_set(merged, root).ensure_named_fields_are_members(root)
    pruned_set = to_field_set(pruned, root).ensure_named_fields_are_members(root)
    pruned = remove_items(merged, merged_set.difference(
        pruned_set.union(managed.ensure_named_fields_are_members(root))), root)
    pruned_set = to_field_set(pruned, root).ensure_named_fields_are_members(root)
    return remove_items(merged, merged_set.difference(pruned_set).intersection(last_set), root)
