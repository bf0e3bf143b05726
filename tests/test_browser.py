"""The course as a learner meets it: JupyterLab in a browser, a lab run, a Check button clicked.

JupyterLab serves a copy of a lab's solution notebook from a temporary
directory (so nothing in the repository is saved over) with its own
``GPULAB_HOME``, hence its own embedded cluster. Headless Chromium (Debian's
``chromium`` package, driven through Playwright's Python API; no browser is
downloaded) opens the notebook, runs all cells, clicks the Check button of
``lab01.operator_pinned`` and reads the verdict the widget renders. The page is
kept as ``test-artifacts/browser-lab01.png``. The latency explorer gets the same
treatment from a one-cell notebook: its MPS choice and curves render and redraw
(``test-artifacts/browser-latency-explorer.png``).

A second test starts JupyterLab as ``make lab`` and ``make instructor`` do
(``gpulab.learner.jupyterlab``) and looks at what each shows: the learner's has
``course/`` and ``labs/`` only and none of nbgrader's instructor tools, the
instructor's has them.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
LAB = "lab01-gpu-operator"
NOTEBOOK = ROOT / "solutions" / LAB / f"{LAB}.ipynb"
SCREENSHOT = ROOT / "test-artifacts" / "browser-lab01.png"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
RUN_TIMEOUT_MS = 420_000

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("Chromium not found: install Debian's chromium (apt-get install chromium)")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lab_env(home: Path) -> dict[str, str]:
    """JupyterLab's (and so its kernels') environment: private homes for gpulab, kubectl and Jupyter."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GPULAB_CLUSTER", "GPULAB_CLUSTER_NAME")}
    env.update(GPULAB_HOME=str(home / "gpulab"), KUBECACHEDIR=str(home / "kubecache"),
               JUPYTER_CONFIG_DIR=str(home / "jupyter-config"), JUPYTER_DATA_DIR=str(home / "jupyter-data"),
               JUPYTER_RUNTIME_DIR=str(home / "jupyter-runtime"), IPYTHONDIR=str(home / "ipython"),
               PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}")
    return env


