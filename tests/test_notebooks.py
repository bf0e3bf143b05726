"""Every course notebook and every lab's solution runs top to bottom against its own fresh embedded cluster.

The labs' solutions run here through nbclient; the course's modules run under
nbval (``--nbval-lax``, set in pyproject.toml), which also compares the
outputs the narrative quotes (``pod/infer-worker created``, the scheduler's
``FailedScheduling`` words, ``must be an integer``) with the outputs kept in
the committed notebook: those cells are marked ``# NBVAL_CHECK_OUTPUT``, every
other cell is committed without output, and ``tests/nbval-sanitize.cfg``
blanks what changes between runs (ages, pod name suffixes, IPs, ports, UIDs,
timestamps). The root ``conftest.py`` gives each nbval notebook the
environment and the rules of this module. Refresh the kept outputs after a
change with ``make course-outputs`` (this file run as a script).

Each notebook's kernel gets its own ``GPULAB_HOME`` (so its own embedded
cluster, started by the notebook's ``gpulab.connect()``) and its own kubectl
cache, so notebooks run side by side under pytest-xdist. A notebook passes
when no cell raises and no cell writes to stderr: nbgrader scores a graded test
cell with any stderr output as zero, and a red box in a course notebook is
noise the learner cannot act on. The executed copies of the solutions (and how
long each cell took) are kept under ``test-artifacts/notebooks/`` for reading
after a failure; the repository's notebooks are never written by the tests.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
ARTIFACTS = ROOT / "test-artifacts" / "notebooks"
COURSE = sorted((ROOT / "course").glob("*.ipynb"))
SOLUTIONS = sorted((ROOT / "solutions").glob("*/*.ipynb"))
CELL_TIMEOUT = 600
CHECK_OUTPUT = "# NBVAL_CHECK_OUTPUT"


def kernel_env(home: Path, cluster_name: str | None = None, engine: str = "embedded") -> dict[str, str]:
    """The kernel's environment: a fresh GPULAB_HOME, the venv's programs first, no outside cluster; its gpulab
    cluster named ``cluster_name`` if given (its nodes then ``NAME-worker``...), else the default ``gpulab``, on
    ``engine`` (``GPULAB_ENGINE``: what `gpulab.connect()` starts)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "GPULAB_CLUSTER", "GPULAB_CLUSTER_NAME", "GPULAB_ENGINE")}
    env.update(GPULAB_HOME=str(home / "gpulab"), KUBECACHEDIR=str(home / "kubecache"),
               PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}", GPULAB_ENGINE=engine)
    if cluster_name:
        env["GPULAB_CLUSTER_NAME"] = cluster_name
    return env


def execute(path: Path, home: Path, cluster_name: str | None = None,
            engine: str = "embedded") -> tuple[nbformat.NotebookNode, list[float]]:
    """Run a copy of the notebook in its own directory on a new cluster of ``engine``; return it executed, with
    each cell's seconds (one entry per cell, markdown cells included)."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    seconds: list[float] = []
    started = time.monotonic()
    original = client.async_execute_cell

    async def timed(cell, index, **kwargs):
        begun = time.monotonic()
        try:
            return await original(cell, index, **kwargs)
        finally:
            seconds.append(round(time.monotonic() - begun, 2))

    client.async_execute_cell = timed
    try:
        client.execute(env=kernel_env(home, cluster_name, engine))
    finally:
        nb.metadata["gpulab_test"] = {"seconds": round(time.monotonic() - started, 1), "cell_seconds": seconds}
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(ARTIFACTS / f"{path.parent.name}--{cluster_name or 'gpulab'}--{engine}--{path.name}"))
        stop_cluster(home, cluster_name)
    return nb, seconds


def stop_cluster(home: Path, cluster_name: str | None = None) -> None:
    """Delete the notebook's embedded cluster (its server process and state)."""
    subprocess.run([str(VENV_BIN / "gpulab"), "cluster", "reset", "--name", cluster_name or "gpulab"],
                   env=kernel_env(home, cluster_name), capture_output=True, timeout=120)


