"""What decoding a patched document into its Go type does to ``null`` fields.

After strategic merge patch and server-side apply, kube-apiserver converts the
result into the Go struct of a built-in kind (runtime.DefaultUnstructuredConverter
FromUnstructured / TypedToObject), so a field left as JSON ``null`` becomes an
omitted zero value. Custom resources stay unstructured and keep their nulls for
the CRD pipeline (pruning and defaulting) to handle.
"""
from __future__ import annotations


def drop_nulls(value):
    """Remove every object member whose value is ``null``, at any depth."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


def decode_like_go(rt, document: dict) -> dict:
    """The document as the kind's Go type would hold it: built-in kinds lose their ``null`` fields."""
    return drop_nulls(document) if rt.crd is None else document
