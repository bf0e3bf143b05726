"""ImageLocality (pkg/scheduler/framework/plugins/imagelocality/image_locality.go).

Score: for each container and init container whose image (``:latest`` added
when untagged) a node lists in ``status.images``, the image's size on that
node times the fraction of nodes that hold it; the sum, clamped between 23 MiB
and 1000 MiB per container, mapped linearly onto 0..100. No normalisation;
weight 1. The cache indexes the nodes holding each image, so nodes holding none
of the pod's images are scored once.
"""
from __future__ import annotations

from ..interface import MAX_NODE_SCORE, SETS, PreScorePlugin, ScorePlugin
from ..status import Status

NAME = "ImageLocality"
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


class ImageLocality(PreScorePlugin, ScorePlugin):
    NAME = NAME
    score_scope = SETS

    def pre_score(self, state, pod, feasible) -> Status | None:
        """The pod's images and the share of nodes holding each (upstream recomputes them in every Score)."""
        cache = self.handle.cache
        images = pod_images(pod)
        spread = {image: sum(mask.bit_count() for mask in cache.image_nodes.get(image, {}).values()) / len(cache.nodes)
                  for image in images}
        state.write(NAME, (images, spread))
        return None

    def score(self, state, pod, node) -> int:
        images, spread = state.read(NAME)
        summed = 0
        for image in images:
            size = node.images.get(image)
            if size is not None:
                summed += int(size * spread[image])  # scaledImageScore
        return calculate_priority(summed, len(images))

    def score_sets(self, state, pod) -> list:
        image_nodes = self.handle.cache.image_nodes
        images, _ = state.read(NAME)
        return [mask for image in sorted(set(images)) for mask in image_nodes.get(image, {}).values()]


def normalized_image_name(name: str) -> str:
    """normalizedImageName: ``:latest`` when the name has no tag after its last ``/``."""
    return name if name.rfind(":") > name.rfind("/") else name + ":latest"


def pod_images(pod) -> list[str]:
    containers = list(pod.spec.get("initContainers") or ()) + list(pod.spec.get("containers") or ())
    return [normalized_image_name(c.get("image") or "") for c in containers]


def calculate_priority(summed: int, containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * containers
    summed = min(max(summed, MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (summed - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
