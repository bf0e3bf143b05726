"""The embedded cluster held to what the upstream engine answers: a sample of the differential corpus on both.

``python -m tools.differential`` runs the whole corpus (docs/differential.md); here every Nth case runs
(``GPULAB_DIFFERENTIAL_EVERY``, default 6; 1 runs them all), with the GPU stack's install that later cases build on.
A case the corpus does not mark as a known difference must agree: one that agreed and starts to differ fails the
test with both outputs side by side. Skipped where the upstream engine is not built (failed under CI).
"""
from __future__ import annotations

import os

from tests.conftest import require_upstream
from tools.differential.corpus import load
from tools.differential.report import differences
from tools.differential.runner import compare

ALWAYS = ("45-gpu-stack/install-gpu-operator",)    # the state the scheduler and course cases start from


def sample(cases: list, every: int) -> list:
    return [c for i, c in enumerate(cases) if i % every == 0 or c.id in ALWAYS]


def test_no_case_differs_that_the_corpus_does_not_explain(tmp_path):
    require_upstream()
    cases = sample(load(), int(os.environ.get("GPULAB_DIFFERENTIAL_EVERY", "6")))
    verdicts = compare(cases, root=tmp_path)
    new = [v for v in verdicts if v.outcome == "new"]
    report = "\n".join(f"{v.case.id} [{v.case.area}]\n" + "\n".join(differences(v)) for v in new)
    assert not new, f"{len(new)} of {len(verdicts)} cases differ between the engines:\n{report}"
