"""DefaultBinder (pkg/scheduler/framework/plugins/defaultbinder): binds the pod through ``pods/binding``."""
from __future__ import annotations

from ...errors import ApiError
from ..interface import BindPlugin
from ..status import ERROR, Status

NAME = "DefaultBinder"


class DefaultBinder(BindPlugin):
    NAME = NAME

    def bind(self, state, pod, node_name: str) -> Status | None:
        try:
            self.handle.api.bind(pod.namespace, pod.name, node_name)
        except ApiError as exc:
            return Status(ERROR, (exc.message,), NAME)
        return None
