"""Bindings: pkg/registry/core/pod/storage/storage.go's BindingREST, also served as the ``bindings`` resource.

Creating a Binding assigns the pod it names to ``target.name`` (as a POST to
``pods/NAME/binding`` does) and stores nothing; the answer is a Success
Status.
"""
from __future__ import annotations

from ..errors import bad_request
from ..registry import ResourceType
from .strategy import Strategy


class BindingStrategy(Strategy):
    resource = ResourceType("", "v1", "bindings", "Binding", True, verbs=("create",))
    stored = False

    def rest_create(self, api, obj: dict, namespace: str) -> dict:
        node = (obj.get("target") or {}).get("name")
        if not node:
            raise bad_request("Binding target name is required")
        api.bind(namespace, (obj.get("metadata") or {}).get("name", ""), node)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
