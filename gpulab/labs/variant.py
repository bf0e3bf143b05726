"""Per-learner variants of the final assessment: its cluster's GPUs drawn from an instructor's secret.

A key published with the repository (``grader/answer_keys.py``, the solutions)
would answer every learner's assessment if every learner's cluster were the
same. So, when the instructor sets a secret, each learner's assessment cluster
differs: how many H100 and A100 GPUs it has and which worker holds which,
drawn with an HMAC of the secret and the learner's id. Answers read from the
cluster (the allocatable GPU count, which node to label, time-slice or run on)
then depend on something the repository does not hold.

Both sides build the same cluster from the same :class:`Variant`:

* the grader derives it from the secret (``$GPULAB_INSTRUCTOR_SECRET``, or the
  file named by ``$GPULAB_INSTRUCTOR_SECRET_FILE``) and nbgrader's student id,
  and grades each submission on a cluster of that topology;
* the learner's ``gpulab lab reset final-assessment`` (and ``nbgrader
  validate``) builds it from ``$GPULAB_ASSESSMENT_VARIANT``, the variant's
  token, which the instructor hands each learner (``gpulab lab variant ID``).
  The token names the topology, not the secret: changing it changes only the
  learner's own cluster, never the one they are graded on.

Without a secret (self-paced), everyone has :data:`DEFAULT`, the course's own
topology, and grading is as it always was.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..gpustack.topology import DEFAULT_TOPOLOGY, GPU_FIELD

SECRET_ENV = "GPULAB_INSTRUCTOR_SECRET"
SECRET_FILE_ENV = "GPULAB_INSTRUCTOR_SECRET_FILE"
VARIANT_ENV = "GPULAB_ASSESSMENT_VARIANT"
MIN_SECRET = 16                 # characters: a secret a learner cannot guess by trying
H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-40GB"
GPU_WORKERS = ("worker2", "worker3")     # the default topology's GPU nodes, ``{cluster}-worker2`` and ``-worker3``
COUNTS = (1, 2, 4, 8)                    # GPUs per node, as servers come
_TOKEN = re.compile(r"H100x(\d+)@(worker\d),A100x(\d+)@(worker\d)")


class VariantError(ValueError):
    """A secret or a variant token that cannot be used; the message says what to do."""


@dataclass(frozen=True)
class Variant:
    h100: int                    # H100 GPUs on the H100 node
    a100: int                    # A100 GPUs on the A100 node
    h100_node: str = "worker2"   # the worker (suffix of the node name) that holds the H100s; the other holds the A100s

    @property
    def a100_node(self) -> str:
        return next(w for w in GPU_WORKERS if w != self.h100_node)

    @property
    def token(self) -> str:
        """What the learner's ``$GPULAB_ASSESSMENT_VARIANT`` holds: ``H100x8@worker2,A100x4@worker3``."""
        return f"H100x{self.h100}@{self.h100_node},A100x{self.a100}@{self.a100_node}"

    @property
    def total(self) -> int:
        return self.h100 + self.a100

    @classmethod
    def parse(cls, token: str) -> "Variant":
        match = _TOKEN.fullmatch(token.strip())
        if (match is None or int(match[1]) not in COUNTS or int(match[3]) not in COUNTS
                or {match[2], match[4]} != set(GPU_WORKERS)):
            raise VariantError(f"{VARIANT_ENV}={token!r} is not a variant of the final assessment (like "
                               f"{DEFAULT.token!r}); set it to the value your instructor gave you, or unset it "
                               "for the course's own cluster")
        return cls(int(match[1]), int(match[3]), match[2])

    def topology(self) -> dict:
        """The course's default topology file with this variant's GPUs, as a document to write."""
        doc = yaml.safe_load(DEFAULT_TOPOLOGY.read_text())
        gpus = {self.h100_node: {"model": H100, "count": self.h100},
                self.a100_node: {"model": A100, "count": self.a100}}
        for node in doc["nodes"]:
            worker = str(node["name"]).rsplit("-", 1)[-1]
            if worker in gpus:
                node[GPU_FIELD] = gpus[worker]
        return doc

    def write_topology(self, directory: Path) -> Path:
        """This variant's topology file in ``directory`` (for ``gpulab cluster up --topology``)."""
        path = Path(directory) / f"assessment-{self.h100}-{self.a100}-{self.h100_node}.yaml"
        path.write_text(yaml.safe_dump(self.topology(), sort_keys=False))
        return path


DEFAULT = Variant(8, 4, "worker2")       # data/default-topology.yaml: what self-paced learners and tests see
# Drawn variants: every count and placement except those whose total a default answer (12) would still give.
VARIANTS = tuple(Variant(h, a, w) for w in GPU_WORKERS for h in COUNTS for a in COUNTS if h + a != DEFAULT.total)


def for_learner(secret: bytes, learner: str, assessment: str = "final-assessment") -> Variant:
    """The variant ``secret`` draws for ``learner``: the same on every machine that holds the secret, and no way
    to tell another learner's, or the secret, from it."""
    digest = hmac.new(secret, f"{assessment}\0{learner}".encode(), hashlib.sha256).digest()
    return VARIANTS[int.from_bytes(digest[:8], "big") % len(VARIANTS)]


def instructor_secret(environ=os.environ) -> bytes | None:
    """The instructor's secret (``$GPULAB_INSTRUCTOR_SECRET`` or the file ``$GPULAB_INSTRUCTOR_SECRET_FILE``
    names); None when neither is set (self-paced: everyone gets :data:`DEFAULT`)."""
    text, source = environ.get(SECRET_ENV), SECRET_ENV
    if not text and environ.get(SECRET_FILE_ENV):
        source = environ[SECRET_FILE_ENV]
        try:
            text = Path(source).read_text().strip()
        except OSError as exc:
            raise VariantError(f"cannot read the instructor's secret from {source} ({SECRET_FILE_ENV}): "
                               f"{exc.strerror}; point {SECRET_FILE_ENV} at a readable file, or unset it") from None
    if not text:
        return None
    if len(text.strip()) < MIN_SECRET:
        raise VariantError(f"the instructor's secret in {source} has {len(text.strip())} characters; use at least "
                           f"{MIN_SECRET} random ones (`python -c 'import secrets; print(secrets.token_hex(32))'`)")
    return text.strip().encode()


def grading_variant(learner: str, environ=os.environ) -> Variant:
    """The variant a learner's final assessment is graded on: drawn from the secret, or :data:`DEFAULT`."""
    secret = instructor_secret(environ)
    return DEFAULT if secret is None else for_learner(secret, learner)


def learner_variant(environ=os.environ) -> Variant:
    """The variant the learner's own cluster is built with: ``$GPULAB_ASSESSMENT_VARIANT``, or :data:`DEFAULT`."""
    token = (environ.get(VARIANT_ENV) or "").strip()
    return Variant.parse(token) if token else DEFAULT
