"""The corpus: cases as data, read from ``cases/*.yaml``.

A file names its ``area`` and holds ``cases`` (each written out) and ``families`` (a case template and ``vars``, one
case per combination of their values: every kind times every output form, say). A case has ``steps``, whose
outputs are compared, and optional ``setup`` and ``cleanup`` steps, which run but are not compared. A step is one
of::

    kubectl: get pods -o wide        # the real kubectl; `stdin:` feeds it, `until:` retries until stdout matches
    api: {method: GET, path: /api/v1/namespaces/${ns}/pods, query: {limit: 1}, keep: [kind, items.*.metadata.name]}
    gpulab: install gpu-operator ...  # the gpulab command, as a learner runs it
    sleep: 2

and may say which parts to compare (``compare: [stdout, rc]``; an API step's parts are ``status`` and ``body``) and
``sort: true`` where upstream promises no order (a table's header stays first; ``sort: lines`` sorts every line). ``${ns}`` is the case's own namespace (the kubeconfig's context
namespace while it runs, so most commands need no ``-n``); a family's ``${var}`` is its value in that case.

A difference that is deliberate or not yet closed is recorded where the case is: ``known: <why>`` on the case, or
in the file's ``known:`` map from case name to why. The harness then reports it as known, not new; a known case
that agrees again is reported too, so the mark can be removed.
"""
from __future__ import annotations

import itertools
import re
import shlex
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CASES = Path(__file__).parent / "cases"
STEP_KINDS = ("kubectl", "api", "gpulab", "sleep")
STEP_KEYS = {*STEP_KINDS, "stdin", "until", "timeout", "compare", "sort", "save"}
CASE_KEYS = {"name", "area", "setup", "steps", "cleanup", "known", "namespace", "vars"}
FILE_KEYS = {"area", "cases", "families", "known", "about"}
_VAR = re.compile(r"\$\{(\w+)\}")


class CorpusError(ValueError):
    """A case file the harness cannot run; the message names the file and the case."""


@dataclass(frozen=True)
class Step:
    kind: str                  # one of STEP_KINDS
    spec: object               # the kubectl or gpulab arguments, the API request, the seconds to sleep
    stdin: str | None = None
    until: str | None = None   # a regular expression stdout must match; the step is retried until it does
    timeout: float = 60.0
    compare: tuple = ()        # the parts compared; empty: every part
    sort: bool | str = False   # True: the lines under a header; "lines": every line
    save: dict = field(default_factory=dict)    # API steps: variable -> path in the response body

    def args(self, variables: dict) -> list[str]:
        """The command's arguments with ``${var}`` filled in."""
        return [substitute(a, variables) for a in (self.spec if isinstance(self.spec, list) else split(self.spec))]

    def describe(self) -> str:
        if self.kind == "api":
            return f"api {self.spec.get('method', 'GET')} {self.spec['path']}"
        spec = self.spec if isinstance(self.spec, str) else " ".join(map(str, self.spec))
        return f"{self.kind} {spec}"


@dataclass(frozen=True)
class Case:
    id: str                    # <file stem>/<name>
    area: str
    steps: tuple
    setup: tuple = ()
    cleanup: tuple = ()
    known: str | None = None   # why this case is expected to differ
    namespace: bool = True     # run in a namespace of its own

    @property
    def ns(self) -> str:
        """The case's namespace: its name, shortened to a DNS label when needed."""
        name = re.sub(r"[^a-z0-9-]+", "-", self.id.split("/", 1)[1].lower()).strip("-")
        if len(name) > 50:
            name = f"{name[:40]}-{zlib.crc32(name.encode()):08x}"
        return f"d-{name}"


def split(command: str) -> list[str]:
    """A command line split as a shell splits it, quotes and all, except that a backslash stays itself: kubectl's
    arguments escape dots with it (``{.status.allocatable.nvidia\\.com/gpu}``), as a learner types them."""
    lexer = shlex.shlex(command, posix=True)
    lexer.whitespace_split = True
    lexer.escape = ""
    return list(lexer)


