"""What a process inside one emulated container can see: its environment, files and programs.

The node agent runs no real processes. A container's command is interpreted (see interpreter.py)
against this small world: the environment the kubelet computed, a virtual file system (the image's
/etc files, the kubelet-managed /etc/hosts and /etc/resolv.conf, mounted ConfigMaps and Secrets, the
device nodes and mounts of the device allocation) and the programs of the image (data/images.yaml),
the host programs the device allocation mounted (each with the output it was given) and the utilities
the interpreter itself implements. Native programs may also read the labels of the node the container
runs on (``node_labels``), standing in for programs that read their Node from the API, and its annotations
(``node_annotations``), standing in for programs that probe the host's hardware.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Callable, Generator

from ....contract import NativeProgram
from ..images import Behaviour, Catalog, Image
from .limits import Budget

# What a program generator yields: ("out", text) for output, ("sleep", seconds) to let time pass.
Action = tuple[str, object]
ProgramRun = Callable[..., Generator[Action, None, int]]


@dataclass(frozen=True)
class StopHandler:
    """What PID 1 does on the runtime's stop signal: run ``script`` and exit with ``exit``."""

    script: str = ""
    exit: int = 0


# A program the interpreter knows nothing about exits at once on the stop signal, as a runtime
# that terminates on SIGTERM does (128 + 15).
OPAQUE_STOP = StopHandler("", 143)


@dataclass(frozen=True)
class Program:
    name: str
    kind: str                    # "utility", "behaviour", "mounted", "script", "opaque"
    behaviour: Behaviour | None = None
    output: str = ""             # mounted programs: their fixed stdout
    native: NativeProgram | None = None   # mounted programs the node agent runs natively

    @property
    def stop(self) -> StopHandler | None:
        """None: the program ignores the stop signal (killed when the grace period ends)."""
        if self.kind == "opaque":
            return OPAQUE_STOP
        if self.kind == "behaviour" and self.behaviour.handles_stop:
            return StopHandler(self.behaviour.on_stop_script or "", self.behaviour.on_stop_exit)
        return None


class FileSystem:
    """Files as a dict of absolute path -> text (and permission bits), and the directories that exist."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.modes: dict[str, int] = {}
        self.dirs: set[str] = {"/"}

    @staticmethod
    def normalize(path: str, cwd: str = "/") -> str:
        return posixpath.normpath(posixpath.join(cwd, path)).replace("//", "/")

    def add_file(self, path: str, text: str, mode: int = 0o644) -> None:
        path = self.normalize(path)
        self.files[path] = text
        self.modes[path] = mode
        self.mkdirs(posixpath.dirname(path))

    def executable(self, path: str) -> bool:
        return bool(self.modes.get(path, 0o644) & 0o111)

    def mkdirs(self, path: str) -> None:
        while path not in self.dirs:
            self.dirs.add(path)
            path = posixpath.dirname(path)

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def listdir(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix):].split("/")[0] for p in list(self.files) + list(self.dirs)
                 if p.startswith(prefix) and p != prefix.rstrip("/")}
        return sorted(n for n in names if n)


def _no_labels() -> dict[str, str]:
    return {}


@dataclass
class World:
    """Everything one container's processes share."""

    image: Image
    catalog: Catalog
    env: list[tuple[str, str]]
    files: FileSystem
    hostname: str
    nproc: int
    kernel: str
    workdir: str = "/"
    # Host programs mounted by the device allocation: container path -> stdout by argument line ("" for any other).
    mounted: dict[str, dict[str, str]] = field(default_factory=dict)
    # Mounted host programs run as a native program instead (container path -> the program).
    mounted_native: dict[str, NativeProgram] = field(default_factory=dict)
    # The labels of the node the container runs on, read when asked (they change while a program runs).
    node_labels: Callable[[], dict[str, str]] = _no_labels
    node_annotations: Callable[[], dict[str, str]] = _no_labels
    # The process's virtual clock (seconds since the epoch), advanced by the process driver.
    time: float = 0.0
    # When the node booted, on the same clock (``uptime``): the node agent registering its Node.
    boot_time: float = 0.0
    # How PID 1 reacts to the stop signal (None: ignores it).
    pid1_stop: StopHandler | None = None
    # The ports a program of this container listens on (a serving behaviour's ``serves``), by number.
    listening: dict = field(default_factory=dict)
    # What its programs may consume (limits.py): CPU a slice at a time, memory up to the container's limit.
    budget: Budget = field(default_factory=Budget)

    def find_program(self, argv: list[str], utilities: dict) -> Program | None:
        """The program ``argv`` runs, or None when the image has no such program."""
        name = posixpath.basename(argv[0])
        outputs = self.mounted.get(argv[0]) or next(
            (out for path, out in self.mounted.items() if posixpath.basename(path) == name), None)
        native = self.mounted_native.get(argv[0]) or next(
            (prog for path, prog in self.mounted_native.items() if posixpath.basename(path) == name), None)
        if outputs is not None:
            output = outputs.get(" ".join(argv[1:]), outputs.get("", ""))
            return Program(name, "mounted", output=output, native=native)
        if self.files.read(self.files.normalize(argv[0], self.workdir)) is not None and "/" in argv[0]:
            return Program(argv[0], "script")
        if not self.image.has_program(name):
            return None
        behaviour = self.catalog.behaviours.get(name)
        if behaviour is not None:
            return Program(name, "behaviour", behaviour=behaviour)
        if name in utilities:
            return Program(name, "utility")
        return Program(name, "opaque")

    def listen(self, services) -> None:
        """A serving program has started: its ports accept connections (kubelet/serving.py answers them)."""
        for service in services:
            self.listening[service.port] = service
