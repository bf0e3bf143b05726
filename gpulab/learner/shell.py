"""``kubectl`` from a notebook cell, printing exactly what kubectl prints.

The upstream binary runs against the connected cluster (``KUBECONFIG`` of
:func:`~gpulab.learner.connection.connect`). Its stdout and stderr are passed
through unchanged, merged in the order kubectl wrote them (as a terminal shows
them), and printed to the cell's *stdout*: an error such as
``Error from server (NotFound): pods "x" not found`` is still readable, but it
cannot zero a graded cell, which nbgrader does for any stderr output.
``!kubectl`` works too; this adds the connection, ``input=`` for manifests and
``capture=True`` for code that reads the output.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass

from . import nodeagent
from .connection import current, kubectl_binary


@dataclass(frozen=True)
class KubectlResult:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class KubectlError(RuntimeError):
    """kubectl exited non-zero and the caller asked for ``check=True``."""

    def __init__(self, args: tuple[str, ...], returncode: int, output: str):
        super().__init__(f"kubectl {shlex.join(args)} exited with {returncode}:\n{output.rstrip()}")
        self.returncode = returncode
        self.output = output


def kubectl(*args: str, input: str | None = None, capture: bool = False, check: bool = False,
            timeout: float = 120) -> KubectlResult | None:
    """Run kubectl against the connected cluster.

    ``kubectl("get nodes -o wide")`` and ``kubectl("get", "nodes", "-o", "wide")``
    are the same (a single argument is split like a shell would; a leading
    ``kubectl`` is dropped). By default the output is printed and nothing is
    returned; ``capture=True`` prints nothing and returns a
    :class:`KubectlResult`; ``check=True`` raises :class:`KubectlError` when
    kubectl fails.
    """
    argv = _argv(args)
    connection = current()
    command = [kubectl_binary()]
    if connection.context:
        command.append(f"--context={connection.context}")
    command += argv
    env = dict(os.environ)
    if connection.kubeconfig is not None:
        env["KUBECONFIG"] = str(connection.kubeconfig)
    if capture:
        proc = subprocess.run(command, input=input, capture_output=True, text=True, errors="replace", env=env,
                              timeout=timeout)
        result = KubectlResult(tuple(argv), proc.returncode, proc.stdout, proc.stderr)
        if check and not result.ok:
            raise KubectlError(result.args, result.returncode, result.stdout + result.stderr)
        return result
    note = nodeagent.explain_wait(argv, connection.api_client)
    if note:
        sys.stdout.write(note)
        return None
    proc = subprocess.run(command, input=input, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", env=env, timeout=timeout)
    output = proc.stdout
    if proc.returncode != 0:     # a node without a node agent (KWOK's): say so, not the API server's dial error
        output = nodeagent.explain(shlex.join(argv), output, connection.api_client) or output
    if output:
        sys.stdout.write(output)
        sys.stdout.flush()
    if check and proc.returncode != 0:
        raise KubectlError(tuple(argv), proc.returncode, proc.stdout)
    return None


def _argv(args: tuple[str, ...]) -> list[str]:
    argv = shlex.split(args[0]) if len(args) == 1 else [str(a) for a in args]
    if argv and argv[0] == "kubectl":
        argv = argv[1:]
    return argv
