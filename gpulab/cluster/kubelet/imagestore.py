"""The images one node holds, and its serialized image puller.

Mirrors containerd's image store as the kubelet sees it: an image is present once a pull finished,
``status.images`` lists what is present largest first, at most 50 entries with up to 5 names each
(pkg/kubelet/nodestatus/setters.go Images, nodeStatusMaxImages), digest names before tag names.
Pulls on a node run one at a time (``serializeImagePulls: true``, the kubelet default), which is what
the "(... including waiting)" part of the Pulled event measures. A node starts with the images of a
kind node image and, after a restart of the node agent, with what its status listed.
"""
from __future__ import annotations

from dataclasses import dataclass

from .images import Catalog, ImageReference, image_digest

MAX_IMAGES_IN_STATUS = 50
MAX_NAMES_PER_IMAGE = 5


@dataclass
class StoredImage:
    repository: str
    tag: str
    digest: str
    size: int

    @property
    def names(self) -> list[str]:
        return [f"{self.repository}@{self.digest}", f"{self.repository}:{self.tag}"]


class ImageStore:
    def __init__(self, catalog: Catalog, status_images: list[dict] | None = None):
        self._images: dict[str, StoredImage] = {}
        self._busy_until = 0.0
        self._fetched_by: dict[str, float] = {}   # image -> when its first pull completes
        for image, tag in catalog.preloaded():
            self._put(image.repository, tag, image.size)
        for entry in status_images or ():
            names = entry.get("names") or []
            tagged = next((n for n in names if "@" not in n and ":" in n.rsplit("/", 1)[-1]), None)
            if tagged:
                repository, _, tag = tagged.rpartition(":")
                self._put(repository, tag, int(entry.get("sizeBytes", 0)))

    def _put(self, repository: str, tag: str, size: int) -> StoredImage:
        stored = StoredImage(repository, tag, image_digest(repository, tag), size)
        self._images[f"{repository}:{tag}"] = stored
        return stored

    def lookup(self, ref: ImageReference) -> StoredImage | None:
        if ref.digest and not ref.tag:
            return next((i for i in self._images.values()
                         if i.repository == ref.repository and i.digest == ref.digest), None)
        return self._images.get(f"{ref.repository}:{ref.tag or 'latest'}")

    def add(self, ref: ImageReference, size: int) -> StoredImage:
        return self._put(ref.repository, ref.tag or "latest", size)

    def pull_slot(self, ref: ImageReference, now: float, duration: float, cached: float) -> tuple[float, float]:
        """(start, end) of a pull queued behind the node's other pulls: ``duration``, or ``cached`` when an
        earlier pull of the same image will have fetched its layers by the time this one starts."""
        key = f"{ref.repository}:{ref.tag or 'latest'}"
        start = max(now, self._busy_until)
        if self._fetched_by.get(key, float("inf")) <= start or key in self._images:
            duration = cached
        self._busy_until = start + duration
        self._fetched_by.setdefault(key, self._busy_until)
        return start, self._busy_until

    def status(self) -> list[dict]:
        images = sorted(self._images.values(), key=lambda i: (-i.size, i.repository, i.tag))
        return [{"names": i.names[:MAX_NAMES_PER_IMAGE], "sizeBytes": i.size}
                for i in images[:MAX_IMAGES_IN_STATUS]]
