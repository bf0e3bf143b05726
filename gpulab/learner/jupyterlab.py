"""JupyterLab for learners and for instructors: what ``make lab`` and ``make instructor`` start.

A learner's JupyterLab shows ``course/`` and ``labs/`` and nothing else of the
repository: its root is a directory holding a link to each (``build/learner/``),
so ``solutions/``, ``grader/`` and the rest lie outside what the server serves,
and the configuration in ``jupyter/`` (added to the server's
``JUPYTER_CONFIG_PATH``) switches off nbgrader's instructor tools for that
server only: the formgrader and course-list server extensions, and the lab
plugins that add the Formgrader, Create Assignment and Course List panels and
the Nbgrader menu. The Validate button stays. An instructor's JupyterLab
serves the whole repository with every nbgrader tool, started in ``grader/``,
nbgrader's course directory.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LEARNER_CONFIG = Path(__file__).resolve().parent / "jupyter"
LEARNER_FOLDERS = ("course", "labs")
START = {"learner": "course/00-setup.ipynb", "instructor": "README.md"}


def learner_root(repository: Path = ROOT) -> Path:
    """``build/learner/`` with a link to each folder a learner works in (made again every time)."""
    root = repository / "build" / "learner"
    root.mkdir(parents=True, exist_ok=True)
    for entry in root.iterdir():
        if entry.name not in LEARNER_FOLDERS:
            raise RuntimeError(f"{entry} is in the learner's root; only {', '.join(LEARNER_FOLDERS)} belong there")
    for folder in LEARNER_FOLDERS:
        link = root / folder
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(repository / folder, target_is_directory=True)
    return root


def command(role: str, port: int, *extra: str, repository: Path = ROOT) -> tuple[list[str], dict[str, str], Path]:
    """(argv, environment, working directory) of the JupyterLab server for ``role`` ("learner" or "instructor")."""
    env = dict(os.environ)
    if role == "learner":
        root, cwd = learner_root(repository), learner_root(repository)
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            [str(LEARNER_CONFIG), *filter(None, [env.get("JUPYTER_CONFIG_PATH")])])
    elif role == "instructor":
        root, cwd = repository, repository / "grader"
    else:
        raise ValueError(f"no role {role!r}: learner or instructor")
    argv = [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", f"--port={port}",
            f"--ServerApp.root_dir={root}", f"--LabApp.default_url=/lab/tree/{START[role]}", *extra]
    if os.geteuid() == 0:    # Jupyter refuses to run as root (containers, CI machines) unless told to
        argv.append("--allow-root")
    return argv, env, cwd


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("role", choices=sorted(START))
    parser.add_argument("--port", type=int, default=8888)
    args, extra = parser.parse_known_args(argv)
    program, env, cwd = command(args.role, args.port, *extra)
    os.chdir(cwd)
    os.execve(program[0], program, env)


if __name__ == "__main__":
    main()
