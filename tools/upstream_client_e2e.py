"""Run the official Python client's own e2e suite (``kubernetes/e2e_test`` and ``kubernetes/aio/e2e_test`` of
kubernetes-client/python) against a private cluster of either engine and print its pass counts.

Nothing is downloaded: SOURCE is a copy of that repository fetched beforehand (a work tree, or a bare git
directory such as the ``fetch`` tool's mirror, read with ``git archive``). The suite imports itself as
``kubernetes.e2e_test``, so the copy's test packages are appended to the installed client's package path rather
than installed over it. A test that never finishes (the suite has no timeouts of its own) is counted as hung and
the rest of its file is run again without it. The counts are recorded in docs/fidelity.md; this is not part of
``make test``.

    .venv/bin/python -m tools.upstream_client_e2e /work/.mirror/kubernetes-client+python/repo [--engine upstream]

``--engine upstream`` runs the same suite against Kubernetes' own control plane (``gpulab cluster up --engine
upstream``), so a failure that both engines share is told apart from one of the embedded cluster's own.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SUITES = ("kubernetes/e2e_test", "kubernetes/aio/e2e_test")
CONFTEST = '''import os
import kubernetes
import kubernetes.aio
here = os.path.dirname(os.path.abspath(__file__))
kubernetes.__path__.append(os.path.join(here, "kubernetes"))
kubernetes.aio.__path__.append(os.path.join(here, "kubernetes", "aio"))
'''
RESULT = re.compile(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)")
STARTED = re.compile(r"^(\S+::\S+) ")


def extract(source: Path, into: Path) -> None:
    """Copy the two test packages out of a work tree or a bare git directory."""
    if (source / SUITES[0]).is_dir():
        for suite in SUITES:
            shutil.copytree(source / suite, into / suite)
        return
    # File by file rather than ``git archive``: a mirror may lack blobs elsewhere in the tree (its largest
    # files), and ``git archive`` stops at the first one it cannot read even when a pathspec leaves it out.
    git = ["git", "--git-dir", str(source)]
    names = subprocess.run([*git, "ls-tree", "-r", "--name-only", "HEAD", *SUITES], check=True, capture_output=True,
                           text=True).stdout.split()
    for name in names:
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(subprocess.run([*git, "show", f"HEAD:{name}"], check=True, capture_output=True).stdout)


def run_file(root: Path, path: str, env: dict, timeout: float) -> dict[str, str]:
    """Each test of one file and its outcome; a test still running at the timeout is HUNG and skipped next time."""
    outcomes: dict[str, str] = {}
    while True:
        deselect = [f"--deselect={node}" for node in outcomes]
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "--import-mode=importlib", path,
               *deselect]
        try:
            out = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout).stdout
            hung = False
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            hung = True
        started = None
        for line in out.splitlines():
            if m := RESULT.match(line):
                outcomes[m.group(1)] = m.group(2)
                started = None
            elif (m := STARTED.match(line)) and m.group(1) not in outcomes:
                started = m.group(1)
        if not hung:
            return outcomes
        if started is None:
            outcomes[f"{path}::<collection>"] = "HUNG"
            return outcomes
        outcomes[started] = "HUNG"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a fetched copy of kubernetes-client/python")
    parser.add_argument("--engine", choices=("embedded", "upstream"), default="embedded",
                        help="the cluster the suite runs against (default: embedded)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds one test file may run")
    args = parser.parse_args(argv)
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="client-e2e-") as tmp:
        root, home = Path(tmp, "suite"), Path(tmp, "home")
        root.mkdir()
        extract(args.source, root)
        (root / "conftest.py").write_text(CONFTEST)
        env = {**os.environ, "GPULAB_HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        gpulab = [str(bin_dir / "gpulab"), "cluster"]
        up = subprocess.run([*gpulab, "up", "--engine", args.engine], env=env, capture_output=True, text=True, check=True)
        env["KUBECONFIG"] = up.stdout.strip().splitlines()[-1]
        try:
            outcomes: dict[str, str] = {}
            for path in sorted(str(p.relative_to(root)) for p in root.glob("kubernetes/**/test_*.py")):
                outcomes.update(run_file(root, path, env, args.timeout))
        finally:
            subprocess.run([*gpulab, "reset"], env=env, capture_output=True)
    for node, outcome in sorted(outcomes.items()):
        if outcome != "PASSED":
            print(f"{outcome:8} {node}")
    counts = {o: sum(1 for v in outcomes.values() if v == o) for o in sorted(set(outcomes.values()))}
    print(f"{len(outcomes)} tests: " + ", ".join(f"{n} {o.lower()}" for o, n in counts.items()))
    return 0 if set(counts) <= {"PASSED", "SKIPPED"} else 1


if __name__ == "__main__":
    sys.exit(main())
