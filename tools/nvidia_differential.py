"""NVIDIA's own config-manager as the judge of the emulation's choice of device plugin config (issue 25, part 1).

For each case (the course's ConfigMaps, a node label or none, ``DEFAULT_CONFIG``, ``FALLBACK_STRATEGIES``) the real
``config-manager`` of NVIDIA/k8s-device-plugin runs against a node of an upstream-engine cluster whose label the
case sets through the API, with the ConfigMap's keys as files, as the operator's sidecar (its last decision, once
its informer has listed the node) and as its init container (``ONESHOT=true``); the emulation decides the same case
with :func:`gpulab.gpustack.deviceplugin.choose_config_name`. They agree when they choose the same config (the
link's target: ``/dev/null`` for the empty config), end with the same exit status and error, and log the same
decision lines. Known differences: klog's line numbers when the binary is not the release the emulation follows,
and the init container deciding before its informer has listed the node (v0.19+ ``SyncableConfig.Get`` returns
at once on its first call), so on a labelled node it takes the unlabelled choice, which the sidecar then replaces
(docs/fidelity.md).

The binary is built by whoever runs this (``go build github.com/NVIDIA/k8s-device-plugin/cmd/config-manager`` in a
module requiring the release); nothing here builds or fetches it.

Usage: ``.venv/bin/python -m tools.nvidia_differential --config-manager PATH [--cluster NAME]``; ends with
``agreement: A/B cases, K known differences, N new`` and exits 1 when N > 0.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from gpulab.gpustack.deviceplugin import CONFIG_LABEL, FALLBACK_STRATEGIES, ConfigManagerError, choose_config_name

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = ROOT / "course" / "manifests"
H100_NODE, A100_NODE = "worker2", "worker3"          # suffixes of the topology's GPU nodes
KLOG = re.compile(r"^[IEWF]\d{4} [\d:.]+\s+\d+ main\.go:(\d+)\] (.*)$")


@dataclass(frozen=True)
class Case:
    name: str
    configs: dict[str, str]
    node: str
    label: str = ""
    default: str = ""
    fallbacks: tuple[str, ...] = FALLBACK_STRATEGIES


def course_configs(manifest: str) -> dict[str, str]:
    return yaml.safe_load((MANIFESTS / manifest).read_text())["data"]


def cases() -> list[Case]:
    ts, mps = course_configs("time-slicing-config.yaml"), course_configs("mps-config.yaml")
    with_default = {**ts, "default": ts["a100-40gb"]}
    return [
        Case("04b: the unlabelled H100, only the A100's key", ts, H100_NODE),
        Case("04b: the A100 labelled a100-40gb", ts, A100_NODE, label="a100-40gb"),
        Case("04c: the unlabelled H100, only the A100's MPS key", mps, H100_NODE),
        Case("a key called default is not picked", with_default, H100_NODE),
        Case("devicePlugin.config.default names the A100's key", ts, H100_NODE, default="a100-40gb"),
        Case("devicePlugin.config.default names no key", ts, H100_NODE, default="nope"),
        Case("a label naming no key", ts, H100_NODE, label="nope"),
        Case("the standalone chart's named,single: the only key", ts, H100_NODE, fallbacks=("named", "single")),
        Case("the standalone chart's named,single: the key called default", with_default, H100_NODE,
             fallbacks=("named", "single")),
    ]


def kubectl(kubeconfig: str, *args: str) -> str:
    return subprocess.run([str(ROOT / ".venv" / "bin" / "kubectl"), "--kubeconfig", kubeconfig, *args],
                          check=True, capture_output=True, text=True).stdout


SIDECAR_SECONDS = 4.0      # long enough for the informer's list and the decision it triggers


def real(binary: str, kubeconfig: str, node: str, case: Case, *, oneshot: bool) -> tuple[str, int, list]:
    """What NVIDIA's program chose (the link's target, "" when it made none), its exit status (0 while a sidecar
    still runs) and the lines (klog line number, message) of its last decision."""
    with tempfile.TemporaryDirectory() as tmp:
        configs, dst = Path(tmp, "available-configs"), Path(tmp, "config", "config.yaml")
        configs.mkdir()
        dst.parent.mkdir()
        for key, text in case.configs.items():
            (configs / key).write_text(text)
        env = {**os.environ, "KUBECONFIG": kubeconfig, "NODE_NAME": node, "NODE_LABEL": CONFIG_LABEL,
               "CONFIG_FILE_SRCDIR": str(configs), "CONFIG_FILE_DST": str(dst), "DEFAULT_CONFIG": case.default,
               "FALLBACK_STRATEGIES": ",".join(case.fallbacks), "ONESHOT": str(oneshot).lower(),
               "SEND_SIGNAL": "false"}
        proc = subprocess.Popen([binary], env=env, stderr=subprocess.PIPE, text=True)
        try:
            _, stderr = proc.communicate(timeout=60 if oneshot else SIDECAR_SECONDS)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
            status = 0
        chosen = os.readlink(dst) if dst.is_symlink() else ""
    lines = [(int(m.group(1)), m.group(2)) for m in map(KLOG.match, stderr.splitlines()) if m]
    starts = [i for i, (_, message) in enumerate(lines) if message.startswith("Label change detected")]
    last = lines[starts[-1]:] if starts else lines
    if status or not chosen:
        return "", status, last                          # an error: whatever it linked before does not count
    return ("/dev/null" if chosen == "/dev/null" else Path(chosen).name), status, last


def emulated(case: Case) -> tuple[str, int, list[tuple[int, str]]]:
    """The emulation's decision for the same case, in the same terms."""
    logged: list[tuple[int, str]] = []
    try:
        name = choose_config_name(case.label, case.default, sorted(case.configs), case.fallbacks,
                                  log=lambda line, message: logged.append((line, message)))
    except ConfigManagerError as err:
        return "", 1, logged + [(208, str(err))]
    return name or "/dev/null", 0, logged


