"""pytest hooks for the course's notebooks, which nbval runs as tests (``--nbval-lax``, see pyproject.toml).

nbval starts each notebook's kernel with the test process's environment and
checks only errors and the outputs of ``# NBVAL_CHECK_OUTPUT`` cells. These
hooks give each notebook what tests/test_notebooks.py gives the labs'
solutions: its own ``GPULAB_HOME`` (so its own embedded cluster, deleted after
its last cell) and kubectl cache, and the same rules: a cell fails when it
writes to stderr or prints a failed kubectl, helm or gpulab command.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest


def _notebook_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell"    # nbval's item: one cell of a notebook


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    """The notebook's first cell starts its kernel: start it in the notebook's own environment."""
    notebook = item.parent
    if not _notebook_cell(item) or hasattr(notebook, "gpulab_home"):
        yield
        return
    from tests.test_notebooks import kernel_env

    notebook.gpulab_home = Path(tempfile.mkdtemp(prefix=f"gpulab-nbval-{notebook.path.stem}-"))
    saved, env = dict(os.environ), kernel_env(notebook.gpulab_home)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the notebook's last cell (its kernel stopped), delete its cluster and home."""
    yield
    notebook = item.parent
    if _notebook_cell(item) and (nextitem is None or nextitem.parent is not notebook) \
            and hasattr(notebook, "gpulab_home"):
        from tests.test_notebooks import stop_cluster

        stop_cluster(notebook.gpulab_home)
        shutil.rmtree(notebook.gpulab_home, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A cell that nbval passed still fails if it wrote to stderr or printed a failed command."""
    outcome = yield
    report = outcome.get_result()
    if not (_notebook_cell(item) and call.when == "call" and report.passed):
        return
    from tests.test_notebooks import command_error_lines, stderr_texts

    outputs = item.test_outputs or []
    problems = stderr_texts([(item.cell_num, item.cell, outputs)]) + command_error_lines(item.cell_num, outputs)
    if problems:
        report.outcome = "failed"
        report.longrepr = f"{item.path.name}: " + "\n".join(problems)
