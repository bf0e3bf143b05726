"""Run Kubernetes' own kubectl command tests (``test/cmd`` of k8s.io/kubernetes) against a fresh gpulab cluster of
either engine and print each test function's outcome.

Upstream runs them with ``hack/make-rules/test-cmd.sh``, which builds and starts its own etcd, kube-apiserver and
kube-controller-manager, creates a kubelet-less Node named ``127.0.0.1``, and calls ``runTests`` of
``test/cmd/legacy-script.sh``: a prelude (the ``kube_flags`` arrays, the template field names, the ``default``
namespace and ``kubernetes`` Service checks), then each ``run_*`` function through ``record_command`` in a subshell,
all on that one server. This runner keeps everything but the server: it copies the scripts, ``hack/lib`` and the
test data out of the read-only module cache, starts a gpulab cluster (``gpulab cluster up --engine E``) whose one
node is that ``127.0.0.1``, and runs upstream's own ``runTests`` once per function, in order, on that cluster, in a
fresh bash whose ``WHAT`` names a one-line shim that calls the function. So the prelude, ``record_command`` and the
final ``kube::test::clear_all`` are upstream's code; a function passes when that bash exits 0.

What differs from upstream's server, on both engines alike: the user is the cluster's own admin (the kubeconfig's
context renamed ``test``, the context the scripts set namespaces on), not the ``admin-token`` of
``hack/testdata/auth-tokens.csv``, which neither engine's apiserver is started with; the node is tainted so pods stay
Pending, as without scheduler and kubelet; ``ALLOW_SKEW`` is set because the project's kubectl is a patch release
behind the server (``--match-server-version`` compares them exactly); the functions in :data:`SKIPPED` cannot run
here. The counts are recorded in docs/fidelity.md; this is not part of ``make test``.

    .venv/bin/python -m tools.kubectl_cmd_tests --engine embedded [--only run_pod_tests ...]
"""
from __future__ import annotations

import argparse
import base64
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

KUBERNETES = Path("/root/go/pkg/mod/k8s.io/kubernetes@v1.37.2")
COPIED = ("hack/lib", "hack/testdata", "test/cmd", "test/fixtures", "test/e2e/testing-manifests",
          "third_party/forked/shell2junit")
# test-cmd.sh's create_node names its Node so; it has no kubelet and its server no scheduler, so pods stay Pending
# there. The taint keeps them Pending here too, on both engines (the scripts only look at taints of their own keys).
TOPOLOGY = """nodes:
- name: 127.0.0.1
  role: control-plane
  taints: [{key: gpulab.dev/test-cmd-no-kubelet, effect: NoSchedule}]
"""
CONTEXT = "test"                                                    # legacy-script.sh's setup() names it so
# Functions that cannot run here whatever the engine: skipped unless named with --only.
SKIPPED = {
    "run_convert_tests": "needs kubectl-convert, a separate binary the project does not install",
    "run_multi_resources_tests": "creates from a raw.githubusercontent.com URL; this machine has no network",
}
RECORDED = re.compile(r"^\s*record_command (run_\w+)", re.MULTILINE)
# Upstream's runTests with WHAT=gpulab runs only ``record_command run_gpulab_tests``: the shim calls the function,
# and stops a ``kubectl proxy`` the function left running when it failed (it would hold juLog's output pipe open).
# ``kube_flags_with_token`` is the admin's credentials again on upstream's server (the context's user is the
# admin-token); where the kubeconfig's admin is a token too (the embedded cluster's), that token replaces it, as a
# client certificate (the upstream engine's admin) makes the extra token moot.
DRIVER = """set -o errexit -o nounset -o pipefail
export LANG=C
KUBE_ROOT=$(pwd)
source hack/lib/init.sh
source hack/lib/test.sh
source test/cmd/legacy-script.sh
kube::util::ensure-temp-dir
SED=sed    # GNU sed; ensure-gnu-sed's own check can lose its pipe to SIGPIPE under pipefail and fail at random
CONTEXT=%s
SUPPORTED_RESOURCES=("*")
target=$1
run_gpulab_tests() {
  trap stop-proxy EXIT
  if [[ -n ${GPULAB_ADMIN_TOKEN:-} ]]; then    # the admin's own token where upstream's is admin-token
    kube_flags_with_token=("${kube_flags_with_token[@]/#--token=admin-token/--token=${GPULAB_ADMIN_TOKEN}}")
  fi
  "$target"
}
WHAT=gpulab runTests
""" % CONTEXT


