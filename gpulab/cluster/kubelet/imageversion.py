"""Which release of its software an image carries, read from the tag it was pulled by.

An image's tag names a release, whole or in part: ``nginx:1.27.3`` is nginx 1.27.3, ``nginx:1.27`` the newest
1.27 release its publisher built, ``nginx:stable`` whatever stable was. The image shows that release where the real
one does: in the environment variable its Dockerfile sets (``NGINX_VERSION``, ``PYTHON_VERSION``), which its
programs print (``nginx -v``, the ``Server:`` header, ``python --version``). So a catalog
entry (data/images.yaml ``version``) says, as data, where in the tag the release is, which releases exist and
what its named tags meant, and the pulled image gets that variable set to the release; the default the entry's
``env`` gives stands for references that name no release (a digest alone, a named tag not listed).
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TagVersion:
    """An entry's ``version``: ``env`` is set to the release its tag names.

    ``pattern``: where the release is in the tag (its first group); ``releases``: the newest release of each
    line, a tag naming part of a release (``1.27``, ``3``) gets the newest one it is a prefix of, and one naming a
    release not listed is taken as written; ``named``: tags that are words (``stable``), and their release.
    """

    env: str
    pattern: re.Pattern
    releases: tuple[str, ...] = ()
    named: tuple[tuple[str, str], ...] = ()

    def release(self, tag: str) -> str | None:
        """The release ``tag`` names, or None when it names none (the image's default stands)."""
        named = dict(self.named)
        if tag in named:
            return named[tag]
        match = self.pattern.search(tag)
        if match is None:
            return None
        written = match.group(1)
        return next((r for r in self.releases if r == written or r.startswith(written + ".")), written)


def parse_version(spec: dict | None) -> TagVersion | None:
    """The ``version`` mapping of a catalog entry (None: the image's tags name no release)."""
    if not spec:
        return None
    return TagVersion(env=spec["env"], pattern=re.compile(spec.get("fromTag", r"^(\d+(?:\.\d+)*)")),
                      releases=tuple(str(r) for r in spec.get("releases") or ()),
                      named=tuple((str(k), str(v)) for k, v in (spec.get("named") or {}).items()))
