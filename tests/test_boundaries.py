"""The architecture's boundaries (docs/architecture.md), read from the source itself.

* ``gpulab/cluster/`` knows no GPUs: no file in it (code, comments, data) names NVIDIA, as
  ``grep -ril nvidia gpulab/cluster`` would find (compiled ``__pycache__`` files left behind are not source).
* The parts that drive a cluster (``gpustack``, ``checks``, ``learner``, ``labs``, ``setup`` and the client
  module they share) never import ``gpulab.cluster``: they reach a cluster only through its API.
* ``gpulab.cluster`` imports none of them; of the rest of gpulab only ``gpulab.contract``, which imports
  nothing but the standard library.

Imports are read with ``ast`` (relative imports resolved against the importing module; ``import_module`` calls
with a literal name count too), so an import inside a function counts as much as one at the top.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

PACKAGE = ROOT / "gpulab"
CLUSTER = "gpulab.cluster"
CLIENT_SIDE = ("gpulab.gpustack", "gpulab.checks", "gpulab.learner", "gpulab.labs", "gpulab.setup",
               "gpulab.kubeclient", "gpulab.helmcli")
CONTRACT = "gpulab.contract"


def sources(package: str) -> list[Path]:
    base = ROOT.joinpath(*package.split("."))
    if base.with_suffix(".py").is_file():
        return [base.with_suffix(".py")]
    return sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, name: str | None = None) -> set[str]:
    """Every module ``path`` (module ``name``) imports (for ``from X import a``: X and X.a, a may be a module)."""
    name = name or module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == \
                "import_module" and node.args and isinstance(node.args[0], ast.Constant):
            found.add(str(node.args[0].value))
    return found


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_cluster_names_no_gpu_vendor():
    files = [p for p in (PACKAGE / "cluster").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) > 100        # the whole tree, data files included
    naming = [str(p.relative_to(ROOT)) for p in files if b"nvidia" in p.read_bytes().lower()]
    assert naming == []


@pytest.mark.parametrize("package", CLIENT_SIDE)
def test_the_client_side_reaches_the_cluster_only_through_its_api(package):
    offending = {str(p.relative_to(ROOT)): sorted(m for m in imported(p) if within(m, CLUSTER))
                 for p in sources(package)}
    assert {path: mods for path, mods in offending.items() if mods} == {}


def test_the_cluster_imports_only_itself_and_the_contract():
    offending = {}
    for path in sources(CLUSTER):
        outside = sorted(m for m in imported(path) if within(m, "gpulab") and m != "gpulab"
                         and not within(m, CLUSTER) and not within(m, CONTRACT))
        if outside:
            offending[str(path.relative_to(ROOT))] = outside
    assert offending == {}


def test_the_contract_needs_only_the_standard_library():
    (path,) = sources(CONTRACT)
    modules = {m.split(".")[0] for m in imported(path)} - {"__future__"}
    assert modules and modules <= set(sys.stdlib_module_names)


def test_the_scan_sees_imports_of_every_kind(tmp_path):
    """The reader itself: absolute, relative, inside functions, ``from .. import module`` and import_module."""
    probe = tmp_path / "probe.py"
    probe.write_text("import gpulab.cluster.api\nfrom .. import cluster\n\n\ndef f():\n    from ..cluster.topology "
                     "import NodeSpec\n    import importlib\n    importlib.import_module('gpulab.cluster.serve')\n")
    assert {m for m in imported(probe, "gpulab.setup.probe") if within(m, CLUSTER)} == {
        "gpulab.cluster.api", "gpulab.cluster", "gpulab.cluster.topology", "gpulab.cluster.topology.NodeSpec",
        "gpulab.cluster.serve"}
