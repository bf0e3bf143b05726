"""The HorizontalPodAutoscaler printer: printHorizontalPodAutoscaler and formatHPAMetrics in
kubernetes/pkg/printers/internalversion/printers.go, over the stored autoscaling/v2 form (descriptions from the
served autoscaling/v2 types where upstream reads v2beta1)."""
from __future__ import annotations

from ..quantity import canonical
from .cells import age, name
from .columns import age_column, column, doc, name_column

AUTOSCALING = "io.k8s.api.autoscaling.v2."
_MAX_METRICS = 2


def hpa_columns() -> list[dict]:
    spec = AUTOSCALING + "HorizontalPodAutoscalerSpec"
    return [name_column(), column("Reference", description=doc(spec, "scaleTargetRef")),
            column("Targets", description=doc(spec, "metrics")),
            column("MinPods", description=doc(spec, "minReplicas")),
            column("MaxPods", description=doc(spec, "maxReplicas")),
            column("Replicas", description=doc(AUTOSCALING + "HorizontalPodAutoscalerStatus", "currentReplicas")),
            age_column()]


def _quantity(value) -> str:
    return "0" if value is None else canonical(value)


def _value_or_average(target: dict, current: dict | None) -> str:
    """External and Object metrics: ``current/target``, ``(avg)`` when the target is an average value."""
    if target.get("averageValue") is not None:
        now = "<unknown>" if not current or current.get("averageValue") is None else _quantity(current["averageValue"])
        return f"{now}/{_quantity(target['averageValue'])} (avg)"
    now = "<unknown>" if current is None else _quantity(current.get("value"))
    return f"{now}/{_quantity(target.get('value'))}"


def _resource(source: dict, current: dict | None) -> str:
    """Resource and ContainerResource metrics: an average value, or a utilization percentage."""
    target = source.get("target") or {}
    if target.get("averageValue") is not None:
        now = "<unknown>" if current is None else _quantity(current.get("averageValue"))
        return f"{source.get('name', '')}: {now}/{_quantity(target['averageValue'])}"
    now = "<unknown>"
    if current is not None and current.get("averageUtilization") is not None:
        now = f"{current['averageUtilization']}%"
    goal = "<auto>" if target.get("averageUtilization") is None else f"{target['averageUtilization']}%"
    return f"{source.get('name', '')}: {now}/{goal}"


def format_metrics(specs: list, statuses: list) -> str:
    """formatHPAMetrics: the first two metrics as ``current/target``."""
    if not specs:
        return "<none>"
    texts = []
    for i, spec in enumerate(specs):
        kind = spec.get("type")
        status = statuses[i] if i < len(statuses) else {}
        if kind == "External":
            current = (status.get("external") or {}).get("current") if status.get("external") else None
            texts.append(_value_or_average((spec.get("external") or {}).get("target") or {}, current))
        elif kind == "Pods":
            current = "<unknown>"
            if status.get("pods"):
                current = _quantity(((status["pods"].get("current") or {}).get("averageValue")))
            target = ((spec.get("pods") or {}).get("target") or {}).get("averageValue")
            texts.append(f"{current}/{_quantity(target)}")
        elif kind == "Object":
            current = (status.get("object") or {}).get("current") if status.get("object") else None
            texts.append(_value_or_average((spec.get("object") or {}).get("target") or {}, current))
        elif kind == "Resource":
            current = (status.get("resource") or {}).get("current") if status.get("resource") else None
            texts.append(_resource(spec.get("resource") or {}, current))
        elif kind == "ContainerResource":
            source = status.get("containerResource")
            texts.append(_resource(spec.get("containerResource") or {}, (source or {}).get("current") if source
                                   else None))
        else:
            texts.append("<unknown type>")
    text = ", ".join(texts[:_MAX_METRICS])
    return f"{text} + {len(texts) - _MAX_METRICS} more..." if len(texts) > _MAX_METRICS else text


def hpa_cells(hpa: dict, now_us: int) -> list:
    spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    min_pods = "<unset>" if spec.get("minReplicas") is None else str(spec["minReplicas"])
    return [name(hpa), f"{ref.get('kind', '')}/{ref.get('name', '')}",
            format_metrics(spec.get("metrics") or [], status.get("currentMetrics") or []), min_pods,
            spec.get("maxReplicas", 0), status.get("currentReplicas", 0), age(hpa, now_us)]
