"""``labs/`` is byte for byte what ``nbgrader generate_assignment`` makes from ``solutions/``.

The learner-facing labs are never edited by hand: they are nbgrader's release
of the source notebooks in ``solutions/`` (solutions replaced by stubs, hidden
tests removed, cells locked, checksums added), made with the course's nbgrader
configuration (``grader/nbgrader_config.py``, when present). This test makes the
release again in a temporary course directory and compares every file.

To refresh ``labs/`` after editing a solution notebook::

    .venv/bin/python tests/test_labs_release.py
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
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*"))
            if p.is_file() and ".ipynb_checkpoints" not in p.parts}


def test_labs_are_exactly_the_nbgrader_release_of_solutions(tmp_path: Path):
    made = files(release(tmp_path / "course"))
    committed = files(LABS)
    assert sorted(committed) == sorted(made), "labs/ lists other files than the release; regenerate it " \
                                               "(python tests/test_labs_release.py)"
    stale = [name for name in made if made[name] != committed[name]]
    assert not stale, f"labs/ differs from nbgrader's release of solutions/ in {stale}; regenerate it " \
                      "(python tests/test_labs_release.py)"


def test_every_lab_has_a_release():
    assert lab_names() == sorted(p.name for p in LABS.iterdir() if p.is_dir())
    for lab in lab_names():
        assert (LABS / lab / f"{lab}.ipynb").exists()


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
