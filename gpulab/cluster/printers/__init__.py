"""``meta.k8s.io/v1`` Table responses: what ``kubectl get`` prints is decided here.

kubectl asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and prints
the columns and cells the server sends, hiding priority-1 columns unless
``-o wide``. Each kind's strategy (:mod:`gpulab.cluster.kinds`) names its
:class:`Printer`: built-in kinds use the ports of kube-apiserver's
pkg/printers/internalversion handlers in this package (always generated wide,
as pkg/printers/storage does); custom resources use apiextensions-apiserver's
printer-column convertor; any other kind gets the DefaultTableConvertor's
``Name``/``Created At``. The caller fills ``metadata`` (resourceVersion,
continue); ``includeObject`` is applied as handlers/response.go's asTable does.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from ..errors import bad_request
from .cells import to_micros
from .custom import CustomResourcePrinter, default_cells, default_columns

__all__ = ["DEFAULT_PRINTER", "CustomResourcePrinter", "Printer", "table"]


@dataclass(frozen=True)
class Printer:
    """One kind's table convertor: its column definitions, a row's cells and the row's conditions."""

    columns: Callable[[], list[dict]]
    cells: Callable[[dict, int], list]
    conditions: Callable[[dict], list[dict]] = lambda obj: []


DEFAULT_PRINTER = Printer(default_columns, default_cells)


@functools.lru_cache(maxsize=None)
def _columns(printer: Printer) -> tuple[dict, ...]:
    return tuple(printer.columns())


def _row_object(obj: dict, include_object: str):
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table(printer: "Printer | CustomResourcePrinter", objects: list[dict], *, now: float,
          include_object: str = "Metadata") -> dict:
    """The Table kube-apiserver returns for ``objects`` printed by their kind's ``printer`` at wall-clock time ``now``.

    ``include_object`` is the request's ``includeObject`` (``None``, ``Metadata``
    -- also for ``""`` -- or ``Object``); any other value is a 400 as upstream.
    Cells are plain JSON values; a ``None`` cell is JSON null (kubectl leaves it blank).
    """
    include_object = include_object or "Metadata"
    if include_object not in ("None", "Metadata", "Object"):
        raise bad_request(f'unrecognized includeObject value: "{include_object}"')
    now_us = to_micros(now)
    if isinstance(printer, CustomResourcePrinter):
        columns = printer.columns()
    else:
        columns = [dict(c) for c in _columns(printer)]
    rows = []
    for obj in objects:
        row: dict = {"cells": printer.cells(obj, now_us)}
        if row_conditions := printer.conditions(obj):
            row["conditions"] = [dict(c) for c in row_conditions]
        row["object"] = _row_object(obj, include_object)
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {}, "columnDefinitions": columns,
            "rows": rows}
