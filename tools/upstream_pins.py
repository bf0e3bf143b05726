"""Write the Go modules under cluster-setup/upstream/ that pin the upstream engine's binaries.

Three wrapper modules, one per upstream project, each a go.mod (and go.sum) of our own that names the release and
lists the programs to build as ``tool`` lines (Go 1.24+), so ``go build <package>`` in that folder builds upstream's
own ``main`` package with every dependency at the version upstream's module asks for:

* ``kubernetes/``: kube-apiserver, kube-controller-manager, kube-scheduler from ``k8s.io/kubernetes``. That
  module's go.mod points each of its staging modules (``k8s.io/api``, ``k8s.io/client-go``, ...) at a folder of its
  own tree; replace directives apply only in the main module, so a module that requires it must replace each one
  with its published twin (``v0.<minor>.<patch>``). The list is taken from the release's own go.mod, never typed.
* ``etcd/``: the etcd server. Its main package lives in etcd's root module, which the proxy no longer publishes for
  3.7, so the wrapper's ``main.go`` is one call to ``etcdmain.Main`` (what etcd's own ``main.go`` does), and the
  sibling modules (api, client, pkg) are pinned to the server's release the way etcd's go.mod pins them to its tree.
* ``kwok/``: kwok (the node and pod lifecycle controller) and kwokctl (which starts the control plane).
* ``scheduler-plugins/``: the scheduler-plugins scheduler (coscheduling), module 05's second scheduler. Its go.mod
  replaces each Kubernetes module with a published version already; the wrapper repeats those lines. The proxy
  serves no release for Kubernetes 1.37 (v0.35.x is refused), so this is the newest it serves, v0.34.7, on
  Kubernetes v1.34.7 libraries: a scheduler three minors behind the API server, which serves every API it reads.

Run it to move to other releases (it edits the three folders, then ``go mod tidy`` fills go.sum); never ``go get -u``:
    python tools/upstream_pins.py [--kubernetes v1.37.2] [--etcd v3.7.0] [--kwok v0.8.0]
"""
from __future__ import annotations

import argparse
import re
import subprocess
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / "cluster-setup" / "upstream"
PROXY = "https://proxy.golang.org"
GO = "1.26.0"        # the go directive of k8s.io/kubernetes v1.37.2 and sigs.k8s.io/kwok v0.8.0

KUBERNETES_TOOLS = ("k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes/cmd/kube-controller-manager",
                    "k8s.io/kubernetes/cmd/kube-scheduler")
KWOK_TOOLS = ("sigs.k8s.io/kwok/cmd/kwok", "sigs.k8s.io/kwok/cmd/kwokctl")
SCHEDULER_PLUGINS_TOOLS = ("sigs.k8s.io/scheduler-plugins/cmd/scheduler", "sigs.k8s.io/scheduler-plugins/cmd/controller")
ETCD_MAIN = '''// The etcd server, as etcd's own main.go starts it (its root module is not published for 3.7).
package main

import (
\t"os"

\t"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
'''


def module_file(module: str, version: str) -> str:
    with urllib.request.urlopen(f"{PROXY}/{module}/@v/{version}.mod", timeout=60) as response:
        return response.read().decode()


def staging_modules(gomod: str) -> list[str]:
    """The modules k8s.io/kubernetes's go.mod replaces with folders of its staging tree (``X => ./staging/...``)."""
    return re.findall(r"^\s*(k8s\.io/[\w.-]+) => \./staging/", gomod, re.M)


def sibling_replacements(gomod: str, prefix: str) -> list[str]:
    """The modules a go.mod replaces with folders of its own repository whose path starts with ``prefix``."""
    return re.findall(rf"^\s*({re.escape(prefix)}[\w./-]+) => \.\./", gomod, re.M)


def published_replacements(gomod: str) -> list[tuple[str, str]]:
    """(module, version) for each ``X => X vN`` line of a go.mod (replacements by published versions)."""
    return re.findall(r"^(?:replace)?\s*([\w./-]+) => \1 (v\S+)", gomod, re.M)


