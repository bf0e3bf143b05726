"""``make upstream``: build the upstream engine's programs from the Go modules pinned in ``cluster-setup/upstream/``.

Each program is upstream's own ``main`` package, built by the Go toolchain from the module proxy's sources at the
versions the wrapper modules pin (``tools/upstream_pins.py`` writes them): kube-apiserver, kube-controller-manager
and kube-scheduler from ``k8s.io/kubernetes``, etcd, kwok with kwokctl, and the scheduler-plugins scheduler (module 05's coscheduling). Go's module and build caches make a
second build cheap; on top of that a stamp (the hash of every go.mod, go.sum and the flags) skips even the links
when nothing changed, so ``make test`` on a warm machine pays nothing.

The version flags are the ones upstream's release scripts set (Kubernetes' ``hack/lib/version.sh`` for
``k8s.io/component-base/version`` and ``k8s.io/client-go/pkg/version``, kwok's ``hack/releases.sh`` for its
``consts``), so ``kubectl version`` reports the pinned release as a released binary would; ``CGO_ENABLED=0`` as
Kubernetes builds its server binaries.

Usage: ``python -m gpulab.upstream.build [--force]``; the binaries land in :data:`BIN` (``build/upstream/bin``, or
``$GPULAB_UPSTREAM_BIN``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / "cluster-setup" / "upstream"
BIN_ENV = "GPULAB_UPSTREAM_BIN"
MIN_GO = (1, 26)
GO_INSTALL = "https://go.dev/doc/install"


def bin_dir() -> Path:
    """Where the built programs are: ``$GPULAB_UPSTREAM_BIN``, else ``build/upstream/bin`` in the checkout."""
    return Path(os.environ.get(BIN_ENV) or ROOT / "build" / "upstream" / "bin")


@dataclass(frozen=True)
class Program:
    name: str
    module: str          # the wrapper module's folder under cluster-setup/upstream/
    package: str         # what `go build` builds there


PROGRAMS = (
    Program("kube-apiserver", "kubernetes", "k8s.io/kubernetes/cmd/kube-apiserver"),
    Program("kube-controller-manager", "kubernetes", "k8s.io/kubernetes/cmd/kube-controller-manager"),
    Program("kube-scheduler", "kubernetes", "k8s.io/kubernetes/cmd/kube-scheduler"),
    Program("etcd", "etcd", "."),
    Program("kwok", "kwok", "sigs.k8s.io/kwok/cmd/kwok"),
    Program("kwokctl", "kwok", "sigs.k8s.io/kwok/cmd/kwokctl"),
    Program("scheduler-plugins-scheduler", "scheduler-plugins", "sigs.k8s.io/scheduler-plugins/cmd/scheduler"),
    Program("scheduler-plugins-controller", "scheduler-plugins", "sigs.k8s.io/scheduler-plugins/cmd/controller"),
)


class BuildError(RuntimeError):
    """The programs cannot be built here; the message says what to do."""


def pinned(module: str, path: str) -> str:
    """The version of ``path`` that the wrapper module ``module`` requires (read from its go.mod)."""
    text = (MODULES / module / "go.mod").read_text()
    found = re.search(rf"^(?:require)?\s*{re.escape(path)} (v\S+)", text, re.M)
    if not found:
        raise BuildError(f"{MODULES / module / 'go.mod'} does not require {path}; run tools/upstream_pins.py")
    return found.group(1)


def versions() -> dict[str, str]:
    """The pinned releases: kubernetes, etcd, kwok and scheduler-plugins."""
    return {"kubernetes": pinned("kubernetes", "k8s.io/kubernetes"),
            "etcd": pinned("etcd", "go.etcd.io/etcd/server/v3"),
            "kwok": pinned("kwok", "sigs.k8s.io/kwok"),
            "scheduler-plugins": pinned("scheduler-plugins", "sigs.k8s.io/scheduler-plugins")}


def go_binary() -> str:
    """The ``go`` command, after checking it is there and new enough."""
    go = shutil.which("go")
    if not go:
        raise BuildError(f"Go is not installed (no `go` on PATH): the upstream engine's control plane is built "
                         f"from source with Go {MIN_GO[0]}.{MIN_GO[1]} or newer. Install it ({GO_INSTALL}), then "
                         "run `make upstream`. Without it, the course runs on the embedded cluster.")
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True)
    found = re.match(r"go(\d+)\.(\d+)", out.stdout.strip())
    if out.returncode != 0 or not found:
        raise BuildError(f"`go env GOVERSION` failed ({out.stderr.strip() or out.stdout.strip()}): is Go installed "
                         f"correctly? See {GO_INSTALL}.")
    if tuple(map(int, found.groups())) < MIN_GO:
        raise BuildError(f"{out.stdout.strip()} is too old: Kubernetes {versions()['kubernetes']} needs Go "
                         f"{MIN_GO[0]}.{MIN_GO[1]} or newer ({GO_INSTALL}); then run `make upstream`.")
    return go


def _ldflags(program: Program, pins: dict[str, str], release_time: str) -> str:
    """The version flags of ``program``'s module (the same for every program of a module)."""
    if program.module == "kubernetes":
        release = pins["kubernetes"]
        major, minor = release.lstrip("v").split(".")[:2]
        values = {"gitVersion": release, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean",
                  "buildDate": release_time}
        return " ".join(f"-X {package}.{key}={value}" for package in
                        ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
                        for key, value in values.items())
    if program.module == "kwok":
        return (f"-X sigs.k8s.io/kwok/pkg/consts.Version={pins['kwok'].lstrip('v')} "
                f"-X sigs.k8s.io/kwok/pkg/consts.KubeVersion={pins['kubernetes'].lstrip('v')}")
    return ""


