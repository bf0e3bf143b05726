"""Which images exist: image references, the catalog of pullable images and the errors a pull meets.

A node here has no network, so "pulling" an image means looking its reference up in
``data/images.yaml`` (described for people in docs/images.md). The outcome mirrors
containerd 2.x resolving the reference against the registry:

* an unknown registry host fails in DNS (``dial tcp: lookup HOST on RESOLVER: no such host``);
* an unknown repository on a known registry gets that registry's answer (Docker Hub's
  ``pull access denied, repository does not exist or may require authorization``, ...);
* an unknown tag of a known repository is ``REF: not found``.

Reference parsing follows github.com/distribution/reference (ParseNormalizedNamed: ``busybox`` ->
``docker.io/library/busybox``) and kubelet's pkg/util/parsers.ParseImageName, whose errors the kubelet
reports as ``InvalidImageName``. Hand-written because no Python package implements Docker's reference
grammar and normalization rules; the grammar is small.
"""
from __future__ import annotations

import hashlib
import re
import urllib.parse
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import yaml

from .serving import HttpService, parse_serves

DEFAULT_DOMAIN = "docker.io"
_LEGACY_DEFAULT_DOMAINS = ("index.docker.io", "registry-1.docker.io")
_PATH_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$")
_DOMAIN = re.compile(r"^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*"
                     r"(?::[0-9]+)?$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
_DIGEST = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$")


class InvalidReference(ValueError):
    """An image string that is not a reference; ``str()`` is ParseImageName's error."""


@dataclass(frozen=True)
class ImageReference:
    """A normalized reference: ``docker.io/library/nginx:1.27`` is domain, path, tag."""

    domain: str
    path: str
    tag: str = ""
    digest: str = ""

    @property
    def repository(self) -> str:
        return f"{self.domain}/{self.path}"

    @property
    def full(self) -> str:
        """The reference containerd resolves (the kubelet adds ``:latest`` when neither tag nor digest)."""
        out = self.repository
        if self.tag or not self.digest:
            out += f":{self.tag or 'latest'}"
        if self.digest:
            out += f"@{self.digest}"
        return out


def parse_reference(image: str) -> ImageReference:
    """ParseNormalizedNamed plus the kubelet's wording: ``couldn't parse image name "X": invalid reference format``."""
    def fail(detail: str = "") -> InvalidReference:
        return InvalidReference(f'couldn\'t parse image name "{image}": invalid reference format{detail}')

    if not image or image != image.strip() or any(c.isspace() for c in image):
        raise fail()
    rest, digest = image, ""
    if "@" in rest:
        rest, digest = rest.split("@", 1)
        if not _DIGEST.match(digest):
            raise fail()
    tag = ""
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:
        rest, tag = rest[:colon], rest[colon + 1:]
        if not _TAG.match(tag):
            raise fail()
    first, _, remainder = rest.partition("/")
    if remainder and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        domain, path = first, remainder
        if not _DOMAIN.match(domain):
            raise fail()
    else:
        domain, path = DEFAULT_DOMAIN, rest
    if domain in _LEGACY_DEFAULT_DOMAINS:
        domain = DEFAULT_DOMAIN
    if domain == DEFAULT_DOMAIN and "/" not in path:
        path = f"library/{path}"
    if path != path.lower():
        raise fail(f": repository name ({path}) must be lowercase")
    if not path or not all(_PATH_COMPONENT.match(c) for c in path.split("/")):
        raise fail()
    return ImageReference(domain, path, tag, digest)


@dataclass(frozen=True)
class Behaviour:
    """What a known program does (data/images.yaml ``behaviours``)."""

    script: str = ""
    serve: bool = False
    on_stop_script: str | None = None
    on_stop_exit: int = 0
    needs_gpu: bool = False
    no_gpu_script: str = ""
    serves: tuple[HttpService, ...] = ()      # the ports it listens on while serving (serving.py)

    @property
    def handles_stop(self) -> bool:
        return self.on_stop_script is not None


@dataclass(frozen=True)
class Image:
    """One pullable image: the catalog entry that matched a reference."""

    repository: str
    size: int
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    shell: str | None = None          # the flavour of /bin/sh: ash, dash (None: no shell in the image)
    programs: frozenset[str] | None = None   # None: contents unknown, any program is taken to exist
    os_release: str = ""

    def has_program(self, name: str) -> bool:
        return self.programs is None or name in self.programs


@dataclass(frozen=True)
class _Entry:
    image: Image
    tags: re.Pattern
    preloaded: tuple[str, ...] = ()


@dataclass
class Catalog:
    """The images of data/images.yaml, the registries that serve them and the known program behaviours."""

    entries: list[_Entry]
    registries: dict[str, dict]
    behaviours: dict[str, Behaviour]
    shells: dict[str, str]
    resolver: str
    _by_repository: dict[str, list[_Entry]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for entry in self.entries:
            self._by_repository.setdefault(entry.image.repository, []).append(entry)

    def resolve(self, ref: ImageReference) -> Image:
        """The image a reference names, or :class:`PullError` with containerd's message."""
        full = ref.full
        prefix = f'failed to pull and unpack image "{full}": failed to resolve reference "{full}": '
        registry = self.registries.get(ref.domain)
        if registry is None:
            host = ref.domain.split(":")[0]
            target = f"https://{ref.domain}/v2/{ref.path}/manifests/{ref.digest or ref.tag or 'latest'}"
            if host in ("localhost", "127.0.0.1"):
                port = ref.domain.partition(":")[2] or "443"
                raise PullError(prefix + f'failed to do request: Head "{target}": dial tcp 127.0.0.1:{port}: '
                                f"connect: connection refused")
            raise PullError(prefix + f'failed to do request: Head "{target}": dial tcp: lookup {host} on '
                            f"{self.resolver}: no such host")
        entries = self._by_repository.get(ref.repository)
        if not entries:
            raise PullError(prefix + registry["unknownRepository"].format(
                reference=full, repository=ref.path, repository_escaped=urllib.parse.quote(ref.path, safe="")))
        if ref.digest and not ref.tag:
            return entries[0].image
        for entry in entries:
            if entry.tags.match(ref.tag or "latest"):
                return entry.image
        raise PullError(prefix + f"{full}: not found")

    def preloaded(self) -> list[tuple[Image, str]]:
        """(image, tag) pairs every node holds from the start (a kind node image's contents)."""
        return [(e.image, tag) for e in self.entries for tag in e.preloaded]


class PullError(Exception):
    """A failed pull; ``str()`` is the CRI error text the kubelet reports."""


def image_digest(repository: str, tag: str) -> str:
    """A stable synthetic manifest digest for ``repository:tag``."""
    return "sha256:" + hashlib.sha256(f"{repository}:{tag}".encode()).hexdigest()


def _flatten(values) -> list[str]:
    out: list[str] = []
    for v in values or ():
        out.extend(_flatten(v) if isinstance(v, list) else [str(v)])
    return out


def _behaviour(spec: dict) -> Behaviour:
    stop = spec.get("onStop")
    return Behaviour(script=spec.get("script", ""), serve=bool(spec.get("serve")),
                     on_stop_script=(stop or {}).get("script", "") if stop is not None else None,
                     on_stop_exit=int((stop or {}).get("exit", 0)), needs_gpu=bool(spec.get("needsGpu")),
                     no_gpu_script=spec.get("noGpu", ""), serves=parse_serves(spec.get("serves")))


def load_catalog(text: str) -> Catalog:
    doc = yaml.safe_load(text)
    entries = []
    for spec in doc["images"]:
        programs = spec.get("programs")
        image = Image(
            repository=spec["repository"], size=int(spec["size"]),
            entrypoint=tuple(spec.get("entrypoint") or ()), cmd=tuple(spec.get("cmd") or ()),
            env=tuple((k, str(v)) for k, v in (spec.get("env") or {}).items()), shell=spec.get("shell"),
            programs=None if programs is None else frozenset(_flatten(programs)),
            os_release=spec.get("osRelease", ""))
        entries.append(_Entry(image, re.compile(spec["tags"]), tuple(str(t) for t in spec.get("preloaded") or ())))
    return Catalog(entries=entries, registries=doc["registries"],
                   behaviours={name: _behaviour(b) for name, b in doc["behaviours"].items()},
                   shells=doc["shells"], resolver=doc["resolver"])


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    return load_catalog(resources.files(__package__).joinpath("data/images.yaml").read_text())
