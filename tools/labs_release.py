"""Make ``labs/`` again: nbgrader's release of ``solutions/`` (``make labs-release``).

The learner-facing labs are never edited by hand: they are what ``nbgrader
generate_assignment`` makes of the source notebooks in ``solutions/``
(solutions replaced by stubs, hidden tests removed, cells locked, checksums
added), with the course's nbgrader configuration
(``grader/nbgrader_config.py``, when present). Run this after editing a
solution notebook; ``tests/test_labs_release.py`` checks that ``labs/`` is
byte for byte what it makes.

Usage: .venv/bin/python tools/labs_release.py
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
LABS = ROOT / "labs"
GRADER_CONFIG = ROOT / "grader" / "nbgrader_config.py"
COURSE_ID = "gpulab"


def lab_names() -> list[str]:
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def release(course: Path) -> Path:
    """Run ``nbgrader generate_assignment`` for every lab in the course directory ``course``; return its release/."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config, PyFileConfigLoader

    shutil.copytree(SOLUTIONS, course / "source")
    config = Config()
    if GRADER_CONFIG.exists():
        config.merge(PyFileConfigLoader(GRADER_CONFIG.name, str(GRADER_CONFIG.parent)).load_config())
    else:
        config.CourseDirectory.course_id = COURSE_ID
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.source_directory = "source"
    config.CourseDirectory.release_directory = "release"
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    # nbgrader creates the gradebook by running the `alembic` program of its own environment.
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{path}"
    try:
        api = NbGraderAPI(config=config)
        for lab in lab_names():
            result = api.generate_assignment(lab, force=True)
            if not result["success"]:
                raise RuntimeError(f"nbgrader generate_assignment {lab} failed:\n{result.get('log', '')}"
                                   f"{result.get('error', '')}")
    finally:
        os.environ["PATH"] = path
    return course / "release"


def files(tree: Path) -> dict[str, bytes]:
    """Every file under ``tree`` (checkpoints left out), by relative path."""
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*"))
            if p.is_file() and ".ipynb_checkpoints" not in p.parts}


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        made = release(Path(scratch) / "course")
        if LABS.exists():
            shutil.rmtree(LABS)
        shutil.copytree(made, LABS)
    print(f"wrote {', '.join(f'labs/{lab}/' for lab in lab_names())}")


if __name__ == "__main__":
    main()
