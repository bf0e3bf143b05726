"""Every course module and every lab's solution runs top to bottom on the upstream engine too.

The same notebooks and rules as tests/test_notebooks.py (no cell raises, writes to stderr or prints a failed
command), each on a new cluster of Kubernetes' own control plane (`GPULAB_ENGINE=upstream`, which
`gpulab.connect()` and `gpulab lab reset` honour). Outputs are not compared with the kept ones: the two engines
differ where docs/engines.md says (the release in `kubectl version`, the notes where a command needs a container).
Every graded test cell of a solution passes here as it does on the embedded cluster.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import require_upstream
from tests.test_notebooks import COURSE, SOLUTIONS, command_errors, execute, stderr_outputs

pytestmark = [pytest.mark.upstream, pytest.mark.slow]


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.mark.parametrize("path", COURSE + SOLUTIONS, ids=_id)
def test_runs_top_to_bottom_on_the_upstream_engine(path: Path, tmp_path: Path):
    require_upstream()
    nb, seconds = execute(path, tmp_path, engine="upstream")
    problems = stderr_outputs(nb) + command_errors(nb)
    assert not problems, f"{_id(path)} on the upstream engine:\n" + "\n".join(problems)
