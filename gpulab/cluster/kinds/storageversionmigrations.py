"""StorageVersionMigrations: pkg/registry/storagemigration/storageversionmigration/strategy.go. Stored; there is
one storage version per resource here, so a migration has nothing to do (docs/fidelity.md)."""
from __future__ import annotations

from ..errors import FieldError
from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation.field import immutable, required
from ..validation.formats import name_is_dns_subdomain
from ..validation.meta import validate_object_meta, validate_object_meta_update
from ..validation.path import Path
from .simple import SimpleStrategy


def _validate(svm: dict) -> list[FieldError]:
    errs = validate_object_meta(svm.get("metadata") or {}, False, name_is_dns_subdomain)
    if not ((svm.get("spec") or {}).get("resource") or {}).get("resource"):
        errs.append(required(Path("spec").child("resource", "resource")))
    return errs


def _validate_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + immutable(Path("spec"), new.get("spec"), old.get("spec"))


class StorageVersionMigrationStrategy(SimpleStrategy):
    resource = ResourceType("storagemigration.k8s.io", "v1", "storageversionmigrations", "StorageVersionMigration",
                            False, subresources=("status",))
    printer = Printer(printers.storageversionmigration_columns, printers.storageversionmigration_cells)
    validator = staticmethod(_validate)
    update_validator = staticmethod(_validate_update)