def stderr_texts(cells) -> list[str]:
    """``cell N (grade_id): text`` for every stderr stream among ``(index, cell, outputs)``."""
    found = []
    for index, cell, outputs in cells:
        grading = cell.get("metadata", {}).get("nbgrader", {})
        for output in outputs:
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                found.append(f"cell {index} ({grading.get('grade_id', '-')}): {output.get('text', '')[:500]}")
    return found


def stderr_outputs(nb: nbformat.NotebookNode, *, graded_only: bool = False) -> list[str]:
    """``cell N (grade_id): text`` for every stderr stream a cell wrote (only nbgrader test cells if asked)."""
    return stderr_texts((index, cell, cell.get("outputs", [])) for index, cell in enumerate(nb.cells)
                        if cell.cell_type == "code"
                        and (not graded_only or cell.get("metadata", {}).get("nbgrader", {}).get("grade")))


# What kubectl (``error: ...``, ``Error from server (...)``) and helm or gpulab (``Error: ...``) print when a command
# fails. gpulab.kubectl prints it on stdout without raising, so a failed command would otherwise pass unnoticed.
COMMAND_ERROR = re.compile(r"^(error: |Error from server|Error: )", re.MULTILINE)


def command_error_lines(index: int, outputs) -> list[str]:
    """``cell N: line`` for every output line in which kubectl, helm or gpulab reports a failed command."""
    found = []
    for output in outputs:
        text = output.get("text", "") if output.get("output_type") == "stream" else ""
        found += [f"cell {index}: {line}" for line in text.splitlines() if COMMAND_ERROR.match(line)]
    return found


def command_errors(nb: nbformat.NotebookNode) -> list[str]:
    return [line for index, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for line in command_error_lines(index, cell.get("outputs", []))]


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.mark.slow
@pytest.mark.parametrize("path", SOLUTIONS, ids=_id)
def test_solution_runs_top_to_bottom_on_a_fresh_cluster(path: Path, tmp_path: Path):
    nb, seconds = execute(path, tmp_path)
    assert not stderr_outputs(nb), f"{_id(path)} wrote to stderr:\n" + "\n".join(stderr_outputs(nb))
    assert not command_errors(nb), f"{_id(path)} ran a command that failed:\n" + "\n".join(command_errors(nb))
    print(f"{_id(path)}: {sum(seconds):.0f}s; slowest cells: "
          + json.dumps(sorted(enumerate(seconds), key=lambda c: -c[1])[:3]))


CELL_LIMIT = float(re.search(r"^c\.Execute\.timeout = (\d+)", (ROOT / "gpulab" / "learner" / "jupyter" /
                                                             "nbgrader_config.py").read_text(), re.M).group(1))
LAB04 = ROOT / "solutions" / "lab04-sharing" / "lab04-sharing.ipynb"


@pytest.mark.slow
def test_lab04_runs_on_a_cluster_of_another_name_each_exercise_cell_well_within_the_cell_limit(tmp_path: Path):
    """Nodes are found by their labels: lab04's solution, run on cluster ``alice`` (nodes ``alice-worker2``...,
    not the ``gpulab-worker2`` of the default cluster), reaches every answer and passes every check. And no
    exercise cell needs more than a sixth of the per-cell limit that Validate and grading share, so a loaded
    machine does not turn a correct answer into a timed-out cell (exercise 7 once waited out a pod's 30 s grace
    period)."""
    nb, seconds = execute(LAB04, tmp_path, cluster_name="alice")
    assert not stderr_outputs(nb), "\n".join(stderr_outputs(nb))
    assert not command_errors(nb), "\n".join(command_errors(nb))
    said = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "PASS lab04.mps_a100" in said and "alice-worker3" in said and "gpulab-worker" not in said
    exercise = [(index, cell.metadata["nbgrader"]["grade_id"], took) for index, (cell, took)
                in enumerate(zip(nb.cells, seconds)) if cell.metadata.get("nbgrader", {}).get("grade_id", "setup")
                not in ("setup", "intro") and cell.cell_type == "code"]
    assert len(exercise) == 24
    slow = [cell for cell in exercise if cell[2] > CELL_LIMIT / 6]
    assert not slow, f"exercise cells over {CELL_LIMIT / 6:g}s of the {CELL_LIMIT:g}s limit: {slow}"


