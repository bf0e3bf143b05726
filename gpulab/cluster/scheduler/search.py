"""One scheduling attempt's search: filter every node, score the feasible ones, pick one.

Follows pkg/scheduler/schedule_one.go (``findNodesThatFitPod``,
``findNodesThatPassFilters``, ``prioritizeNodes``, ``selectHost``) and
framework/runtime/framework.go (``RunFilterPlugins``: the first failing Filter
plugin decides a node's status; ``RunScorePlugins``: NormalizeScore over all
feasible nodes, then the weights).

Upstream calls every plugin on every node. Here the nodes are kept in
**cells**, groups of nodes every plugin consulted so far treats alike, and a
plugin is asked once per cell (or once per taint class or resource bucket,
see ``interface``): cells start as the cache's taint classes, split into its
resource buckets when a plugin looks at resources, and split further along the
node sets a ``SETS`` plugin names. A cell holding a node with nominated pods is
that node alone, filtered node by node with the nominated pods added
(``RunFilterPluginsWithNominatedPods``).

Cells hold their nodes as masks, integers with one bit per node, so that
splitting and intersecting them costs a few machine words. Every node is
evaluated (no ``percentageOfNodesToScore`` sampling). Among the best-scoring
nodes one is taken at random, each with the same chance, as ``selectHost``'s
reservoir sampling does, from the profile's seeded generator: the k-th of the
tied nodes in the order the cache first saw them, so a cluster with the same
seed and history places pods the same way.
"""
from __future__ import annotations

from .diagnosis import Diagnosis
from .interface import NODE, RESOURCES, SETS, TAINTS, CycleState
from .podinfo import PodInfo
from .runtime import check_filter_status


class Cell:
    """Nodes of one taint class (and, once split, one resource bucket) that the plugins so far treat alike, as a
    node mask (``cache.mask_of``).

    ``sigs[key]`` records which of a plugin's node sets hold the cell (one bit per set), ``done`` that the
    cell's node passed every filter already (a node with nominated pods, filtered on its own).
    """

    __slots__ = ("cls", "bucket", "mask", "sigs", "done")

    def __init__(self, cls, bucket, mask: int, sigs=None, done=False):
        self.cls, self.bucket, self.mask = cls, bucket, mask
        self.sigs: dict = {} if sigs is None else sigs
        self.done = done

    def part(self, mask: int) -> Cell:
        return Cell(self.cls, self.bucket, mask, dict(self.sigs), self.done)

    @property
    def count(self) -> int:
        return self.mask.bit_count()

    def node(self, cache):
        """A node that stands for the cell."""
        if self.bucket is not None and self.mask == self.bucket.mask:
            return self.bucket.representative
        return cache.node_of_bit(self.mask)

    def names(self, cache) -> list[str]:
        return cache.names_in(self.mask)


class FeasibleNodes:
    """What PreScore plugins see of the feasible nodes: ``cells`` (``mask``, ``node(cache)``) and their
    ``mask``."""

    __slots__ = ("cells", "mask")

    def __init__(self, cells: list[Cell]):
        self.cells = cells
        mask = 0
        for cell in cells:
            mask |= cell.mask
        self.mask = mask


def refine(cells: list[Cell], key, masks) -> list[Cell]:
    """Split the cells so each lies inside or outside every node mask; ``sigs[key]`` gets the bits of the masks."""
    for bit_index, members in enumerate(masks):
        if not members:
            continue
        bit = 1 << bit_index
        out = []
        for cell in cells:
            inside = cell.mask & members
            if not inside:
                out.append(cell)
            elif inside == cell.mask:
                cell.sigs[key] = cell.sigs.get(key, 0) | bit
                out.append(cell)
            else:
                part = cell.part(inside)
                part.sigs[key] = part.sigs.get(key, 0) | bit
                out.append(part)
                out.append(cell.part(cell.mask ^ inside))
        cells = out
    return cells


def _split_buckets(cells: list[Cell]) -> list[Cell]:
    out = []
    for cell in cells:
        if cell.bucket is not None:
            out.append(cell)
            continue
        for bucket in cell.cls.buckets.values():
            mask = bucket.mask & cell.mask
            if mask:
                out.append(Cell(cell.cls, bucket, mask, dict(cell.sigs)))
    return out


