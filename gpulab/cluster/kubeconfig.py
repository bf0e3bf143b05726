"""Kubeconfig files for an embedded cluster, and merging into ~/.kube/config the way kind does.

kind writes a cluster, a user and a context all named ``kind-NAME`` into the
user's kubeconfig and makes it current (sigs.k8s.io/kind/pkg/cluster/internal/
kubeconfig); ``gpulab cluster up --merge`` does the same with ``gpulab-NAME``.
"""
from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

from .pki import ClusterPKI
from .privatefiles import write_private


def render(name: str, server: str, pki: ClusterPKI) -> dict:
    entry = f"gpulab-{name}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": entry, "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(pki.ca_cert.read_bytes()).decode()}}],
        "users": [{"name": entry, "user": {"token": pki.token}}],
        "contexts": [{"name": entry, "context": {"cluster": entry, "user": entry}}],
        "current-context": entry,
    }


def write(path: Path, config: dict) -> None:
    """Replace ``path`` with ``config``, readable by its owner only from the first byte (it holds a token)."""
    write_private(path, yaml.safe_dump(config, sort_keys=False))


def user_kubeconfig_path() -> Path:
    first = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return Path(first) if first else Path.home() / ".kube" / "config"


def merge_into(target: Path, config: dict) -> None:
    """Add or replace this cluster's entries in ``target`` and make its context current."""
    existing = {}
    if target.exists():
        existing = yaml.safe_load(target.read_text()) or {}
    existing.setdefault("apiVersion", "v1")
    existing.setdefault("kind", "Config")
    for section in ("clusters", "users", "contexts"):
        new = config[section][0]
        entries = [e for e in existing.get(section) or [] if e.get("name") != new["name"]]
        entries.append(new)
        existing[section] = entries
    existing["current-context"] = config["current-context"]
    target.parent.mkdir(parents=True, exist_ok=True)
    write(target, existing)


def remove_from(target: Path, name: str) -> None:
    """Drop ``gpulab-NAME`` entries from ``target`` (kind delete does this for kind-NAME)."""
    if not target.exists():
        return
    existing = yaml.safe_load(target.read_text()) or {}
    entry = f"gpulab-{name}"
    changed = False
    for section in ("clusters", "users", "contexts"):
        entries = existing.get(section) or []
        kept = [e for e in entries if e.get("name") != entry]
        changed |= len(kept) != len(entries)
        existing[section] = kept
    if existing.get("current-context") == entry:
        existing["current-context"] = ""
        changed = True
    if changed:
        write(target, existing)
