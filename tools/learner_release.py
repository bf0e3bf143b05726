"""Make the learner release: this repository as learners get it, without solutions or answer keys.

A learner works in a checkout of their own, and JupyterLab's terminal reads
every file in it: in a checkout of this repository that includes
``solutions/`` (every ``### BEGIN SOLUTION``), ``grader/answer_keys.py`` (the
final assessment's keys) and ``tests/`` (which make each mistake and pass each
solution). The release is the committed tree (``git archive HEAD``) without
those: the course, the released labs and the package, enough for the README's
learner path (``make lab``). Instructors keep this repository; learners get
the release (``make learner-release``; publish ``dist/gpulab-learner/``).

Usage: .venv/bin/python tools/learner_release.py [DEST]   (default dist/gpulab-learner)
"""
from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What only instructors and the project's own tests need: solutions, answer keys, the grader's course directory,
# the tests and tools that read them.
WITHHELD = ("solutions/", "grader/", "tests/", "conftest.py", "tools/", "bench/", ".ci/")
DEFAULT = ROOT / "dist" / "gpulab-learner"


def withheld(path: str) -> bool:
    """Whether an archive member (``grader`` for the folder itself, ``grader/README.md`` in it) is withheld."""
    return any(f"{path}/".startswith(w) if w.endswith("/") else path == w for w in WITHHELD)


def release(dest: Path) -> Path:
    """Write the committed tree, less what is withheld, into ``dest`` (replaced); return it."""
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = [m for m in tar.getmembers() if not withheld(m.name)]
        tar.extractall(dest, members=members, filter="data")
    return dest


if __name__ == "__main__":
    print(release(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