class Search:
    """The feasible nodes of one scheduling attempt and, among them, the host."""

    def __init__(self, framework, state: CycleState, pod: PodInfo):
        self.framework = framework
        self.cache = framework.cache
        self.state = state
        self.pod = pod
        self.diagnosis = Diagnosis(self.cache)
        self.cells: list[Cell] = []

    # --- filtering ----------------------------------------------------------
    def run(self) -> None:
        """findNodesThatPassFilters: ``cells`` gets the feasible nodes, ``diagnosis`` the others."""
        cache, state, pod, diagnosis = self.cache, self.state, self.pod, self.diagnosis
        nominated = [cache.nodes[name] for name in cache.nominated if name in cache.nodes] if cache.nominated else ()
        cells: list[Cell] = []
        for cls in cache.classes.values():
            mask = cls.mask
            if not mask:
                continue
            for info in nominated:
                if info.bit & mask:
                    status = self.framework.run_filters_with_nominated(state, pod, info)
                    if status is None:
                        cells.append(Cell(cls, info.bucket, info.bit, done=True))
                    else:
                        diagnosis.add(status, info.bit)
                    mask &= ~info.bit
            if mask:
                cells.append(Cell(cls, None, mask))
        bucketed = False
        for index, plugin in enumerate(self.framework.filter_plugins):
            if not cells:
                break
            if plugin.NAME in state.skip_filter:
                continue
            scope = plugin.filter_scope
            if scope in (RESOURCES, NODE) and not bucketed:
                cells, bucketed = _split_buckets(cells), True
            if scope == SETS:
                cells = refine(cells, index, self._masks(plugin.filter_sets(state, pod)))
            cells = self._filter(plugin, scope, index, cells)
        self.cells = cells if bucketed else _split_buckets(cells)

    def _masks(self, sets) -> list[int]:
        """Plugins' node sets as masks (plugins may return either)."""
        return [s if isinstance(s, int) else self.cache.mask_of(s) for s in sets]

    def _filter(self, plugin, scope: str, index: int, cells: list[Cell]) -> list[Cell]:
        cache, state, pod, diagnosis = self.cache, self.state, self.pod, self.diagnosis
        survivors: list[Cell] = []
        memo: dict = {}
        for cell in cells:
            if cell.done:
                survivors.append(cell)
                continue
            if scope == NODE:
                passing = self._filter_each(plugin, cell)
                if passing:
                    survivors.append(cell if passing == cell.mask else cell.part(passing))
                continue
            key = cell.cls.id if scope == TAINTS else id(cell.bucket) if scope == RESOURCES else cell.sigs.get(index, 0)
            if key in memo:
                status = memo[key]
            else:
                status = memo[key] = check_filter_status(plugin.filter(state, pod, cell.node(cache)), plugin.NAME)
            if status is None:
                survivors.append(cell)
            else:
                diagnosis.add(status, cell.mask)
        return survivors

    def _filter_each(self, plugin, cell: Cell) -> int:
        """The mask of the cell's nodes that pass, node by node; the others go to the diagnosis."""
        passing = 0
        rejected: dict = {}
        for name in cell.names(self.cache):
            node = self.cache.nodes[name]
            status = check_filter_status(plugin.filter(self.state, self.pod, node), plugin.NAME)
            if status is None:
                passing |= node.bit
            else:
                rejected[status] = rejected.get(status, 0) | node.bit
        for status, mask in rejected.items():
            self.diagnosis.add(status, mask)
        return passing

    # --- scoring ----------------------------------------------------------
    def only_node(self) -> str | None:
        """The feasible node when there is exactly one (schedulePod returns it without scoring)."""
        if len(self.cells) == 1 and self.cells[0].count == 1:
            return self.cache.node_of_bit(self.cells[0].mask).name
        return None

    def select(self, rng) -> str:
        """prioritizeNodes, then selectHost: a node drawn uniformly from the cells with the best total."""
        cells, totals = self.prioritize()
        best = max(totals)
        tied = 0
        for cell, total in zip(cells, totals):
            if total == best:
                tied |= cell.mask
        return self.cache.nth_name(tied, rng.randrange(tied.bit_count()))

    def prioritize(self) -> tuple[list[Cell], list[int]]:
        """RunPreScorePlugins and RunScorePlugins: each cell's weighted sum of normalised scores, up to a
        constant. A plugin that cannot tell the cells apart (one taint class, one bucket, or one cell) would
        add the same to every total, so it is not run at all."""
        framework, cache, state, pod = self.framework, self.cache, self.state, self.pod
        cells = self.cells
        one_class = all(cell.cls is cells[0].cls for cell in cells)
        one_bucket = one_class and all(cell.bucket is cells[0].bucket for cell in cells)
        plugins = [(index, plugin, weight) for index, (plugin, weight) in enumerate(framework.score_plugins)
                   if not (plugin.score_scope == TAINTS and one_class or plugin.score_scope == RESOURCES and one_bucket)]
        framework.run_pre_score(state, pod, FeasibleNodes(cells), [plugin for _, plugin, _ in plugins])
        plugins = [entry for entry in plugins if entry[1].NAME not in state.skip_score]
        for index, plugin, _ in plugins:
            if plugin.score_scope == SETS:
                cells = refine(cells, -1 - index, self._masks(plugin.score_sets(state, pod)))
            elif plugin.score_scope == NODE:
                cells = [cell.part(cache.nodes[name].bit) for cell in cells for name in cell.names(cache)]
        self.cells = cells
        totals = [0] * len(cells)
        if len(cells) == 1:
            return cells, totals
        for index, plugin, weight in plugins:
            scope = plugin.score_scope
            if scope == TAINTS:
                keys = [cell.cls.id for cell in cells]
            elif scope == RESOURCES:
                keys = [id(cell.bucket) for cell in cells]
            elif scope == SETS:
                key_index = -1 - index
                keys = [cell.sigs.get(key_index, 0) for cell in cells]
            else:
                keys = [cell.mask for cell in cells]
            memo: dict = {}
            for key, cell in zip(keys, cells):
                if key not in memo:
                    memo[key] = plugin.score(state, pod, cell.node(cache))
            if len(memo) == 1:
                continue
            for i, score in enumerate(plugin.normalize_score(state, pod, [memo[key] for key in keys])):
                totals[i] += weight * score
        return cells, totals
