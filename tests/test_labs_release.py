"""``labs/`` is byte for byte what ``nbgrader generate_assignment`` makes from ``solutions/``.

The release is made again in a temporary course directory by ``tools/labs_release.py`` (``make labs-release``
refreshes ``labs/`` the same way) and every file is compared.
"""
from __future__ import annotations

from pathlib import Path

from tools.labs_release import LABS, files, lab_names, release


def test_labs_are_exactly_the_nbgrader_release_of_solutions(tmp_path: Path):
    made = files(release(tmp_path / "course"))
    committed = files(LABS)
    assert sorted(committed) == sorted(made), "labs/ lists other files than the release; regenerate it " \
                                               "(make labs-release)"
    stale = [name for name in made if made[name] != committed[name]]
    assert not stale, f"labs/ differs from nbgrader's release of solutions/ in {stale}; regenerate it " \
                      "(make labs-release)"


def test_every_lab_has_a_release():
    assert lab_names() == sorted(p.name for p in LABS.iterdir() if p.is_dir())
    for lab in lab_names():
        assert (LABS / lab / f"{lab}.ipynb").exists()
