"""Plugin names to plugin factories (pkg/scheduler/framework/plugins/registry.go ``NewInTreeRegistry``, and the
out-of-tree plugins of kubernetes-sigs/scheduler-plugins that gpulab's second scheduler runs).

The registry is every plugin class defined under ``plugins/`` (a class with a
``NAME`` that inherits an extension point), so a new plugin module registers
itself. A factory is called as ``factory(handle, args)``; a plugin class is its
own factory.
"""
from __future__ import annotations

import importlib
import pkgutil

from . import plugins
from .interface import Plugin


def _discover() -> dict[str, type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(plugins.__path__, plugins.__name__ + "."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Plugin) and obj.NAME and obj.__module__ == module.__name__:
                if found.setdefault(obj.NAME, obj) is not obj:
                    raise RuntimeError(f"two scheduler plugins are named {obj.NAME}: {found[obj.NAME]} and {obj}")
    return found


REGISTRY: dict[str, type] = _discover()