def functions(root: Path) -> list[str]:
    """The functions runTests records, in its order (the canary that checks record_command itself left out)."""
    return RECORDED.findall((root / "test/cmd/legacy-script.sh").read_text())


def scripts(root: Path) -> dict[str, str]:
    """Which test/cmd script defines each function."""
    defined = re.compile(r"^(?:function\s+)?(run_\w+)\s*\(\)", re.MULTILINE)
    return {fn: path.name for path in sorted((root / "test/cmd").glob("*.sh"))
            for fn in defined.findall(path.read_text())}


def copy_tree(into: Path) -> None:
    if not (KUBERNETES / "test/cmd").is_dir():
        raise SystemExit(f"{KUBERNETES} is not in the Go module cache: run `go mod download "
                         "k8s.io/kubernetes@v1.37.2` (any module that requires it) first")
    for rel in COPIED:
        shutil.copytree(KUBERNETES / rel, into / rel, symlinks=True)
    for path in into.rglob("*"):
        if path.is_symlink():
            continue
        mode = path.stat().st_mode | 0o200
        if path.is_file() and path.read_bytes()[:2] == b"#!":
            mode |= 0o111    # a module zip keeps no modes: the scripts git has executable (the plugin fixtures)
        path.chmod(mode)
    (into / "_output/bin").mkdir(parents=True)
    beside = Path(sys.executable).parent / "kubectl"     # the project's own, as the tests find it
    kubectl = str(beside) if beside.exists() else shutil.which("kubectl")
    if kubectl is None:
        raise SystemExit("kubectl is not on PATH: run from the project's .venv (make install puts it there)")
    (into / "_output/bin/kubectl").symlink_to(kubectl)
    (into / "gpulab-driver.sh").write_text(DRIVER)


def test_kubeconfig(source: Path) -> tuple[dict, str]:
    """The cluster's kubeconfig with its context renamed ``test``, and the apiserver's port."""
    config = yaml.safe_load(source.read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    context["name"] = CONTEXT
    config["contexts"] = [context]
    config["current-context"] = CONTEXT
    server = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])["cluster"]["server"]
    return config, server.rsplit(":", 1)[1].strip("/")


def first_failure(log: str) -> str:
    """The first failed assertion or error of a function's output, a few lines of it."""
    log = log[log.find("Recording: run_gpulab_tests"):]      # after the canary that checks record_command
    lines = [re.sub(r"\x1b\[[0-9;]*m|\x1b\(B", "", line) for line in log.splitlines()]
    for i, line in enumerate(lines):
        if "FAIL!" in line:
            return " | ".join(x.strip() for x in lines[i:i + 4] if x.strip())
        if "Call tree:" in line:    # errexit: the command before the trace failed; its first frame says where
            before = [x.strip() for x in lines[max(0, i - 3):i] if x.strip()]
            return " | ".join([*before, lines[i + 1].split("]", 1)[-1].strip() if i + 1 < len(lines) else ""])
    tail = [x for x in lines if x.strip() and not x.startswith("+++")]
    return " | ".join(tail[-3:])


def prepare_home(home: Path, config: dict, port: str) -> dict:
    """What setup() of legacy-script.sh leaves for the functions, shared by all of them in turn as upstream shares
    it: a HOME whose kubeconfig has the ``test`` context (functions move it to their namespaces), the server's
    certificate in TMPDIR, and the environment they read."""
    (home / ".kube").mkdir(parents=True)
    (home / ".kube/config").write_text(yaml.safe_dump(config))
    # test-cmd.sh's apiserver writes its serving certificate into $TMPDIR (--cert-dir); the scripts read it there
    cluster = config["clusters"][0]["cluster"]
    (home / "apiserver.crt").write_bytes(base64.b64decode(cluster.get("certificate-authority-data", "")))
    env = {k: v for k, v in os.environ.items() if k not in {"KUBECONFIG", "KUBE_TEMP"}}
    env.update(GPULAB_ADMIN_TOKEN=config["users"][0]["user"].get("token", ""), HOME=str(home), TMPDIR=str(home),
               SECURE_API_PORT=port, ALLOW_SKEW="true", KUBE_JUNIT_REPORT_DIR=str(home / "junit"), TERM="xterm")
    return env