def test_solutions_have_graded_cells_whose_visible_part_is_the_grade():
    """Each lab is an nbgrader source: answer cells and test cells; a test cell's hidden part (if any) calls only
    checks its visible part calls, so the learner's run of the cell agrees with the grade and no exercise's hidden
    test re-checks (and costs points for) another one."""
    assert {p.parent.name for p in SOLUTIONS} == {"lab01-gpu-operator", "lab02-node-pools", "lab03-h100-pod",
                                                   "lab04-sharing", "lab05-gang-scheduling", "lab06-dra", "final-assessment"}
    for path in SOLUTIONS:
        cells = nbformat.read(path, as_version=4).cells
        grading = [c.metadata.get("nbgrader", {}) for c in cells]
        assert grading[1].get("locked") and "gpulab.connect()" in cells[1].source, _id(path)
        assert any(g.get("solution") for g in grading), _id(path)
        tests = [c for c, g in zip(cells, grading) if g.get("grade")]
        assert tests and all("gpulab.checks." in c.source for c in tests), _id(path)
        for cell in tests:
            visible, _, hidden = cell.source.partition("### BEGIN HIDDEN TESTS")
            assert set(re.findall(r'"([a-z0-9]+\.[a-z_0-9]+)"', hidden)) <= \
                set(re.findall(r'"([a-z0-9]+\.[a-z_0-9]+)"', visible)), (_id(path), cell.source)
        assert all(g.get("schema_version") == 3 for g in grading if g), _id(path)


def checks_output(cell) -> bool:
    return cell.cell_type == "code" and cell.source.startswith(CHECK_OUTPUT)


def test_notebooks_are_committed_without_outputs_but_those_the_course_quotes():
    for path in COURSE + SOLUTIONS:
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type != "code":
                continue
            if checks_output(cell):
                assert path in COURSE and cell.outputs and cell.execution_count, \
                    f"{_id(path)} cell {index}: run `make course-outputs`"
            else:
                assert not cell.outputs and cell.execution_count is None, f"{_id(path)} cell {index}: clear the outputs"


def test_the_quoted_outputs_are_the_narratives_words():
    """The kept outputs say what the text around them says; nbval then holds every run to them."""
    kept = {path.stem: "".join(o.get("text", "") for c in nbformat.read(path, as_version=4).cells
                               if checks_output(c) for o in c.outputs) for path in COURSE}
    for module, words in {
        "01-gpu-operator": ["580.105.08", "NVIDIA-H100-80GB-HBM3   8", "595.91.07",
                            "NVIDIA H100 80GB HBM3, 580.105.08, 81559 MiB"],
        "02-node-pools": ["gpulab-worker2", "node/gpulab-worker2 tainted", "untolerated taint",
                          "GPU   DCGM_FI_DEV_GPU_UTIL   DCGM_FI_DEV_FB_USED\n0     0                      0"],
        "03-h100-pod": ["pod/infer-worker created", "didn't match Pod's node affinity/selector",
                        "pod/infer-worker condition met", "Insufficient nvidia.com/gpu", "must be an integer",
                        'Back-off pulling image "registry.example.com/infer:1.0": ErrImagePull: failed to pull and '
                        'unpack image "registry.example.com/infer:1.0"', "lookup registry.example.com",
                        "no such host", "== Triton Inference Server ==", "Triton Server Version 2.54.0",
                        '"Started HTTPService at 0.0.0.0:8000"'],
        "04a-mig": ["GPU   PROFILE   INSTANCE   DCGM_FI_DEV_FB_USED   DCGM_FI_DEV_FB_FREE", "1g.10gb", "mig-worker"],
        "04b-time-slicing": ["NVIDIA-A100-SXM4-40GB-SHARED", "NVIDIA A100-SXM4-40GB, 100 %, 12288 MiB, 40960 MiB",
                             "100                    12288", "gpulab-worker2   8      none",
                             "Attempting fallback strategies: [empty]"],
        "05-gang-scheduling": ["Complete", "podgroups                      scheduling.k8s.io/v1beta1",
                               "PodGroupInitiallyScheduled   True",
                               "train-b workers refused at the filter (Insufficient nvidia.com/gpu): yes"],
        "06-dra": ["cannot allocate all claims", "CEL runtime error", "no such key: memory",
                   "cannot be deployed alongside the standard GPU device plugin on the same node"],
    }.items():
        assert all(word in kept[module] for word in words), (module, words, kept[module])


