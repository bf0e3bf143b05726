"""Why a pod fits no node (framework.Diagnosis): each rejection covers a group of nodes (a node mask)."""
from __future__ import annotations

from .status import Status, fit_error_message


class Diagnosis:
    def __init__(self, cache):
        self.cache = cache
        self.num_nodes = len(cache.nodes)
        self.rejections: list[tuple[Status, int]] = []
        self.pre_filter_msg = ""
        self.post_filter_msg = ""
        self._groups: list[tuple[Status, frozenset]] | None = None

    def add(self, status: Status, mask: int) -> None:
        """Nodes of ``mask`` got ``status``."""
        if mask:
            self.rejections.append((status, mask))
            self._groups = None

    def groups(self) -> list[tuple[Status, frozenset]]:
        """(status, node names) per rejection."""
        if self._groups is None:
            self._groups = [(status, frozenset(self.cache.names_in(mask))) for status, mask in self.rejections]
        return self._groups

    def freeze(self) -> None:
        """Resolve the node names now: PostFilter plugins (preemption) may change the cache."""
        self.groups()

    def status_of(self, node: str) -> Status | None:
        return next((status for status, names in self.groups() if node in names), None)

    def unschedulable_plugins(self) -> set[str]:
        return {status.plugin for status, _ in self.rejections if status.plugin}

    def reason_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for status, mask in self.rejections:
            n = mask.bit_count()
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + n
        return counts

    def nodes_with_code(self, code: int) -> list[str]:
        out: list[str] = []
        for status, names in self.groups():
            if status.code == code:
                out.extend(names)
        return sorted(out)

    def message(self) -> str:
        return fit_error_message(self.num_nodes, self.reason_counts(), self.pre_filter_msg, self.post_filter_msg)