def wait_for_server(url: str, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer {url} within {timeout:g}s")


def start(argv: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> subprocess.Popen:
    with log_path.open("wb") as log:    # the server keeps its own copy of the file descriptor
        return subprocess.Popen(argv, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


def private_lab_flags(tmp_path: Path, token: str) -> list[str]:
    return ["--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}", f"--LabApp.user_settings_dir={tmp_path / 'settings'}",
            "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]


@pytest.fixture
def jupyterlab(tmp_path: Path):
    """JupyterLab on a free port, serving a directory that holds a copy of the lab; yields (base URL, token)."""
    with serving(tmp_path, NOTEBOOK) as lab:
        yield lab


@contextmanager
def serving(tmp_path: Path, notebook: Path):
    """JupyterLab on a free port, serving a directory that holds a copy of ``notebook``; gives (base URL, token)."""
    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(notebook, served / notebook.name)
    port, token = free_port(), secrets.token_hex(16)
    env = lab_env(tmp_path)
    process = start([str(VENV_BIN / "jupyter"), "lab", "--no-browser", "--allow-root", f"--port={port}",
                     f"--ServerApp.root_dir={served}", *private_lab_flags(tmp_path, token)],
                    env, served, tmp_path / "jupyterlab.log")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(f"{base}/api/status?token={token}", process)
        yield base, token
    finally:
        stop(process)
        subprocess.run([str(VENV_BIN / "gpulab"), "cluster", "reset"], env=env, capture_output=True, timeout=120)


def accept_kernel_dialog(page) -> None:
    """JupyterLab may ask which kernel to start for the notebook; take the one it proposes (Python 3)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    try:
        dialog.wait_for(timeout=5_000)
    except PlaywrightTimeout:
        return
    dialog.get_by_role("button", name="Select", exact=True).click()


def run_all_cells(page, base: str, token: str, name: str) -> None:
    """Open notebook ``name``, run all its cells, wait until each has run, and assert none wrote to stderr."""
    from playwright.sync_api import expect

    page.goto(f"{base}/lab/tree/{name}?token={token}")
    expect(page.locator(".jp-Notebook .jp-Cell").first).to_be_visible(timeout=120_000)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_have_count(1, timeout=120_000)
    accept_kernel_dialog(page)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    accept_kernel_dialog(page)

    # Every code cell has run once its prompt shows a number: [*] is running, [ ] not run yet.
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        prompts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
        if prompts and all(p.strip().strip("[]:").isdigit() for p in prompts):
            break
        time.sleep(1)
    else:
        raise AssertionError(f"the notebook did not finish running: prompts {prompts}")
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert errors.count() == 0, errors.all_inner_texts()


def test_a_lab_runs_in_jupyterlab_and_its_check_button_gives_a_verdict(jupyterlab):
    executable = chromium()
    from playwright.sync_api import expect, sync_playwright

    base, token = jupyterlab
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            run_all_cells(page, base, token, NOTEBOOK.name)
            widget = page.locator(".widget-vbox", has=page.locator("b", has_text="lab01.operator_pinned")).last
            widget.get_by_role("button", name="Check").click()
            verdict = widget.locator(".gpulab-result")
            expect(verdict).to_be_visible(timeout=60_000)
            verdict.scroll_into_view_if_needed()
            text = verdict.inner_text()
            assert "Passed" in text and "lab01.operator_pinned" in text, text
            assert "pins driver.version=580.105.08" in text, text
        finally:
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=False)
            browser.close()


def test_the_latency_explorer_offers_mps_and_redraws_without_it(tmp_path: Path):
    executable = chromium()
    import nbformat
    from playwright.sync_api import expect, sync_playwright

    notebook = tmp_path / "latency-explorer.ipynb"
    cell = nbformat.v4.new_code_cell("from gpulab import widgets\nwidgets.latency_explorer()")
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbformat.write(nbformat.v4.new_notebook(cells=[cell], metadata=kernel), notebook)
    with serving(tmp_path, notebook) as (base, token), sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            run_all_cells(page, base, token, notebook.name)
            boxes = [page.get_by_role("checkbox", name=label) for label in ("time-slicing", "MPS", "MIG", "whole GPU")]
            for box in boxes:
                expect(box).to_be_checked(timeout=60_000)
            expect(page.locator(".widget-slider", has_text="MPS threads %")).to_be_visible()
            image = page.locator("img.widget-image")
            expect(image).to_have_count(1)
            image.scroll_into_view_if_needed()
            assert image.evaluate("img => img.complete && img.naturalWidth") == 720     # 7.5 in at 96 dpi
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT.with_name("browser-latency-explorer.png")), full_page=False)
            drawn = image.get_attribute("src")
            boxes[1].uncheck()
            expect(image).not_to_have_attribute("src", drawn, timeout=60_000)
        finally:
            browser.close()


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def what_jupyterlab_shows(role: str, tmp_path: Path, page) -> dict:
    """Start JupyterLab as ``make lab``/``make instructor`` would; what its file browser, menus, palette and
    server offer."""
    from playwright.sync_api import expect

    from gpulab.learner.jupyterlab import command

    port, token = free_port(), secrets.token_hex(16)
    argv, make_env, cwd = command(role, port, *private_lab_flags(tmp_path / role, token))
    env = {**lab_env(tmp_path / role), **{k: v for k, v in make_env.items() if k == "JUPYTER_CONFIG_PATH"}}
    process = start(argv, env, cwd, tmp_path / f"{role}.log")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(f"{base}/api/status?token={token}", process)
        page.goto(f"{base}/lab?token={token}")
        items = page.locator(".jp-DirListing-content .jp-DirListing-itemText")
        expect(items.first).to_be_visible(timeout=120_000)
        expect(page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Help$"))).to_be_visible()
        menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        page.keyboard.press("Control+Shift+C")
        palette = page.locator(".lm-CommandPalette-input")
        expect(palette).to_be_visible()
        palette.fill("nbgrader")
        commands = page.locator(".lm-CommandPalette-item .lm-CommandPalette-itemLabel").all_inner_texts()
        return {"files": sorted(items.all_inner_texts()), "menus": menus, "commands": commands,
                "formgrader": http_status(f"{base}/formgrader?token={token}"),
                "solutions": http_status(f"{base}/api/contents/solutions?token={token}")}
    finally:
        stop(process)


def test_learners_see_course_and_labs_without_instructor_tools_and_instructors_have_them(tmp_path: Path):
    executable = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            learner = what_jupyterlab_shows("learner", tmp_path, page)
            page.screenshot(path=str(SCREENSHOT.with_name("browser-learner.png")))
            instructor = what_jupyterlab_shows("instructor", tmp_path, page)
        finally:
            browser.close()
    assert learner["files"] == ["course", "labs"], learner
    assert learner["solutions"] == 404 and learner["formgrader"] == 404, learner
    assert "Nbgrader" not in learner["menus"], learner
    assert not {"Formgrader", "Create Assignment", "Course List"} & set(learner["commands"]), learner
    # the same browser sees them where they are switched on
    assert {"course", "labs", "solutions", "grader"} <= set(instructor["files"]), instructor
    assert "Nbgrader" in instructor["menus"] and "Formgrader" in instructor["commands"], instructor
    assert instructor["formgrader"] == 200 and instructor["solutions"] == 200, instructor

