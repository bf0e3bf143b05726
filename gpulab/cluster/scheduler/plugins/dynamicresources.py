"""DynamicResources (pkg/scheduler/framework/plugins/dynamicresources), enabled by default since v1.34.

gpulab serves no ResourceClaims, so the plugin only shows through its
PostFilter, which runs before DefaultPreemption. For a pod without claims it
gives up without a reason since v1.37 (kubernetes/kubernetes#140222 dropped the
``no new claims to deallocate`` text that v1.34-v1.36 put before
``preemption: ...`` in every FailedScheduling message).
"""
from __future__ import annotations

from ..interface import PostFilterPlugin, PostFilterResult
from ..status import UNSCHEDULABLE, Status

NAME = "DynamicResources"
_NOTHING_TO_DEALLOCATE = Status(UNSCHEDULABLE, (), NAME)


class DynamicResources(PostFilterPlugin):
    NAME = NAME

    def post_filter(self, state, pod, diagnosis) -> PostFilterResult:
        return PostFilterResult(_NOTHING_TO_DEALLOCATE)