def run_function(root: Path, name: str, env: dict, logs: Path, timeout: float) -> tuple[str, str]:
    """One function through upstream's runTests in its own bash: passed, failed or timeout, and why."""
    try:
        proc = subprocess.run(["bash", "gpulab-driver.sh", name], cwd=root, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout, start_new_session=True)
        out, outcome = proc.stdout, "passed" if proc.returncode == 0 else "failed"
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        outcome = "timeout"
    (logs / f"{name}.log").write_text(out)
    return outcome, "" if outcome == "passed" else first_failure(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("embedded", "upstream"), default="embedded")
    parser.add_argument("--only", nargs="+", metavar="FUNC", help="run these functions only")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one function may run")
    parser.add_argument("--logs", type=Path, help="keep each function's output here (default: discarded)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))     # a stopped run still resets its cluster
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="kubectl-cmd-") as tmp:
        root, gpulab_home = Path(tmp, "kubernetes"), Path(tmp, "gpulab")
        copy_tree(root)
        names, where = functions(root), scripts(root)
        if args.only:
            unknown = sorted(set(args.only) - set(names))
            if unknown:
                raise SystemExit(f"not recorded by runTests: {', '.join(unknown)}; known: {', '.join(names)}")
            names = [n for n in names if n in args.only]
        logs = args.logs or Path(tmp, "logs")
        logs.mkdir(parents=True, exist_ok=True)
        topology = Path(tmp, "topology.yaml")
        topology.write_text(TOPOLOGY)
        env = {**os.environ, "GPULAB_HOME": str(gpulab_home), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        cluster = [str(bin_dir / "gpulab"), "cluster"]
        name = f"kcmd-{args.engine}"
        up = subprocess.run([*cluster, "up", "--name", name, "--engine", args.engine, "--topology", str(topology),
                             "--no-gpu-stack"], env=env, capture_output=True, text=True)
        if up.returncode:
            raise SystemExit(f"gpulab cluster up failed:\n{up.stderr}")
        config, port = test_kubeconfig(Path(up.stdout.strip().splitlines()[-1]))
        run_env = prepare_home(Path(tmp, "home"), config, port)
        results = {}
        try:
            for fn in names:
                if fn in SKIPPED and not args.only:
                    print(f"skipped  {0:6.1f}s {fn}  -- {SKIPPED[fn]}", flush=True)
                    continue
                start = time.monotonic()
                outcome, why = run_function(root, fn, run_env, logs, args.timeout)
                results[fn] = outcome
                print(f"{outcome:8} {time.monotonic() - start:6.1f}s {fn}" + (f"  -- {why[:400]}" if why else ""),
                      flush=True)
        finally:
            subprocess.run([*cluster, "reset", "--name", name], env=env, capture_output=True)
    return report(args.engine, results, where, len(names))


def report(engine: str, results: dict[str, str], where: dict[str, str], total: int) -> int:
    """Counts per script, then overall; exit status 1 unless every function run passed."""
    per_script: dict[str, list[str]] = {}
    for fn, outcome in results.items():
        per_script.setdefault(where.get(fn, "?"), []).append(outcome)
    for script, outcomes in sorted(per_script.items()):
        print(f"{script:28} {outcomes.count('passed')}/{len(outcomes)} passed")
    passed = sum(1 for o in results.values() if o == "passed")
    skipped = f", {total - len(results)} skipped" if total > len(results) else ""
    print(f"{engine}: {passed}/{len(results)} functions passed{skipped}")
    return 0 if passed == len(results) else 1

if __name__ == "__main__":
    sys.exit(main())
