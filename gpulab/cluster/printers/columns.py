"""Table column definitions and their descriptions, as pkg/printers/internalversion declares them.

Upstream takes each description from a Go type's ``SwaggerDoc()``; the same
godoc text is what kube-apiserver's OpenAPI document carries, so it is read
here from the v1.37 definitions in :mod:`gpulab.cluster.schema`. A field a
type does not have gives ``""``, as a missing SwaggerDoc key does.
"""
from __future__ import annotations

from ..schema import definitions

META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
CORE = "io.k8s.api.core.v1."
APPS = "io.k8s.api.apps.v1."
BATCH = "io.k8s.api.batch.v1."


def doc(definition: str, field: str) -> str:
    """SwaggerDoc()[field] of one type, e.g. ``doc(CORE + "PodStatus", "podIP")``."""
    prop = (definitions().get(definition, {}).get("properties") or {}).get(field) or {}
    return prop.get("description", "")


def column(name: str, type_: str = "string", description: str = "", *, format_: str = "",
           priority: int = 0) -> dict:
    """One metav1.TableColumnDefinition; every field is always serialized."""
    return {"name": name, "type": type_, "format": format_, "description": description, "priority": priority}


def name_column(priority: int = 0) -> dict:
    return column("Name", "string", doc(META, "name"), format_="name", priority=priority)


def age_column() -> dict:
    return column("Age", "string", doc(META, "creationTimestamp"))


def template_columns(selector_doc: str) -> list[dict]:
    """The Containers / Images / Selector wide columns every workload printer appends."""
    return [column("Containers", description="Names of each container in the template.", priority=1),
            column("Images", description="Images referenced by each container in the template.", priority=1),
            column("Selector", description=selector_doc, priority=1)]
