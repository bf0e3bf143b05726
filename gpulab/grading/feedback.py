"""Feedback a learner can act on, without the hidden tests: a preprocessor for ``nbgrader generate_feedback``.

nbgrader renders the autograded notebook, whose test cells were restored
from the gradebook with their hidden tests, so the feedback HTML shows the
hidden test code, and a failed test's traceback quotes it again. For every test
cell this removes the hidden test region (nbgrader's own ``ClearHiddenTests``
rule), reduces error tracebacks to their last line (the check's reason and
hint, which ``assert_passed`` puts in the AssertionError), and adds the
grader's verdict per check, with its reason and hint.
"""
from __future__ import annotations

import html

from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests

from .cells import is_graded
from .sanitize import GRADER_KEY


class ExplainGrades(ClearHiddenTests):
    def preprocess_cell(self, cell: NotebookNode, resources: dict, index: int) -> tuple[NotebookNode, dict]:
        if not is_graded(cell):
            return cell, resources
        self._remove_hidden_test_region(cell)
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                output.traceback = [f"{output.ename}: {output.evalue}"]
        checks = cell.metadata.get(GRADER_KEY, {}).get("checks")
        if checks:
            cell.outputs.append(verdict_output(checks))
        return cell, resources


def verdict_output(checks: list[dict]) -> NotebookNode:
    """A display output listing the grader's verdict on each check of a test cell."""
    lines, items = [], []
    for check in checks:
        mark, word, colour = ("&#x2714;", "PASS", "#1a7f37") if check["passed"] else ("&#x2718;", "FAIL", "#cf222e")
        hint = check.get("hint") if not check["passed"] else ""
        lines.append(f"Grader: {word} {check['check_id']}: {check['reason']}" + (f"\nHint: {hint}" if hint else ""))
        items.append(f'<li><b style="color:{colour}">{mark} {word}</b> <code>{html.escape(check["check_id"])}</code>: '
                     f'{html.escape(check["reason"])}'
                     + (f'<br><i>Hint:</i> {html.escape(hint)}' if hint else "") + "</li>")
    return NotebookNode(output_type="display_data", metadata={}, data={
        "text/plain": "\n".join(lines),
        "text/html": '<div class="gpulab-grader"><b>The grader\'s check of your cluster</b><ul>'
                     + "".join(items) + "</ul></div>"})