def test_the_sources_pod_is_its_manifest_verbatim_and_the_real_image_only_adds_to_it():
    """Module 03 shows the source's manifest as the source gives it (its placeholder image included); the serving
    manifest is that pod with a real image, its command and a model repository, nothing else changed."""
    import yaml

    source = yaml.safe_load((ROOT / "course" / "manifests" / "infer-worker.yaml").read_text())
    assert source == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "infer-worker"}, "spec": {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "containers": [{"name": "server", "image": "registry.example.com/infer:1.0",
                        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
    serving = yaml.safe_load((ROOT / "course" / "manifests" / "infer-worker-serving.yaml").read_text())
    container = serving["spec"]["containers"][0]
    assert container.pop("image") == "nvcr.io/nvidia/tritonserver:25.01-py3"
    assert container.pop("args")[0] == "tritonserver" and container.pop("volumeMounts")
    assert serving["spec"].pop("volumes")
    assert serving == {**source, "spec": {**source["spec"], "containers": [
        {k: v for k, v in source["spec"]["containers"][0].items() if k != "image"}]}}
    module = "\n".join(c.source for c in nbformat.read(ROOT / "course" / "03-h100-pod.ipynb", as_version=4).cells)
    assert "!cat manifests/infer-worker.yaml" in module and "ImagePullBackOff" in module


def test_the_wrap_up_and_the_setup_say_what_the_course_is():
    """07 is module 07 and sums up every module (04c and 06 included); its takeaways are the source's words and
    its further learning points to NVIDIA's GPU Operator documentation; 00 names the Kubernetes release the
    embedded cluster reports."""
    from gpulab.cluster.discovery import KUBE_VERSION

    wrap_up = nbformat.read(ROOT / "course" / "07-wrap-up.ipynb", as_version=4).cells
    assert wrap_up[0].source.startswith("# 07 · Wrap-up\n")
    summary = wrap_up[0].source.split("## The common mistakes")[0]
    assert all(f"({m})" in summary or f"module {m}" in summary.lower() for m in ("01", "02", "03", "04c", "05", "06"))
    text = " ".join(" ".join(c.source for c in wrap_up if c.cell_type == "markdown").split())
    assert "MIG gives isolation, time-slicing gives flexibility; pick by latency and tenancy needs" in text
    assert "](https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/index.html)" in text
    minor = ".".join(KUBE_VERSION.lstrip("v").split(".")[:2])
    setup = "\n".join(c.source for c in nbformat.read(ROOT / "course" / "00-setup.ipynb", as_version=4).cells)
    assert f"Kubernetes v{minor}-compatible" in setup
    assert not re.search(r"Kubernetes v1\.\d+-compatible", setup.replace(f"v{minor}-compatible", ""))


def test_a_graded_cell_writing_to_stderr_is_caught(tmp_path: Path):
    """The stderr rule itself: a test cell that writes to stderr is reported, an ordinary cell only when asked."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import sys; sys.stderr.write('ordinary\\n')"),
        nbformat.v4.new_code_cell("import sys; sys.stderr.write('graded\\n')", metadata={"nbgrader": {
            "grade": True, "grade_id": "t1", "locked": True, "points": 1, "schema_version": 3, "solution": False}}),
    ])
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    assert stderr_outputs(nb, graded_only=True) == ["cell 1 (t1): graded\n"]
    assert len(stderr_outputs(nb)) == 2


SOURCE_QUESTIONS = ("Why does the pod request `nvidia.com/gpu: 1` rather than a memory amount?",
                    "What does MIG give you that time-slicing does not?")


def test_check_yourself_questions_are_the_sources_and_the_checks():
    """The wrap-up asks the source's two questions verbatim and prints their options from the checks that judge
    them; the labs print the same options as the checks judge them."""
    from gpulab.checks import lab03, lab04

    wrap_up = nbformat.read(ROOT / "course" / "07-wrap-up.ipynb", as_version=4).cells
    text = "\n".join(c.source for c in wrap_up if c.cell_type == "markdown")
    assert all(question in text for question in SOURCE_QUESTIONS)
    code = "\n".join(c.source for c in wrap_up if c.cell_type == "code")
    assert "lab03.CHECK_YOURSELF" in code and "lab04.CHECK_YOURSELF" in code
    assert '"lab03.check_yourself"' in code and '"lab04.check_yourself"' in code
    for path, questions in ((ROOT / "solutions" / "lab03-h100-pod" / "lab03-h100-pod.ipynb", (lab03.CHECK_YOURSELF,)),
                            (ROOT / "solutions" / "lab04-sharing" / "lab04-sharing.ipynb", (lab04.CHECK_YOURSELF,))):
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
        for question in questions:
            assert all(f"* **({k})** {option}" in text for k, option in question.options.items()), path.name


def test_every_module_ends_with_its_lab_and_every_link_resolves():
    """Module, then its lab: each module's last cell links a lab (00-setup has none); no link points nowhere."""
    link = re.compile(r"\]\(([^)#\s]+\.ipynb)\)")
    for path in COURSE:
        cells = nbformat.read(path, as_version=4).cells
        for cell in cells:
            for target in link.findall(cell.source) if cell.cell_type == "markdown" else []:
                assert (path.parent / target).resolve().is_file(), f"{_id(path)} links {target}"
        if path.stem != "00-setup":
            assert "**Your lab:** [" in cells[-1].source, f"{_id(path)}: end with a link to its lab"
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(((?:course|labs)/[^)\s]+)\)", readme):
        assert (ROOT / target).is_file(), f"README.md links {target}"


def test_a_failed_kubectl_or_helm_command_is_caught():
    """gpulab.kubectl prints a failure without raising: the notebook test must still see it."""
    lines = ["error: --label-columns option cannot be used with custom-columns printer",
             'Error from server (NotFound): pods "x" not found',
             "Error: INSTALLATION FAILED: cannot re-use a name that is still in use",
             'The Pod "half-gpu" is invalid: spec.containers[0].resources.limits[nvidia.com/gpu]: must be an integer',
             "pod/trainer created"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("gpulab.kubectl('...')", outputs=[
        nbformat.v4.new_output("stream", name="stdout", text="\n".join(lines) + "\n")])])
    assert command_errors(nb) == [f"cell 0: {line}" for line in lines[:3]]


def record_course_outputs(paths: list[Path]) -> None:
    """Run each course notebook on a fresh cluster and keep the outputs of its NBVAL_CHECK_OUTPUT cells only."""
    import tempfile

    for path in paths:
        with tempfile.TemporaryDirectory(prefix="gpulab-course-outputs-") as home:
            executed, _ = execute(path, Path(home))
        nb = nbformat.read(path, as_version=4)
        for cell, ran in zip(nb.cells, executed.cells):
            if cell.cell_type == "code":    # nbval compares only cells that have an execution count
                kept = checks_output(cell)
                cell.outputs = ran.outputs if kept else []
                cell.execution_count = ran.execution_count if kept else None
        nbformat.write(nb, str(path))
        print(f"{_id(path)}: kept {sum(checks_output(c) for c in nb.cells)} outputs")


if __name__ == "__main__":
    record_course_outputs([Path(p).resolve() for p in sys.argv[1:]] or COURSE)

