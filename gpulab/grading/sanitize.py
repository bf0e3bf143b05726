"""Put a submission's graded cells back the way the instructor wrote them, before anything runs.

nbgrader's ``OverwriteCells`` restores the source of locked cells whose
checksum changed, the cell type and the points, by ``grade_id`` from the
gradebook. It leaves four holes a learner can use, which this subclass closes
(nbgrader/preprocessors/overwritecells.py, nbgrader/utils.py ``is_grade``/``is_locked``):

* tags: nbclient skips a cell tagged ``skip-execution`` and lets one tagged
  ``raises-exception`` fail, and the checksum ignores tags, so a skipped test
  cell keeps no output and nbgrader would score it full marks. The tags are
  removed from every test and locked code cell.
* flags: the ``grade``/``solution``/``task`` flags are not restored, so a test
  cell turned into a plain cell is not scored at all, and a solution cell
  turned into a grade cell crashes ``OverwriteCells`` (``find_graded_cell``
  raises). The flags are set from the gradebook first.
* unknown ids: a cell carrying a ``grade_id`` the gradebook does not know keeps
  its other nbgrader flags and fails metadata validation, which loses the whole
  submission. Such a cell becomes an ordinary cell.
* deleted test cells: ``add_missing_cells`` re-inserts them only after a
  grade or solution cell and raises ``KeyError`` when the previous source cell
  is anything else; here a missing test cell goes back after the nearest
  preceding instructor cell that is present, with nbgrader's own notice.

The grader's own metadata key (``gpulab``) is dropped from the notebook and every
cell: only the grader writes it, after the notebook ran.
"""
from __future__ import annotations

from nbformat.notebooknode import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.preprocessors import OverwriteCells

from .cells import EXECUTION_TAGS, is_instructor_code

GRADER_KEY = "gpulab"


class RestoreGradedCells(OverwriteCells):
    """``OverwriteCells`` that also restores flags, strips execution tags and re-inserts deleted test cells."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            source_nb = gb.find_notebook(info["notebook"], info["assignment"])
            sources = [(cell.name, cell.cell_type, cell.locked, cell.source, cell.checksum)
                       for cell in source_nb.source_cells]
            points = {cell.name: cell.max_score for cell in source_nb.grade_cells}
            solutions = {cell.name for cell in source_nb.solution_cells}
            tasks = {cell.name for cell in source_nb.task_cells}
        known = {name for name, *_ in sources}
        nb.metadata.pop(GRADER_KEY, None)
        for cell in nb.cells:
            cell.metadata.pop(GRADER_KEY, None)
            self._restore_flags(cell, known, points, solutions, tasks)
        nb, resources = super().preprocess(nb, resources)   # sources, types, points, checksums (nbgrader)
        self._reinsert_missing(nb, sources, points, solutions)
        for cell in nb.cells:
            if is_instructor_code(cell) and cell.metadata.get("tags"):
                cell.metadata["tags"] = [t for t in cell.metadata["tags"] if t not in EXECUTION_TAGS]
        return nb, resources

    def _restore_flags(self, cell: NotebookNode, known: set[str], points: dict[str, float], solutions: set[str],
                       tasks: set[str]) -> None:
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            return
        grade_id = meta.get("grade_id")
        if grade_id not in known:
            self.log.warning("Cell with unknown grade_id %r: treated as an ordinary cell", grade_id)
            del cell.metadata["nbgrader"]
            return
        flags = {"grade": grade_id in points, "solution": grade_id in solutions, "task": grade_id in tasks}
        for flag, value in flags.items():
            if bool(meta.get(flag, False)) != value:
                self.report_change(grade_id, flag, value, meta.get(flag))
                meta[flag] = value
        if grade_id in points:
            meta["points"] = points[grade_id]
        else:
            meta.pop("points", None)

    def _reinsert_missing(self, nb: NotebookNode, sources: list[tuple], points: dict[str, float],
                          solutions: set[str]) -> None:
        present = {cell.metadata["nbgrader"]["grade_id"]: cell for cell in nb.cells if "nbgrader" in cell.metadata}
        for position, (name, *_rest) in enumerate(sources):
            if name in present or name not in points:
                continue
            self.log.warning("Missing grade cell %s encountered, adding to notebook", name)
            source_cell = _SourceCell(*sources[position])
            cell = self.missing_cell_transform(source_cell, points[name], is_solution=name in solutions)
            before = next((present[prev] for prev, *_ in reversed(sources[:position]) if prev in present), None)
            index = 0 if before is None else next(i for i, c in enumerate(nb.cells) if c is before) + 1
            nb.cells.insert(index, cell)
            present[name] = cell


class _SourceCell:
    """The fields of nbgrader's ``SourceCell`` that ``missing_cell_transform`` reads, outside a DB session."""

    def __init__(self, name: str, cell_type: str, locked: bool, source: str, checksum: str):
        self.name, self.cell_type, self.locked, self.source, self.checksum = name, cell_type, locked, source, checksum
