"""Which images exist: image references, the catalog of pullable images and the errors a pull meets.

A node here has no network, so "pulling" an image means looking its reference up in the catalog:
``data/images.yaml`` (described for people in docs/images.md), plus the documents in the same format
that whoever composes the server adds (:class:`CatalogSource`; ``gpulab/embedded.py`` adds those of the
programs it runs alongside the cluster). The outcome mirrors containerd 2.x
resolving the reference against the registry:

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

import dataclasses
import hashlib
import re
import urllib.parse
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Mapping

import yaml

from ...contract import NativeProgram
from .imageversion import TagVersion, parse_version
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
    """What a known program does (data/images.yaml ``behaviours``).

    ``needs_device``: a device node the program opens; without it in the container it runs
    ``without_device_script`` instead. ``native``: the program is written in Python (supplied with the
    catalog document that names it) rather than as a script.
    """

    script: str = ""
    serve: bool = False
    on_stop_script: str | None = None
    on_stop_exit: int = 0
    needs_device: str | None = None
    without_device_script: str = ""
    native: NativeProgram | None = None
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
    version: TagVersion | None = None    # the release its tag names (imageversion.py), set in env when pulled

    def has_program(self, name: str) -> bool:
        return self.programs is None or name in self.programs

    def pulled_as(self, tag: str) -> Image:
        """The image as pulled by ``tag``: its release variable says the release the tag names."""
        release = self.version.release(tag) if self.version else None
        if release is None:
            return self
        env = dict(self.env)
        env[self.version.env] = release
        return dataclasses.replace(self, env=tuple(env.items()))


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
    natives: dict[str, NativeProgram] = field(default_factory=dict)   # every native program supplied, by name
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
                return entry.image.pulled_as(ref.tag or "latest")
        raise PullError(prefix + f"{full}: not found")

    def preloaded(self) -> list[tuple[Image, str]]:
        """(image, tag) pairs every node holds from the start (a kind node image's contents)."""
        return [(e.image, tag) for e in self.entries for tag in e.preloaded]


class PullError(Exception):
    """A failed pull; ``str()`` is the CRI error text the kubelet reports."""


def image_digest(repository: str, tag: str) -> str:
    """A stable synthetic manifest digest for ``repository:tag``."""
    return "sha256:" + hashlib.sha256(f"{repository}:{tag}".encode()).hexdigest()


@dataclass(frozen=True)
class CatalogSource:
    """A document in data/images.yaml's format and the native programs its behaviours name (``native: true`` or
    ``native: NAME``)."""

    text: str
    programs: Mapping[str, NativeProgram] = field(default_factory=dict)


def _behaviour(name: str, spec: dict, programs: Mapping[str, NativeProgram]) -> Behaviour:
    stop = spec.get("onStop")
    native = None
    if spec.get("native"):
        # `native: true` runs the supplied program of the behaviour's name; `native: OTHER` the one named OTHER
        # (a program name that also names another native, such as a mounted program's, runs a program of its own)
        supplied = name if spec["native"] is True else str(spec["native"])
        if supplied not in programs:
            raise ValueError(f"behaviour {name!r} is native, but no program {supplied!r} was supplied")
        native = programs[supplied]
    return Behaviour(script=spec.get("script", ""), serve=bool(spec.get("serve")),
                     on_stop_script=(stop or {}).get("script", "") if stop is not None else None,
                     on_stop_exit=int((stop or {}).get("exit", 0)), needs_device=spec.get("needsDevice"),
                     without_device_script=spec.get("withoutDevice", ""), native=native,
                     serves=parse_serves(spec.get("serves")))


def load_catalog(*extra: CatalogSource) -> Catalog:
    """The catalog of data/images.yaml with the ``extra`` documents merged in, in order (a later document adds
    registries, behaviours, shells, program sets and images; an image may use the program sets of any of them)."""
    base = CatalogSource(resources.files(__package__).joinpath("data/images.yaml").read_text())
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)    # libyaml when built in: ten times faster here
    docs = [(yaml.load(source.text, Loader=loader) or {}, source.programs) for source in (base, *extra)]
    program_sets: dict[str, list[str]] = {}
    registries: dict[str, dict] = {}
    behaviours: dict[str, Behaviour] = {}
    shells: dict[str, str] = {}
    resolver = ""
    natives: dict[str, NativeProgram] = {}
    for doc, programs in docs:
        natives.update(programs)
        program_sets.update(doc.get("programSets") or {})
        registries.update(doc.get("registries") or {})
        behaviours.update({name: _behaviour(name, b, programs) for name, b in (doc.get("behaviours") or {}).items()})
        shells.update(doc.get("shells") or {})
        resolver = doc.get("resolver", resolver)
    entries = []
    for doc, _ in docs:
        for spec in doc.get("images") or ():
            sets, listed = spec.get("programSets"), spec.get("programs")
            programs = None
            if sets is not None or listed is not None:
                programs = frozenset([p for s in sets or () for p in program_sets[s]] + [str(p) for p in listed or ()])
            image = Image(
                repository=spec["repository"], size=int(spec["size"]),
                entrypoint=tuple(spec.get("entrypoint") or ()), cmd=tuple(spec.get("cmd") or ()),
                env=tuple((k, str(v)) for k, v in (spec.get("env") or {}).items()), shell=spec.get("shell"),
                programs=programs, os_release=spec.get("osRelease", ""), version=parse_version(spec.get("version")))
            entries.append(_Entry(image, re.compile(spec["tags"]), tuple(str(t) for t in spec.get("preloaded") or ())))
    return Catalog(entries=entries, registries=registries, behaviours=behaviours, shells=shells, resolver=resolver,
                   natives=natives)


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    """The images any cluster's nodes can pull (data/images.yaml alone)."""
    return load_catalog()