def write_module(folder: Path, module: str, requires: list[tuple[str, str]], replaces: list[tuple[str, str]],
                 tools: tuple[str, ...] = ()) -> None:
    lines = ["// Written by tools/upstream_pins.py; run it again to change a release, never `go get -u`.",
             f"module {module}", "", f"go {GO}", "", "require ("]
    lines += [f"\t{name} {version}" for name, version in requires] + [")", ""]
    if replaces:
        lines += ["replace ("] + [f"\t{name} => {name} {version}" for name, version in replaces] + [")", ""]
    if tools:
        lines += ["tool ("] + [f"\t{tool}" for tool in tools] + [")", ""]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "go.mod").write_text("\n".join(lines))
    tidy(folder)


def tidy(folder: Path) -> None:
    """``go mod tidy``; where the proxy refuses a replacement's version (it serves some patch releases of a module
    and not others), the next patch release it serves is put in its place and tidy runs again."""
    while True:
        out = subprocess.run(["go", "mod", "tidy"], cwd=folder, capture_output=True, text=True)
        if out.returncode == 0:
            return
        refused = re.search(r"proxy\.golang\.org/([\w./-]+)/@v/(v\d+\.\d+)\.(\d+)\.mod: 403", out.stderr)
        if not refused:
            raise SystemExit(f"go mod tidy failed in {folder}:\n{out.stderr}")
        module, minor, patch = refused.group(1), refused.group(2), int(refused.group(3))
        listed = subprocess.run(["go", "list", "-m", "-versions", module], cwd=folder, capture_output=True,
                                text=True).stdout.split()[1:]
        later = sorted(int(v.rsplit(".", 1)[1]) for v in listed
                       if v.startswith(minor + ".") and v.rsplit(".", 1)[1].isdigit() and int(v.rsplit(".", 1)[1]) > patch)
        if not later:
            raise SystemExit(f"the module proxy serves no {module} {minor}.x after {minor}.{patch}")
        gomod = folder / "go.mod"
        gomod.write_text(gomod.read_text().replace(f"{module} => {module} {minor}.{patch}",
                                                   f"{module} => {module} {minor}.{later[0]}"))
        print(f"{folder.name}: {module} {minor}.{patch} is not served; using {minor}.{later[0]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubernetes", default="v1.37.2")
    parser.add_argument("--etcd", default="v3.7.0")
    parser.add_argument("--kwok", default="v0.8.0")
    parser.add_argument("--scheduler-plugins", default="v0.34.7")
    args = parser.parse_args()

    staging = "v0." + args.kubernetes.removeprefix("v1.")
    names = staging_modules(module_file("k8s.io/kubernetes", args.kubernetes))
    write_module(UPSTREAM / "kubernetes", "gpulab.dev/upstream/kubernetes", [("k8s.io/kubernetes", args.kubernetes)],
                 [(name, staging) for name in names], KUBERNETES_TOOLS)

    server = "go.etcd.io/etcd/server/v3"
    siblings = sibling_replacements(module_file(server, args.etcd), "go.etcd.io/etcd/")
    (UPSTREAM / "etcd").mkdir(parents=True, exist_ok=True)
    (UPSTREAM / "etcd" / "main.go").write_text(ETCD_MAIN)
    write_module(UPSTREAM / "etcd", "gpulab.dev/upstream/etcd", [(server, args.etcd)],
                 [(name, args.etcd) for name in siblings])

    write_module(UPSTREAM / "kwok", "gpulab.dev/upstream/kwok", [("sigs.k8s.io/kwok", args.kwok)], [], KWOK_TOOLS)

    plugins = "sigs.k8s.io/scheduler-plugins"
    write_module(UPSTREAM / "scheduler-plugins", "gpulab.dev/upstream/scheduler-plugins",
                 [(plugins, args.scheduler_plugins)],
                 published_replacements(module_file(plugins, args.scheduler_plugins)), SCHEDULER_PLUGINS_TOOLS)
    print(f"pinned kubernetes {args.kubernetes} ({len(names)} staging modules at {staging}), etcd {args.etcd}, "
          f"kwok {args.kwok}, scheduler-plugins {args.scheduler_plugins} in {UPSTREAM.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