def _release_time(go: str) -> str:
    """When the pinned Kubernetes release was published (the module proxy's record), as Kubernetes' buildDate."""
    out = subprocess.run([go, "list", "-m", "-json", "k8s.io/kubernetes"], cwd=MODULES / "kubernetes",
                         capture_output=True, text=True)
    try:
        return json.loads(out.stdout)["Time"].replace(".000", "")
    except (ValueError, KeyError):
        return "1970-01-01T00:00:00Z"


def _fingerprint() -> str:
    """What the binaries are built from: every wrapper module's files and each program's package and flags."""
    digest = hashlib.sha256()
    for path in sorted(MODULES.glob("*/go.*")) + sorted(MODULES.glob("*/*.go")):
        digest.update(str(path.relative_to(MODULES)).encode() + path.read_bytes())
    pins = versions()
    digest.update(json.dumps([(p.name, p.module, p.package, _ldflags(p, pins, "")) for p in PROGRAMS]).encode())
    return digest.hexdigest()


def stamp_path() -> Path:
    return bin_dir() / "build.json"


def built() -> bool:
    """Whether every program is built from the current pins."""
    try:
        stamp = json.loads(stamp_path().read_text())
    except (OSError, ValueError):
        return False
    return stamp.get("fingerprint") == _fingerprint() and all((bin_dir() / p.name).exists() for p in PROGRAMS)


def build(force: bool = False, log=print) -> Path:
    """Build every program unless already built from the current pins; the folder that holds them."""
    if built() and not force:
        log(f"upstream binaries up to date in {bin_dir()}")
        return bin_dir()
    go = go_binary()
    pins = versions()
    target = bin_dir()
    target.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0"}
    release_time = _release_time(go)
    started = time.monotonic()
    for module in dict.fromkeys(p.module for p in PROGRAMS):
        programs = [p for p in PROGRAMS if p.module == module]
        log(f"building {', '.join(p.name for p in programs)} ({module} {pins[module]}) ...")
        staging = target / f".{module}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        command = [go, "build", "-trimpath", "-o", str(staging) + "/"]
        flags = _ldflags(programs[0], pins, release_time)
        if flags:
            command += ["-ldflags", flags]
        out = subprocess.run(command + [p.package for p in programs], cwd=MODULES / module, env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            detail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-15:])
            raise BuildError(f"building {module} failed (go build exit status {out.returncode}):\n{detail}\nThe "
                             f"module proxy must be reachable for a first build (GOPROXY, now "
                             f"{os.environ.get('GOPROXY') or 'the default'}); fix the error above, then run `make "
                             "upstream` again.")
        for program in programs:        # go names each binary after its package's last element
            built_as = Path(program.package).name if program.package != "." else module
            (staging / built_as).replace(target / program.name)
        staging.rmdir()
    stamp_path().write_text(json.dumps({"fingerprint": _fingerprint(), "versions": pins,
                                        "seconds": round(time.monotonic() - started, 1)}, indent=2))
    log(f"upstream binaries built in {time.monotonic() - started:.0f}s: {target}")
    return target


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpulab.upstream.build", description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when the stamp says up to date")
    parser.add_argument("--if-go", action="store_true",
                        help="(make test) without Go, say so and succeed, so the rest of the suite runs; under CI "
                             "(CI=true) a missing Go still fails")
    args = parser.parse_args(argv)
    if args.if_go and not shutil.which("go") and not under_ci():
        print("note: Go is not installed, so the upstream engine (Kubernetes built from source) is not built and "
              "its tests are skipped; install Go 1.26+ (https://go.dev/doc/install) to run them.", file=sys.stderr)
        return 0
    try:
        build(force=args.force)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
