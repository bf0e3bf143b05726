"""Field paths as ``field.Path`` prints them: ``spec.containers[0].resources.limits[example.com/gpu]``.

k8s.io/apimachinery/pkg/util/validation/field/path.go. Indexes and map keys
are both written in brackets, keys without quotes.
"""
from __future__ import annotations


class Path:
    """An immutable field path; ``str(path)`` is the text in error messages."""

    __slots__ = ("_text",)

    def __init__(self, text: str = ""):
        self._text = text

    def child(self, *names: str) -> Path:
        text = self._text
        for name in names:
            text = f"{text}.{name}" if text else name
        return Path(text)

    def index(self, i: int) -> Path:
        return Path(f"{self._text}[{i}]")

    def key(self, k: str) -> Path:
        return Path(f"{self._text}[{k}]")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Path({self._text!r})"


def child(path: Path | None, name: str) -> Path:
    """``path.Child(name)`` where ``None`` is Go's nil root path (its child is the name alone)."""
    return path.child(name) if path is not None else Path(name)


def key(path: Path | None, k: str) -> Path:
    """``path.Key(k)`` where ``None`` is the nil root path."""
    return path.key(k) if path is not None else Path(f"[{k}]")


def index(path: Path | None, i: int) -> Path:
    """``path.Index(i)`` where ``None`` is the nil root path."""
    return path.index(i) if path is not None else Path(f"[{i}]")