def decision(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The lines that show the choice: past the label change, up to the update (or the error)."""
    return [(n, m) for n, m in lines if not m.startswith(("Waiting for change", "Label change detected",
                                                          "Updating to", "Successfully updated",
                                                          "Already configured"))]


def compare(got: tuple, want: tuple) -> tuple[list[str], list[str]]:
    """(new differences, known differences) between NVIDIA's run ``got`` and the emulation's ``want``."""
    new, known = [], []
    if got[:2] != want[:2]:
        new.append(f"chose {got[0] or 'nothing'} (exit {got[1]}), the emulation {want[0] or 'nothing'} "
                   f"(exit {want[1]})")
    real_lines, emulated_lines = decision(got[2]), decision(want[2])
    if [m for _, m in real_lines] != [m for _, m in emulated_lines]:
        new.append(f"logged {[m for _, m in real_lines]}, the emulation {[m for _, m in emulated_lines]}")
    elif [n for n, _ in real_lines] != [n for n, _ in emulated_lines]:
        known.append(f"klog line numbers {[n for n, _ in real_lines]}, the emulation's (v0.20.0) "
                     f"{[n for n, _ in emulated_lines]}")
    return new, known


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config-manager", required=True, help="NVIDIA's config-manager binary")
    parser.add_argument("--cluster", default="nvidia-differential", help="upstream-engine cluster to use")
    args = parser.parse_args(argv)
    from gpulab import embedded
    from gpulab.upstream import engine

    kubeconfig = str(engine.up(args.cluster, topology_format=embedded.TOPOLOGY, gpu_stack=False))
    agree = known_total = new_total = 0
    all_cases = cases()
    for case in all_cases:
        node = f"{args.cluster}-{case.node}"
        kubectl(kubeconfig, "label", "node", node, f"{CONFIG_LABEL}-")
        if case.label:
            kubectl(kubeconfig, "label", "node", node, f"{CONFIG_LABEL}={case.label}")
        new, known = compare(real(args.config_manager, kubeconfig, node, case, oneshot=False), emulated(case))
        init = real(args.config_manager, kubeconfig, node, case, oneshot=True)
        if init[:2] != emulated(case)[:2]:
            unlabelled = emulated(Case(case.name, case.configs, case.node, "", case.default, case.fallbacks))
            (known if init[:2] == unlabelled[:2] else new).append(
                f"the init container chose {init[0] or 'nothing'} (exit {init[1]}) before its informer listed "
                f"the node's label {case.label!r}")
        agree += not new
        known_total += len(known)
        new_total += len(new)
        print(f"{'agree' if not new else 'DIFFER'}: {case.name}")
        for line in [f"  new: {d}" for d in new] + [f"  known: {d}" for d in known]:
            print(line)
    print(f"agreement: {agree}/{len(all_cases)} cases, {known_total} known differences, {new_total} new")
    return 1 if new_total else 0


if __name__ == "__main__":
    sys.exit(main())
