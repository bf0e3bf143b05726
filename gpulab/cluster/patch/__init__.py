"""Every PATCH flavour kube-apiserver accepts, server-side apply and metadata.managedFields.

All functions are pure: they copy their inputs and return new dicts.

- :func:`apply_json_patch` — ``application/json-patch+json`` (RFC 6902, evanphx/json-patch v4 quirks)
- :func:`apply_merge_patch` — ``application/merge-patch+json`` (RFC 7386, same library)
- :func:`apply_strategic_merge_patch` — ``application/strategic-merge-patch+json``
- :func:`server_side_apply` — ``application/apply-patch+yaml``
- :func:`update_managed_fields` — managedFields bookkeeping for create/update/patch
- :func:`manager_or_user_agent` — the field manager name kube-apiserver records
- :func:`decode_like_go` — null fields a built-in kind's Go type would drop
"""
from .apply import server_side_apply
from .jsonpatch_ops import apply_json_patch, check_strict_ops
from .managed_fields import manager_or_user_agent, update_managed_fields
from .merge import apply_merge_patch
from .strategic import apply_strategic_merge_patch
from .typed_decode import decode_like_go

__all__ = ["apply_json_patch", "check_strict_ops", "apply_merge_patch", "apply_strategic_merge_patch", "decode_like_go",
           "manager_or_user_agent", "server_side_apply", "update_managed_fields"]
