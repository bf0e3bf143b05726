"""The ValidateUpdate most kinds have: ObjectMeta's update rules, then the object's own checks again."""
from __future__ import annotations

from typing import Callable

from ..errors import FieldError
from .meta import validate_object_meta_update

Validator = Callable[[dict], list[FieldError]]


def update_of(validate: Validator) -> Callable[[dict, dict], list[FieldError]]:
    """ValidateObjectMetaUpdate, then ``validate`` on the new object without its ObjectMeta errors (the name is not
    checked again on update)."""
    def validate_update(new: dict, old: dict) -> list[FieldError]:
        errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
        return errs + [e for e in validate(new) if not e.field.startswith("metadata.")]
    return validate_update
