"""DynamicResources (pkg/scheduler/framework/plugins/dynamicresources), enabled by default since v1.34.

gpulab serves no ResourceClaims, so the plugin only shows through its
PostFilter, which runs before DefaultPreemption and, for a pod without claims,
returns Unschedulable ``no new claims to deallocate``: that is why v1.34-v1.36
failure messages read ``... no new claims to deallocate, preemption: ...``
(the text was dropped after v1.36 by kubernetes/kubernetes#140222).
"""
from __future__ import annotations

from ..interface import PostFilterPlugin, PostFilterResult
from ..status import unschedulable

NAME = "DynamicResources"
_NO_CLAIMS = unschedulable("no new claims to deallocate", plugin=NAME)


class DynamicResources(PostFilterPlugin):
    NAME = NAME

    def post_filter(self, state, pod, diagnosis) -> PostFilterResult:
        return PostFilterResult(_NO_CLAIMS)
