"""Tables for custom resources and for kinds without a printer.

Custom resources follow apiextensions-apiserver's tableconvertor.go: a Name
column, then one column per ``additionalPrinterColumns`` entry of the served
version (an ``Age`` column over ``.metadata.creationTimestamp`` when there is
none, as apiserver/helpers.go's serveDefaultColumnsIfEmpty adds), each
evaluated with client-go JSONPath and converted by cellForJSONValue: a
``date`` cell becomes a HumanDuration string such as ``5m``.

Every other kind uses k8s.io/apiserver's DefaultTableConvertor: ``Name`` and
``Created At`` (type date, an RFC 3339 timestamp that kubectl prints as is).
"""
from __future__ import annotations

from ..jsonpath import JSONPath, JSONPathError, go_text
from .cells import ZERO_TIME_US, duration, format_rfc3339, name, parse_rfc3339, time_of
from .columns import META, column, doc, name_column


# --- DefaultTableConvertor ------------------------------------------------------
def default_columns() -> list[dict]:
    return [name_column(), column("Created At", "date", doc(META, "creationTimestamp"))]


def default_cells(obj: dict, now_us: int) -> list:
    """Name and ``creationTimestamp.UTC().Format(time.RFC3339)``."""
    return [name(obj), format_rfc3339(time_of((obj.get("metadata") or {}).get("creationTimestamp")))]


# --- custom resources --------------------------------------------------------------
class CustomResourcePrinter:
    """tableconvertor.New for one served CRD version."""

    def __init__(self, version: dict):
        specs = version.get("additionalPrinterColumns") or [
            {"name": "Age", "type": "date", "description": doc(META, "creationTimestamp"),
             "jsonPath": ".metadata.creationTimestamp"}]
        self._columns = [name_column()]
        self._paths: list[tuple[str, JSONPath]] = []
        for spec in specs:
            path = spec.get("jsonPath", "")
            try:
                parsed = JSONPath("{" + path + "}")
            except JSONPathError:
                # New() returns the convertor built so far with the error; the handler logs it and keeps serving.
                break
            description = spec.get("description") or f"Custom resource definition column (in JSONPath format): {path}"
            self._columns.append(column(spec.get("name", ""), spec.get("type", ""), description,
                                       format_=spec.get("format", ""), priority=spec.get("priority", 0)))
            self._paths.append((spec.get("type", ""), parsed))

    def columns(self) -> list[dict]:
        return self._columns

    @staticmethod
    def conditions(obj: dict) -> list[dict]:
        return []

    def cells(self, obj: dict, now_us: int) -> list:
        out: list = [name(obj)]
        for type_, path in self._paths:
            try:
                results = path.find_results(obj)
            except JSONPathError:
                results = []
            if not results or not results[0]:
                out.append(None)
                continue
            value = results[0][0]
            out.append(go_text(value) if type_ == "string" else _cell_for_json_value(type_, value, now_us))
        return out


def _cell_for_json_value(type_: str, value, now_us: int):
    """cellForJSONValue: the value as the column's type, or None (JSON null, a blank cell)."""
    if type_ == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if type_ == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if type_ == "boolean" and isinstance(value, bool):
        return value
    if type_ == "date" and isinstance(value, str):
        if value in ("", "null"):  # metav1.Time.UnmarshalQueryParameter: the zero time
            return "<unknown>"
        when = parse_rfc3339(value)
        if when is None:
            return "<invalid>"
        return "<unknown>" if when == ZERO_TIME_US else duration(now_us - when)
    return None
