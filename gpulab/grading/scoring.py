"""Scores into nbgrader's gradebook: nbgrader's ``SaveAutoGrades`` with two rules changed.

nbgrader scores a code test cell from its outputs (nbgrader/utils.py
``determine_grade``): zero for an error *or any stderr stream*, otherwise
full marks, or partial credit read from an ``execute_result``. Here:

* a test cell the grader re-checked (its verdict is in
  ``resources["gpulab"]["verdicts"]``, which only :mod:`.execute` writes, never
  the submitted notebook) scores full marks only when the kernel's cell shows
  no error *and* every one of the grader's checks passed; an ``execute_result``
  the kernel printed counts for nothing (a learner's patched check could print
  any number);
* stderr output alone never costs points: a library warning printed while a
  check ran is not a failed test. Errors still are.

Everything else (which rows, ``needs_manual_grade``, comments, commits) is
nbgrader's own code path.
"""
from __future__ import annotations

import copy

from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import SaveAutoGrades


def verified_score(cell: NotebookNode, verdicts: list[dict] | None) -> float | None:
    """The automatic score of a grade cell: the grader's rule where it re-checked, else nbgrader's minus stderr."""
    max_points = float(cell.metadata["nbgrader"]["points"])
    if utils.is_solution(cell) or cell.cell_type != "code":
        return utils.determine_grade(cell)[0]
    errored = any(o.output_type == "error" for o in cell.outputs)
    if verdicts is not None:
        return max_points if not errored and all(v["passed"] for v in verdicts) else 0.0
    quiet = copy.deepcopy(cell)
    quiet.outputs = [o for o in quiet.outputs if not (o.output_type == "stream" and o.get("name") == "stderr")]
    try:
        return utils.determine_grade(quiet)[0]
    except ValueError:       # partial credit above the cell's points: not a grade nbgrader can store
        return 0.0


class SaveVerifiedGrades(SaveAutoGrades):
    def _add_score(self, cell: NotebookNode, resources: dict) -> None:
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        grade = self.gradebook.find_grade(grade_id, self.notebook_id, self.assignment_id, self.student_id)
        verdicts = resources.get("gpulab", {}).get("verdicts", {}).get(grade_id)
        grade.auto_score = verified_score(cell, verdicts)
        grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
        self.gradebook.db.commit()