def substitute(value, variables: dict):
    """``value`` (a string, or a list or dict of them) with every ``${var}`` replaced by its value."""
    if isinstance(value, str):
        whole = _VAR.fullmatch(value)
        if whole and whole.group(1) in variables and not isinstance(variables[whole.group(1)], str):
            return variables[whole.group(1)]       # a value that is a mapping or a list stays one
        return _VAR.sub(lambda m: str(variables[m.group(1)]) if m.group(1) in variables else m.group(0), value)
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value


def _step(raw: dict, where: str) -> Step:
    if not isinstance(raw, dict):
        raise CorpusError(f"{where}: a step is a mapping, not {raw!r}")
    kinds = [k for k in STEP_KINDS if k in raw]
    unknown = set(raw) - STEP_KEYS
    if len(kinds) != 1 or unknown:
        raise CorpusError(f"{where}: a step names exactly one of {STEP_KINDS} (got {sorted(raw)})")
    kind = kinds[0]
    compare = raw.get("compare", ())
    sort = raw.get("sort", False)
    if sort not in (True, False, "lines"):
        raise CorpusError(f"{where}: sort is true, false or lines (got {sort!r})")
    return Step(kind=kind, spec=raw[kind], stdin=raw.get("stdin"), until=raw.get("until"),
                timeout=float(raw.get("timeout", 60)), compare=tuple(compare), sort=sort,
                save=raw.get("save") or {})


def _case(raw: dict, stem: str, area: str, known: dict, where: str) -> Case:
    unknown = set(raw) - CASE_KEYS
    if unknown or "name" not in raw or not raw.get("steps"):
        raise CorpusError(f"{where}: a case has a name and steps (unknown keys: {sorted(unknown)})")
    name = raw["name"]
    steps = {part: tuple(_step(s, f"{where} {name} {part}") for s in raw.get(part) or ())
             for part in ("setup", "steps", "cleanup")}
    return Case(id=f"{stem}/{name}", area=raw.get("area", area), steps=steps["steps"], setup=steps["setup"],
                cleanup=steps["cleanup"], known=raw.get("known") or known.get(name),
                namespace=raw.get("namespace", True))


def _expand(family: dict) -> list[dict]:
    """One case per combination of the family's ``vars``, their values filled into its name and steps."""
    variables = family.get("vars") or {}
    names = list(variables)
    cases = []
    for values in itertools.product(*(variables[n] for n in names)):
        bound = {}
        for name, value in zip(names, values):
            if isinstance(value, dict):       # a value with fields of its own: ${kind} and ${kind_manifest}
                bound[name] = value["name"]
                bound.update({f"{name}_{k}": v for k, v in value.items()})
            else:
                bound[name] = value
        case = {k: v for k, v in family.items() if k != "vars"}
        cases.append(substitute(case, bound))
    return cases


def load_file(path: Path) -> list[Case]:
    doc = yaml.safe_load(path.read_text()) or {}
    unknown = set(doc) - FILE_KEYS
    if unknown or "area" not in doc:
        raise CorpusError(f"{path.name}: a case file has an area (unknown keys: {sorted(unknown)})")
    known = doc.get("known") or {}
    raws = list(doc.get("cases") or [])
    for family in doc.get("families") or []:
        raws += _expand(family)
    cases = [_case(raw, path.stem, doc["area"], known, path.name) for raw in raws]
    ids = [c.id for c in cases]
    duplicated = {i for i in ids if ids.count(i) > 1}
    stale = set(known) - {c.id.split("/", 1)[1] for c in cases}
    if duplicated or stale:
        raise CorpusError(f"{path.name}: duplicated cases {sorted(duplicated)}, known marks of no case {sorted(stale)}")
    return cases


def load(directory: Path = CASES) -> list[Case]:
    """Every case, in file order: files run in name order, so a file may build on the state an earlier one left."""
    return [case for path in sorted(directory.glob("*.yaml")) for case in load_file(path)]
