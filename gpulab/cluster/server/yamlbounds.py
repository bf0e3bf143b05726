"""YAML request bodies, refused before expansion when their aliases would multiply the work.

kube-apiserver converts YAML with sigs.k8s.io/yaml over go-yaml v2, whose
decoder (decode.go ``unmarshal``/``alias``/``merge``/``allowedAliasRatio``)
counts every node it decodes and every node it reaches through an alias, and
fails with ``yaml: document contains excessive aliasing`` once more than 100
aliased and 1,000 total decodes have happened and the aliased share exceeds
the allowed ratio (99% up to 400,000 decodes, falling linearly to 10% at
4,000,000). An alias inside the node it names fails with
``anchor 'x' value contains itself``.

PyYAML shares an anchored node between its uses instead of copying it, so
loading a "billion laughs" document is cheap, but everything after it
(validation, copies, JSON) walks the expanded tree. :func:`check` applies
go-yaml's rule to the composed node graph before anything is constructed,
without walking the expansion: an aliased subtree adds its expanded size at
once (memoised per node). That gives go-yaml's verdict, because inside an
alias both counts grow together, so the aliased share only rises while the
allowed ratio only falls: if the limit is crossed anywhere inside, it is
crossed at the end. No YAML library offers this check.
"""
from __future__ import annotations

import yaml

_MERGE_TAG = "tag:yaml.org,2002:merge"
_RANGE_LOW, _RANGE_HIGH = 400_000, 4_000_000


class AliasError(yaml.YAMLError):
    """go-yaml refuses the document; ``problem`` carries its words (no line: go-yaml gives none)."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = None


def allowed_alias_ratio(decodes: int) -> float:
    """go-yaml v2 allowedAliasRatio."""
    if decodes <= _RANGE_LOW:
        return 0.99
    if decodes >= _RANGE_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((decodes - _RANGE_LOW) / (_RANGE_HIGH - _RANGE_LOW))


class _Decoder:
    """go-yaml's decodeCount/aliasCount over PyYAML's node graph.

    PyYAML gives an alias the anchored node object itself, so in document order the first occurrence of a
    node is its definition and any later one an alias; a node met again while it is still open contains
    itself.
    """

    def __init__(self, raw: bytes | str):
        self.raw = raw
        self.decodes = 0
        self.aliased = 0
        self._state: dict[int, bool] = {}  # id(node) -> finished
        self._aliases: set[tuple[int, int]] = set()  # (id(parent), position) occurrences that are aliases
        self._sizes: dict[int, int] = {}

    def _count(self, n: int, aliased: bool) -> None:
        self.decodes += n
        if aliased:
            self.aliased += n
        if self.aliased > 100 and self.decodes > 1000 and \
                self.aliased / self.decodes > allowed_alias_ratio(self.decodes):
            raise AliasError("document contains excessive aliasing")

    def document(self, node: yaml.Node) -> None:
        self._count(1, False)  # the document node
        self._occurrence(None, 0, node)

    def _occurrence(self, parent: yaml.Node | None, position: int, node: yaml.Node) -> None:
        state = self._state.get(id(node))
        if state is None:
            self._define(node)
            return
        if not state:
            raise AliasError(f"anchor '{_self_referencing_anchor(self.raw)}' value contains itself")
        self._aliases.add((id(parent), position))
        self._count(1, False)  # the alias node
        self._count(self._expanded(node), True)

    def _define(self, node: yaml.Node) -> None:
        self._state[id(node)] = False
        self._count(1, False)
        for position, child, counted in _children(node):
            if not counted:  # a merged sequence: go-yaml decodes its items, not the sequence itself
                self._state[id(child)] = True
                for i, item, _ in _children(child):
                    self._occurrence(child, i, item)
                continue
            self._occurrence(node, position, child)
        self._state[id(node)] = True

    def _expanded(self, node: yaml.Node) -> int:
        """Decodes of ``node`` reached through an alias: itself, its children, and nested aliases in full."""
        key = id(node)
        size = self._sizes.get(key)
        if size is not None:
            return size
        size = 1
        for position, child, counted in _children(node):
            inner = self._expanded(child) - (0 if counted else 1)
            size += inner + (1 if (key, position) in self._aliases else 0)
        self._sizes[key] = size
        return size


def _children(node: yaml.Node):
    """(position, child, counted) in go-yaml's decoding order: a mapping's keys then values, except the ``<<``
    merge key, whose value is decoded but not itself when it is a sequence of maps."""
    if isinstance(node, yaml.SequenceNode):
        for i, child in enumerate(node.value):
            yield i, child, True
    elif isinstance(node, yaml.MappingNode):
        for i, (key, value) in enumerate(node.value):
            if key.tag == _MERGE_TAG:
                yield 2 * i + 1, value, not isinstance(value, yaml.SequenceNode)
                continue
            yield 2 * i, key, True
            yield 2 * i + 1, value, True


def _self_referencing_anchor(raw: bytes | str) -> str:
    """The first anchor aliased inside its own node (read from the event stream; nodes keep no anchor names)."""
    open_anchors: list[str | None] = []
    for event in yaml.parse(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        if isinstance(event, yaml.AliasEvent) and event.anchor in open_anchors:
            return event.anchor
        if isinstance(event, yaml.CollectionStartEvent):
            open_anchors.append(event.anchor)
        elif isinstance(event, yaml.CollectionEndEvent):
            open_anchors.pop()
    return ""


def check(node: yaml.Node | None, raw: bytes | str) -> None:
    """Raise :class:`AliasError` where go-yaml would refuse the composed document ``node`` read from ``raw``."""
    if node is not None:
        _Decoder(raw).document(node)
